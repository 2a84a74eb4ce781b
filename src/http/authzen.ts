import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync, FastifyReply, onRequestHookHandler } from 'fastify';
import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import {
  AUTHZEN_ENDPOINTS,
  AUTHZEN_METADATA_PATH,
  authzenMetadataSchema,
  authzenDecisionSchema,
  authzenEvaluationSchema,
  authzenEvaluationsResponseSchema,
  authzenEvaluationsSchema,
  authzenQuerySchema,
  authzenActionSearchSchema,
  authzenResourceSearchSchema,
  authzenSearchResponseSchema,
  authzenSubjectSearchSchema,
} from '../schemas/authzen.js';
import { fixedAnswerJson, type EvaluationsAnswer } from '../services/authzen.js';
import { ClientError } from '../errors.js';
import { isValidEvaluation } from '../requests/authzen-shape.js';
import { bodyHandCheckedFirst } from './schema-compilers.js';
import type { AppContext, RoutesOptions } from './context.js';
import { ERROR_RESPONSES } from './responses.js';
import { MIN_REVISION_DOC } from './min-revision.js';
import { answerErrors } from './errors.js';
import { onceMayExplain } from './admin-auth.js';
import { answerDecided, NAMES_ITS_REVISION } from './revision.js';
import { echoingRequestId, echoRequestId, originOf } from './request-ids.js';

const tags = ['authzen'];

const onlyEchoingRequestId: onRequestHookHandler = (request, reply, done) => {
  echoRequestId(request, reply);
  done();
};

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * `Authorization: Bearer <token>` required, compared in constant time (both sides hashed to one
 * length first, so neither the length nor a prefix of the token shows in the time taken); 401 otherwise.
 */
function bearerToken(token: string): onRequestHookHandler {
  const expected = digest(token);
  return (request, reply, done) => {
    const sent = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(request.headers.authorization ?? '')?.[1];
    if (sent !== undefined && timingSafeEqual(digest(sent), expected)) return done();
    reply.header('www-authenticate', 'Bearer');
    done(new ClientError(401, 'Send the header Authorization: Bearer <token>, with the token this server was given (AUTHZEN_TOKEN)'));
  };
}

/**
 * The OpenID AuthZEN Authorization API 1.0 (docs/authzen.md): its decisions are checks, decided by
 * the check service. Its errors are 400 for any request the specification's model refuses (never
 * 422), and unknown fields are ignored, as that specification requires.
 */
export const authzenRoutes: FastifyPluginAsync<RoutesOptions> = async (fastify, { context }) => {
  const { config, revision } = context;
  answerErrors(fastify, revision, 'bad-request');

  // The document names the address it was fetched from: a cache must keep one per Host, and behind a
  // trusted proxy one per forwarded host and scheme too.
  const namedBy = config.trustProxy === false ? 'Host' : 'Host, X-Forwarded-Host, X-Forwarded-Proto';
  fastify.get(AUTHZEN_METADATA_PATH, {
    onRequest: onlyEchoingRequestId,
    schema: {
      tags,
      summary: 'The AuthZEN metadata of this decision point',
      description: 'Its address is the one this document was fetched from (behind a trusted proxy, the one the proxy was asked: see --trust-proxy).',
      response: { 200: authzenMetadataSchema },
    },
    handler: (request, reply) => {
      reply.header('vary', namedBy);
      const base = `${request.protocol}://${request.host}`;
      return {
        policy_decision_point: base,
        ...Object.fromEntries(Object.entries(AUTHZEN_ENDPOINTS).map(([name, path]) => [name, base + path])),
      };
    },
  });

  await fastify.register(async (decisions) => {
    if (config.authzenToken === '') decisions.addHook('onRequest', echoingRequestId(context.minRevisionCheck));
    else {
      decisions.addHook('onRequest', echoingRequestId(bearerToken(config.authzenToken)));
      decisions.addHook('onRequest', context.minRevisionCheck);
    }
    await decisions.register(evaluationRoutes, { context });
    await decisions.register(searchRoutes, { context });
  });
};

/** Bearer authentication in the OpenAPI document, when a token is required. */
const securityOf = (config: AppContext['config']) => (config.authzenToken === '' ? [] : [{ authzenBearer: [] }]);

/** The access evaluation endpoints: one evaluation, and many in one call. */
const evaluationRoutes: FastifyPluginAsync<RoutesOptions> = async (fastify, { context }) => {
  const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
  const { authzen, config, revision } = context;
  const security = securityOf(config);
  const description = `Ask with \`?explain=true\` for Verdict's reason and explanation in \`context\`. ${MIN_REVISION_DOC}`;
  const sendDecided = <T extends EvaluationsAnswer>(reply: FastifyReply, answer: T | Promise<T>) => answerDecided(reply, revision, answer, fixedAnswerJson);

  app.post(AUTHZEN_ENDPOINTS.access_evaluation_endpoint, {
    config: NAMES_ITS_REVISION,
    validatorCompiler: bodyHandCheckedFirst(isValidEvaluation),
    schema: {
      tags,
      security,
      summary: 'AuthZEN: decide one evaluation',
      description: `The subject and the resource are the registered entities \`<type>:<id>\`, with their \`properties\` merged in as supplied attributes. ${description}`,
      querystring: authzenQuerySchema,
      body: authzenEvaluationSchema,
      response: { 200: authzenDecisionSchema, ...ERROR_RESPONSES },
    },
    handler: (request, reply) =>
      request.query.explain
        ? onceMayExplain(context.explainGuard, request, reply, () => sendDecided(reply, authzen.evaluation(request.body, true, originOf(request))))
        : sendDecided(reply, authzen.evaluation(request.body, false, originOf(request))),
  });

  app.post(AUTHZEN_ENDPOINTS.access_evaluations_endpoint, {
    config: NAMES_ITS_REVISION,
    schema: {
      tags,
      security,
      summary: 'AuthZEN: decide many evaluations in one call',
      description:
        `Top-level \`subject\`, \`action\`, \`resource\` and \`context\` are the defaults of every item; answers in request order, up to the first decisive one under \`deny_on_first_deny\` or \`permit_on_first_permit\`. ` +
        `At most ${config.bulkCheckMaxRequests} items. An item that cannot be decided denies with \`context.error\`. ${description}`,
      querystring: authzenQuerySchema,
      body: authzenEvaluationsSchema,
      response: { 200: authzenEvaluationsResponseSchema, ...ERROR_RESPONSES },
    },
    handler: (request, reply) =>
      request.query.explain
        ? onceMayExplain(context.explainGuard, request, reply, () => sendDecided(reply, authzen.evaluations(request.body, true, originOf(request))))
        : sendDecided(reply, authzen.evaluations(request.body, false, originOf(request))),
  });
};

/** The search endpoints: subjects, resources and actions. */
const searchRoutes: FastifyPluginAsync<RoutesOptions> = async (fastify, { context }) => {
  const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
  const { authzenSearch: search, config } = context;
  const security = securityOf(config);
  const paging = `Sorted, in pages of \`page.limit\` (at most and by default ${config.maxPageSize}); \`page.next_token\` is '' on the last page. ${MIN_REVISION_DOC}`;
  const bounded = `A request decides at most ${config.searchMaxCandidates} registered entities (--search-max-candidates): past them its page ends early, with a \`next_token\` to go on from. ${paging}`;
  app.post(AUTHZEN_ENDPOINTS.search_subject_endpoint, {
    schema: {
      tags,
      security,
      summary: 'AuthZEN: the subjects of a type that may perform the action on the resource',
      description: `Every registered entity whose uri starts with \`<subject.type>:\`, decided as /check would (with \`subject.properties\` supplied to each). ${bounded}`,
      body: authzenSubjectSearchSchema,
      response: { 200: authzenSearchResponseSchema, ...ERROR_RESPONSES },
    },
    handler: (request) => search.subjects(request.body),
  });
  app.post(AUTHZEN_ENDPOINTS.search_resource_endpoint, {
    schema: {
      tags,
      security,
      summary: 'AuthZEN: the resources of a type the subject may perform the action on',
      description:
        `Every registered entity whose uri starts with \`<resource.type>:\`, decided as /check would (with \`resource.properties\` supplied to each): by the subject's plan when it is exact, else one check each. ${bounded}`,
      body: authzenResourceSearchSchema,
      response: { 200: authzenSearchResponseSchema, ...ERROR_RESPONSES },
    },
    handler: (request) => search.resources(request.body),
  });
  app.post(AUTHZEN_ENDPOINTS.search_action_endpoint, {
    schema: {
      tags,
      security,
      summary: 'AuthZEN: the actions the subject may perform on the resource',
      description: `Every action the policies name, decided as /check would. ${paging}`,
      body: authzenActionSearchSchema,
      response: { 200: authzenSearchResponseSchema, ...ERROR_RESPONSES },
    },
    handler: (request) => search.actions(request.body),
  });
};
