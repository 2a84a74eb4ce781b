import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { EXT_AUTHZ_PREFIX } from '../ext-authz/mapping.js';
import type { ExtAuthzOutcome, ExtAuthzService } from '../services/ext-authz.js';
import type { RoutesOptions } from './context.js';
import { INVALID_TOKEN_CHALLENGE } from '../errors.js';
import { originOf } from './request-ids.js';

/** The largest body Envoy may forward (`with_request_body`); it is never read, only let through. */
const FORWARDED_BODY_LIMIT = 1024 * 1024;

export interface ExtAuthzOptions extends RoutesOptions {
  extAuthz: ExtAuthzService;
}

/**
 * Envoy's HTTP external authorization service (the ext_authz filter's `http_service`, Istio's
 * `envoyExtAuthzHttp`): Envoy sends the original method, `/ext-authz` and the original path, and the
 * headers it is told to forward; ExtAuthzService decides. 200 lets the request through; 403 (denied,
 * or no route maps it) and 401 (a token refused) stop it, and Envoy gives the client that status and body.
 */
export const extAuthzRoutes: FastifyPluginAsync<ExtAuthzOptions> = async (app, { extAuthz }) => {
  const { mapping } = extAuthz;
  // Whatever body Envoy forwards, of whatever type, is let through unread.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: FORWARDED_BODY_LIMIT }, (_request, _body, done) => done(null, undefined));

  // Why a token was refused names key sets and issuers: the client is told only when the mapping says so, the log always.
  const deny = (reply: FastifyReply, outcome: ExtAuthzOutcome & { allowed: false }) => {
    reply.code(outcome.status).type('text/plain; charset=utf-8');
    if (outcome.status === 401) {
      reply.header('www-authenticate', INVALID_TOKEN_CHALLENGE);
      reply.log.info({ reason: outcome.reason }, 'ext-authz: bearer token refused');
    }
    return extAuthz.deniedBody(outcome);
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
      const outcome = await extAuthz.authorize(forwarded, originOf(request));
      if (!outcome.allowed) return deny(reply, outcome);
      // Always set, empty for no principal: Envoy then replaces whatever a client sent under that name.
      if (mapping.upstreamPrincipalHeader !== undefined) reply.header(mapping.upstreamPrincipalHeader, outcome.principalUri ?? '');
      reply.code(200);
      return '';
    },
  });
};
