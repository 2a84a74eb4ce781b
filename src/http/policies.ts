import type { FastifyPluginAsync } from 'fastify';
import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import { policyListSchema, policySchema, storedPolicySchema } from '../schemas/policy.js';
import { nestedCheckRequestSchema } from '../schemas/check.js';
import { validationIssueSchema } from '../schemas/errors.js';
import { readCheckRequest } from '../requests/check-request.js';
import { RequestValidationError } from '../errors.js';
import { API_KEY_SECURITY } from './admin-auth.js';
import type { RoutesOptions } from './context.js';
import { ERROR_RESPONSES } from './responses.js';
import { warningsTo, writerOf } from './writer.js';
import { auditPageQuerySchema, auditPageSchema, auditRecordSchema } from '../schemas/audit.js';

const nameParams = {
  type: 'object',
  properties: { name: { type: 'string', description: 'The policy name (as stored, slugified).' } },
  required: ['name'],
} as const;

const versionParams = {
  type: 'object',
  properties: { ...nameParams.properties, version: { type: 'integer', minimum: 1, description: 'A version from the history.' } },
  required: ['name', 'version'],
} as const;

const restoreQuery = {
  type: 'object',
  properties: { version: { type: 'integer', minimum: 1, description: 'The version to make current again.' } },
  required: ['version'],
} as const;

const simplePolicyQuery = {
  type: 'object',
  properties: { name: { type: 'string', minLength: 1, description: 'Policy name; slugified, also names the rule.' } },
  required: ['name'],
} as const;

const validationReportSchema = {
  type: 'object',
  properties: {
    valid: { type: 'boolean', const: true },
    warnings: {
      type: 'array',
      items: validationIssueSchema,
      description:
        '`type`: never_matches, shadowed, unknown_action, duplicate_condition or escaped_by_omission; `incomplete`, last, when the report stopped early (too long, or too much work).',
    },
  },
  required: ['valid', 'warnings'],
  additionalProperties: false,
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
    handler: (request, reply) => policies.create(request.body, writerOf(request), warningsTo(reply)),
  });

  app.post('/admin/policies/validate', {
    schema: {
      tags,
      security,
      summary: 'Check a policy, or a list of policies, without applying it',
      description:
        'Answers 422 with what `POST /admin/policies` would refuse, else 200 with warnings about what is valid but probably not meant: ' +
        'a rule that can never match, a rule shadowed by an earlier rule of its policy, an action that looks like a typo of one another policy names, ' +
        'a duplicate condition, a deny rule that a request escapes by leaving out an attribute it tests (with the rule that closes the gap). ' +
        'Each policy is taken with the stored ones, in place of the stored policy of its name.',
      body: { anyOf: [policySchema, { type: 'array', items: policySchema }] },
      response: { 200: validationReportSchema, ...ERROR_RESPONSES },
    },
    // It changes nothing: a read key (a CI job's, say) may validate.
    config: { readsOnly: true },
    // The body is validated per policy by the service, so that issues are located as a write's are.
    validatorCompiler: () => () => true,
    handler: (request) => policies.validate(request.body),
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
    handler: (request, reply) => {
      const check = readCheckRequest(request.body, ['body']);
      if (Array.isArray(check)) throw new RequestValidationError(check);
      return policies.createSimple(request.query.name, check, writerOf(request), warningsTo(reply));
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
    handler: (request, reply) => policies.replace(request.params.name, request.body, writerOf(request), warningsTo(reply)),
  });

  app.delete('/admin/policies/:name', {
    schema: { tags, security, summary: 'Delete a policy', params: nameParams, response: { 200: { type: 'boolean' }, ...ERROR_RESPONSES } },
    handler: (request) => policies.delete(request.params.name, writerOf(request)),
  });

  app.get('/admin/policies/:name/history', {
    schema: {
      tags,
      security,
      summary: "A policy's versions, newest first",
      description:
        'The audit records of the writes that made each version (`version`, `operation`, `actor`, `time`, the policy `before` and `after`; a deletion has `after` null). The history reaches back as far as the audit trail is kept.',
      params: nameParams,
      querystring: auditPageQuerySchema(context.config.maxPageSize),
      response: { 200: auditPageSchema, ...ERROR_RESPONSES },
    },
    handler: (request) => policies.history(request.params.name, request.query),
  });

  app.get('/admin/policies/:name/history/:version', {
    schema: {
      tags,
      security,
      summary: 'One version of a policy',
      description: 'The audit record of the write that made it; the policy is its `after` (null: the version is a deletion).',
      params: versionParams,
      response: { 200: auditRecordSchema, ...ERROR_RESPONSES },
    },
    handler: (request) => policies.version(request.params.name, request.params.version),
  });

  app.post('/admin/policies/:name/restore', {
    schema: {
      tags,
      security,
      summary: 'Make an earlier version of a policy current again',
      description:
        'Recorded as a write of its own (`policy.restore`). A deleted policy comes back, last in creation order; an existing one keeps its place. 400 when the version is a deletion.',
      params: nameParams,
      querystring: restoreQuery,
      response: { 200: storedPolicySchema, ...ERROR_RESPONSES },
    },
    handler: (request, reply) => policies.restore(request.params.name, request.query.version, writerOf(request), warningsTo(reply)),
  });
};
