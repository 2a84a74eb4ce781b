import type { FastifyPluginAsync } from 'fastify';
import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import {
  policiesToValidateSchema,
  policyListSchema,
  policyNameParamsSchema,
  policySchema,
  policyVersionParamsSchema,
  restoreQuerySchema,
  sentPolicy,
  simplePolicyQuerySchema,
  storedPolicySchema,
  validationReportSchema,
} from '../schemas/policy.js';
import { nestedCheckRequestSchema } from '../schemas/check.js';
import { readCheckRequest } from '../requests/check-request.js';
import { RequestValidationError } from '../errors.js';
import { API_KEY_SECURITY } from './admin-auth.js';
import type { RoutesOptions } from './context.js';
import { ERROR_RESPONSES } from './responses.js';
import { warningsTo, writerOf } from './writer.js';
import { auditPageQuerySchema, auditPageSchema, auditRecordSchema } from '../schemas/audit.js';

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
    handler: (request, reply) => policies.create(sentPolicy(request.body), writerOf(request), warningsTo(reply)),
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
      body: policiesToValidateSchema,
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
      querystring: simplePolicyQuerySchema,
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
    schema: { tags, security, summary: 'One policy', params: policyNameParamsSchema, response: { 200: storedPolicySchema, ...ERROR_RESPONSES } },
    handler: (request) => policies.get(request.params.name),
  });

  app.put('/admin/policies/:name', {
    schema: {
      tags,
      security,
      summary: 'Replace a policy',
      description: "The body's name, once slugified, must equal the path's. The policy keeps its place in creation order.",
      params: policyNameParamsSchema,
      body: policySchema,
      response: { 200: storedPolicySchema, ...ERROR_RESPONSES },
    },
    handler: (request, reply) => policies.replace(request.params.name, sentPolicy(request.body), writerOf(request), warningsTo(reply)),
  });

  app.delete('/admin/policies/:name', {
    schema: { tags, security, summary: 'Delete a policy', params: policyNameParamsSchema, response: { 200: { type: 'boolean' }, ...ERROR_RESPONSES } },
    handler: (request) => policies.delete(request.params.name, writerOf(request)),
  });
};

/** A policy's versions under `/admin/policies/{name}/history`, and restoring one; behind the admin key check too. */
export const policyHistoryRoutes: FastifyPluginAsync<RoutesOptions> = async (fastify, { context }) => {
  const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
  const { policies } = context;

  app.get('/admin/policies/:name/history', {
    schema: {
      tags,
      security,
      summary: "A policy's versions, newest first",
      description:
        'The audit records of the writes that made each version (`version`, `operation`, `actor`, `time`, the policy `before` and `after`; a deletion has `after` null). The history reaches back as far as the audit trail is kept.',
      params: policyNameParamsSchema,
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
      params: policyVersionParamsSchema,
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
      params: policyNameParamsSchema,
      querystring: restoreQuerySchema,
      response: { 200: storedPolicySchema, ...ERROR_RESPONSES },
    },
    handler: (request, reply) => policies.restore(request.params.name, request.query.version, writerOf(request), warningsTo(reply)),
  });
};
