import type { FastifyPluginAsync } from 'fastify';
import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import { policyListSchema, policySchema, storedPolicySchema } from '../schemas/policy.js';
import { nestedCheckRequestSchema } from '../schemas/check.js';
import { readCheckRequest } from '../registry/check-request.js';
import { RequestValidationError } from '../errors.js';
import { API_KEY_SECURITY } from './admin-auth.js';
import type { RoutesOptions } from './context.js';
import { ERROR_RESPONSES } from './responses.js';

const nameParams = {
  type: 'object',
  properties: { name: { type: 'string', description: 'The policy name (as stored, slugified).' } },
  required: ['name'],
} as const;

const simplePolicyQuery = {
  type: 'object',
  properties: { name: { type: 'string', minLength: 1, description: 'Policy name; slugified, also names the rule.' } },
  required: ['name'],
} as const;

const tags = ['policies'];
const security = API_KEY_SECURITY;

/** Policy administration under `/admin/policies`; the caller registers it behind the admin key check. */
export const policyRoutes: FastifyPluginAsync<RoutesOptions> = async (fastify, { context }) => {
  const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
  const { policies } = context;

  app.get('/admin/policies', {
    schema: { tags, security, summary: 'All policies, in creation order', response: { 200: policyListSchema, ...ERROR_RESPONSES } },
    handler: () => policies.list(),
  });

  app.post('/admin/policies', {
    schema: {
      tags,
      security,
      summary: 'Create a policy',
      description: 'Policy and rule names are slugified. 409 when the name is taken.',
      body: policySchema,
      response: { 200: storedPolicySchema, ...ERROR_RESPONSES },
    },
    handler: (request) => policies.create(request.body),
  });

  app.post('/admin/policies/simple', {
    schema: {
      tags,
      security,
      summary: 'Create a one-rule allow policy from a check request',
      description:
        'Each principal and resource attribute becomes an `==` condition; a `uri` becomes a `uri ==` condition. The rule allows the given action; the default effect is deny.',
      querystring: simplePolicyQuery,
      body: nestedCheckRequestSchema,
      response: { 200: storedPolicySchema, ...ERROR_RESPONSES },
    },
    handler: (request) => {
      const check = readCheckRequest(request.body, ['body']);
      if (Array.isArray(check)) throw new RequestValidationError(check);
      return policies.createSimple(request.query.name, check);
    },
  });

  app.get('/admin/policies/:name', {
    schema: { tags, security, summary: 'One policy', params: nameParams, response: { 200: storedPolicySchema, ...ERROR_RESPONSES } },
    handler: (request) => policies.get(request.params.name),
  });

  app.put('/admin/policies/:name', {
    schema: {
      tags,
      security,
      summary: 'Replace a policy',
      description: "The body's name, once slugified, must equal the path's. The policy keeps its place in creation order.",
      params: nameParams,
      body: policySchema,
      response: { 200: storedPolicySchema, ...ERROR_RESPONSES },
    },
    handler: (request) => policies.replace(request.params.name, request.body),
  });

  app.delete('/admin/policies/:name', {
    schema: { tags, security, summary: 'Delete a policy', params: nameParams, response: { 200: { type: 'boolean' }, ...ERROR_RESPONSES } },
    handler: (request) => policies.delete(request.params.name),
  });
};
