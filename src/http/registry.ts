import type { FastifyPluginAsync } from 'fastify';
import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import {
  entityCreateListSchema,
  entityCreateSchema,
  entityListSchema,
  entityPageQuerySchema,
  entitySchema,
  entityUpdateSchema,
  entityUriParamsSchema,
  overrideQuerySchema,
} from '../schemas/entity.js';
import { ClientError } from '../errors.js';
import { API_KEY_SECURITY } from './admin-auth.js';
import type { RoutesOptions } from './context.js';
import { ERROR_RESPONSES } from './responses.js';
import { warningsTo, writerOf } from './writer.js';

const tags = ['registry'];
const security = API_KEY_SECURITY;
const prefix = '/admin/fetchers/registry/entities';

/** The entity registry; the caller registers it behind the admin key check, and only when enabled. */
export const registryRoutes: FastifyPluginAsync<RoutesOptions> = async (fastify, { context }) => {
  const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
  const { registry } = context;
  const maxEntities = context.config.bulkRegisterMaxEntities;

  app.get(prefix, {
    schema: {
      tags,
      security,
      summary: 'List entities in registration order',
      querystring: entityPageQuerySchema(context.config.maxPageSize),
      response: { 200: entityListSchema, ...ERROR_RESPONSES },
    },
    handler: (request) => registry.list(request.query.offset, request.query.limit),
  });

  app.get(`${prefix}/$count`, {
    schema: { tags, security, summary: 'Number of entities', response: { 200: { type: 'integer' }, ...ERROR_RESPONSES } },
    handler: () => registry.count(),
  });

  app.post(prefix, {
    schema: {
      tags,
      security,
      summary: 'Register an entity',
      description: 'The uri is generated (a UUID) when absent; 409 when it is taken.',
      body: entityCreateSchema,
      response: { 200: entitySchema, ...ERROR_RESPONSES },
    },
    handler: (request, reply) => registry.register(request.body, writerOf(request), warningsTo(reply)),
  });

  // Only POST is routed here, and no entity route takes POST: an entity whose uri is `$bulk` is
  // still read, updated and deleted at `${prefix}/%24bulk`.
  app.post(`${prefix}/$bulk`, {
    schema: {
      tags,
      security,
      summary: 'Register many entities, all or none',
      description: `A list of entities as \`POST ${prefix}\` takes (at most ${maxEntities} per call); the registered entities come back in the same order. One transaction: when any item is refused (422 naming it, 409 for a uri taken or given twice), nothing is registered.`,
      body: entityCreateListSchema,
      response: { 200: entityListSchema, ...ERROR_RESPONSES },
    },
    handler: (request, reply) => {
      if (request.body.length === 0) throw new ClientError(400, 'Empty entity list');
      if (request.body.length > maxEntities) throw new ClientError(400, `Too many entities. Maximum allowed: ${maxEntities}`);
      return registry.registerMany(request.body, writerOf(request), warningsTo(reply));
    },
  });

  app.get(`${prefix}/:uri`, {
    schema: { tags, security, summary: 'One entity', params: entityUriParamsSchema, response: { 200: entitySchema, ...ERROR_RESPONSES } },
    handler: (request) => registry.get(request.params.uri),
  });

  app.put(`${prefix}/:uri`, {
    schema: {
      tags,
      security,
      summary: "Update an entity's attributes",
      description: "The body's uri must equal the path's.",
      params: entityUriParamsSchema,
      querystring: overrideQuerySchema,
      body: entityUpdateSchema,
      response: { 200: entitySchema, ...ERROR_RESPONSES },
    },
    handler: (request, reply) => {
      if (request.body.uri !== request.params.uri) throw new ClientError(400, 'URI mismatch');
      return registry.update(request.params.uri, { ...request.body, override: request.query.override }, writerOf(request), warningsTo(reply));
    },
  });

  app.delete(`${prefix}/:uri`, {
    schema: { tags, security, summary: 'Delete an entity', params: entityUriParamsSchema, response: { 200: { type: 'boolean' }, ...ERROR_RESPONSES } },
    handler: (request) => registry.delete(request.params.uri, writerOf(request)),
  });
};
