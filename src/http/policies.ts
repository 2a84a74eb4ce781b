import type { FastifyPluginAsync } from 'fastify';
import { MAX_DISAGREEMENTS } from '../services/shadow-decisions.js';
import { shadowReportSchema } from '../schemas/impact.js';
import { impactReportSchema, impactRequestSchema } from '../schemas/impact.js';
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
import { checkAtSchema, checkResponseSchema, nestedCheckRequestSchema } from '../schemas/check.js';
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
  const { policies, checks, impact, shadows } = context;

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

  app.post('/admin/policies/:name/promote', {
    schema: {
      tags,
      security,
      summary: 'Make a shadow policy live',
      description:
        'A shadow added beside the live policies (`"shadow": true`) is written again without `shadow`: one audited write. A shadow that stood in for a live ' +
        "policy (`\"shadow\": \"<name>\"`) replaces that policy's rules, which keeps its name and place, and is deleted, in the same write (audited as a replace of the one and a delete of the other). 409 for a live policy.",
      params: policyNameParamsSchema,
      response: { 200: storedPolicySchema, ...ERROR_RESPONSES },
    },
    handler: (request, reply) => policies.promote(request.params.name, writerOf(request), warningsTo(reply)),
  });

  app.get('/admin/shadow', {
    schema: {
      tags,
      security,
      summary: 'How the shadow policies decide beside the live ones, on this process',
      description:
        'The shadow policies in force, how many checks this process decided both ways since it started (all, or `--shadow-sample-percent` of them), ' +
        `and the latest checks they disagreed on (at most ${MAX_DISAGREEMENTS}, newest first), each explained both ways. Bulks decided in worker threads are not decided by the shadows.`,
      response: { 200: shadowReportSchema, ...ERROR_RESPONSES },
    },
    handler: async () => ({
      policies: (await policies.list()).filter((policy) => policy.shadow !== undefined).map((policy) => ({ name: policy.name, in_place_of: typeof policy.shadow === 'string' ? policy.shadow : null })),
      decided: shadows.counts,
      history: shadows.history(),
      disagreements: shadows.latest(),
    }),
  });

  app.post('/admin/policies/impact', {
    schema: {
      tags,
      security,
      summary: 'Preview what a change of the policies would do to the checks decided lately, without writing it',
      description:
        'Replays the checks this process decided lately (the last `--recent-checks`, as it read them: after the registry merge, so nothing is read again) ' +
        'against the policies in force and against them with the change made, and answers how many change from allow to deny and from deny to allow, ' +
        "grouped by action, by what decided them before and after, and by the principal's and resource's types, with a sample explained both ways. " +
        'Each process replays its own checks: `process` says which answered. Bulks decided in worker threads (none while a shadow policy is written) are not kept in memory; ' +
        '`source: decision_log` replays the newest `limit` lines of the decision log file instead (all decisions, bulks too; lines with masked values are counted, not replayed). A read key may preview.',
      body: impactRequestSchema,
      response: { 200: impactReportSchema, ...ERROR_RESPONSES },
    },
    config: { readsOnly: true },
    handler: (request) => impact.preview(request.body),
  });

  app.post('/admin/check-at', {
    schema: {
      tags,
      security,
      summary: "Try a check at a given time, explained: what the policies would decide then",
      description:
        "Decides `check` (as `POST /check` takes it) as if the decision's time (`context.time`) were `time`, an RFC 3339 date-time with its offset, " +
        'and explains it; against the policies, registry and schemas in force now. It decides nothing that happens: no decision log line, no metric. ' +
        "The dashboard's playground asks it when the operator fixes the time.",
      body: checkAtSchema,
      response: { 200: checkResponseSchema, ...ERROR_RESPONSES },
    },
    // It changes nothing: a read key may try a check.
    config: { readsOnly: true },
    handler: (request) => checks.decideAt(request.body.check, request.body.time),
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
