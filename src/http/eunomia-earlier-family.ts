import type { FastifyPluginAsync } from 'fastify';
import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import { checkRequestSchema } from '../schemas/check.js';
import { policySchema, sentPolicy, storedPolicySchema } from '../schemas/policy.js';
import { entityCreateSchema, entitySchema, entityUpdateSchema, overrideQuerySchema } from '../schemas/entity.js';
import { ClientError, RequestValidationError } from '../errors.js';
import { API_KEY_SECURITY } from './admin-auth.js';
import { echoingRequestId, originOf } from './request-ids.js';
import type { RoutesOptions } from './context.js';
import { MIN_REVISION_DOC } from './min-revision.js';
import { ERROR_RESPONSES } from './responses.js';
import { warningsTo, writerOf } from './writer.js';

const tags = ['earlier endpoints'];

const deleteEntityQuery = { type: 'object', properties: { uri: { type: 'string', minLength: 1 } } } as const;
const deleteEntityBody = { type: ['object', 'null'], properties: { uri: { type: 'string', minLength: 1 } }, additionalProperties: false } as const;
const deletedEntitySchema = {
  type: 'object',
  properties: { uri: { type: 'string' }, message: { type: 'string' } },
  required: ['uri', 'message'],
  additionalProperties: false,
} as const;

/**
 * The earlier endpoint family, kept for clients written against it. `/check-access` is public like
 * `/check`; the writes take the admin key exactly like `/admin`, or they would be a way around it.
 */
export const eunomiaEarlierRoutes: FastifyPluginAsync<RoutesOptions> = async (fastify, { context }) => {
  const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
  const { checks, policies, registry, config } = context;
  const onRequest = context.adminGuard;
  const security = API_KEY_SECURITY;

  app.post('/check-access', {
    onRequest: echoingRequestId(context.minRevisionCheck),
    schema: {
      tags,
      summary: 'Decide one check; answers a bare true or false',
      description: MIN_REVISION_DOC,
      body: checkRequestSchema,
      response: { 200: { type: 'boolean' }, ...ERROR_RESPONSES },
    },
    handler: async (request) => (await checks.check(request.body, false, originOf(request))).allowed,
  });

  app.post('/create-policy', {
    onRequest,
    schema: { tags, security, summary: 'As POST /admin/policies', body: policySchema, response: { 200: storedPolicySchema, ...ERROR_RESPONSES } },
    handler: (request, reply) => policies.create(sentPolicy(request.body), writerOf(request), warningsTo(reply)),
  });

  if (!config.registryEnabled) return;

  app.post('/register-entity', {
    onRequest,
    schema: { tags, security, summary: 'As POST /admin/fetchers/registry/entities', body: entityCreateSchema, response: { 200: entitySchema, ...ERROR_RESPONSES } },
    handler: (request, reply) => registry.register(request.body, writerOf(request), warningsTo(reply)),
  });

  app.post('/update-entity', {
    onRequest,
    schema: {
      tags,
      security,
      summary: 'As PUT /admin/fetchers/registry/entities/{uri}',
      querystring: overrideQuerySchema,
      body: entityUpdateSchema,
      response: { 200: entitySchema, ...ERROR_RESPONSES },
    },
    handler: (request, reply) => registry.update(request.body.uri, { ...request.body, override: request.query.override }, writerOf(request), warningsTo(reply)),
  });

  app.post('/delete-entity', {
    onRequest,
    schema: {
      tags,
      security,
      summary: 'Delete an entity named by `uri` in the query string or the JSON body',
      querystring: deleteEntityQuery,
      body: deleteEntityBody,
      response: { 200: deletedEntitySchema, ...ERROR_RESPONSES },
    },
    handler: async (request) => {
      const fromQuery = request.query.uri;
      const fromBody = request.body?.uri;
      if (fromQuery !== undefined && fromBody !== undefined && fromQuery !== fromBody) {
        throw new ClientError(400, 'URI mismatch');
      }
      const uri = fromQuery ?? fromBody;
      if (uri === undefined) {
        throw new RequestValidationError([{ loc: ['query', 'uri'], msg: 'Field required (in the query string or the body)', type: 'missing' }]);
      }
      await registry.delete(uri, writerOf(request));
      return { uri, message: 'Entity deleted successfully' };
    },
  });
};
