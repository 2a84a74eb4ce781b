import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { EXT_AUTHZ_PREFIX, type ExtAuthzMapping } from '../ext-authz/mapping.js';
import { extAuthzStatus } from '../decide/undecidable-answers.js';
import type { CheckInput } from '../requests/check-request.js';
import type { RoutesOptions } from './context.js';
import { INVALID_TOKEN_CHALLENGE } from '../errors.js';
import { originOf } from './request-ids.js';

/** The largest body Envoy may forward (`with_request_body`); it is never read, only let through. */
const FORWARDED_BODY_LIMIT = 1024 * 1024;
const BEARER = /^Bearer +([A-Za-z0-9._~+/=-]+) *$/i;
/** What a client whose token was refused is told, unless the mapping gives it the reason. */
const TOKEN_REFUSED = 'The bearer token was not accepted';

export interface ExtAuthzOptions extends RoutesOptions {
  mapping: ExtAuthzMapping;
  /** Whether bearer tokens are verified (`--tokens`): otherwise the Authorization header is the app's, and not read. */
  readsTokens: boolean;
}

const authorizationOf = (header: string | string[] | undefined) => (Array.isArray(header) ? header[0] : header);

/**
 * Envoy's HTTP external authorization service (the ext_authz filter's `http_service`, Istio's
 * `envoyExtAuthzHttp`): Envoy sends the original method, `/ext-authz` and the original path, and the
 * headers it is told to forward. The mapping makes a check of it: the principal from the bearer
 * token's verified claims (and forwarded headers it names), the resource and the action from the
 * route, the context from headers. 200 lets the request through; 403 (denied, or no route maps it)
 * and 401 (a token refused) stop it, and Envoy gives the client that status and body.
 */
export const extAuthzRoutes: FastifyPluginAsync<ExtAuthzOptions> = async (app, { context, mapping, readsTokens }) => {
  // Whatever body Envoy forwards, of whatever type, is let through unread.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: FORWARDED_BODY_LIMIT }, (_request, _body, done) => done(null, undefined));

  // Why a token was refused names key sets and issuers: the client is told only when the mapping says so, the log always.
  const deny = (reply: FastifyReply, status: 401 | 403, reason: string) => {
    reply.code(status).type('text/plain; charset=utf-8');
    if (status === 401) {
      reply.header('www-authenticate', INVALID_TOKEN_CHALLENGE);
      reply.log.info({ reason }, 'ext-authz: bearer token refused');
    }
    if (mapping.denyReasonToClient) return reason;
    return status === 401 ? TOKEN_REFUSED : 'Forbidden';
  };

  app.all(`${EXT_AUTHZ_PREFIX}/*`, {
    schema: {
      tags: ['mesh'],
      summary: "Envoy's HTTP external authorization: may this HTTP request go through?",
      description:
        'Any method. The path after `/ext-authz` is the original request path; the headers are those Envoy forwards. ' +
        '200: allowed (with the principal uri header when the mapping names one). 403: denied, or no route of the mapping matches. 401: the bearer token was refused.',
    },
    handler: async (request, reply) => {
      const forwarded = { method: request.method, path: request.url.slice(EXT_AUTHZ_PREFIX.length), headers: request.headers };
      const mapped = mapping.map(forwarded);
      if (mapped.kind === 'unmapped') return deny(reply, 403, mapped.why);
      const token = readsTokens ? BEARER.exec(authorizationOf(request.headers.authorization) ?? '')?.[1] : undefined;
      // The check this request is, as the mapping reads it: the principal's credential and its key set hint go to the identity port with the rest.
      const input: CheckInput = {
        principal: {
          uri: undefined,
          attributes: mapping.principalAttributes(request.headers),
          ...(token !== undefined && { credential: { token, from: 'authorization-header', ...(mapped.keySet !== undefined && { keySet: mapped.keySet }) } }),
          uriOf: mapping.principalUriOf,
        },
        resource: mapped.resource,
        action: mapped.action,
        context: mapped.context,
      };
      let decided: { decision: { allowed: boolean; reason: string }; principalUri: string | undefined };
      try {
        decided = await context.checks.decideNamingPrincipal(input, originOf(request));
      } catch (error) {
        return deny(reply, extAuthzStatus(error), (error as Error).message);
      }
      const { decision: { allowed, reason }, principalUri } = decided;
      if (!allowed) return deny(reply, 403, reason);
      // Always set, empty for no principal: Envoy then replaces whatever a client sent under that name.
      if (mapping.upstreamPrincipalHeader !== undefined) reply.header(mapping.upstreamPrincipalHeader, principalUri ?? '');
      reply.code(200);
      return '';
    },
  });
};
