import type { FastifyPluginAsync } from 'fastify';
import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import { MAX_DISAGREEMENTS } from '../decide/shadowed.js';
import { impactReportSchema, impactRequestSchema, shadowReportSchema } from '../schemas/impact.js';
import { policyNameParamsSchema, storedPolicySchema } from '../schemas/policy.js';
import { API_KEY_SECURITY } from './admin-auth.js';
import type { RoutesOptions } from './context.js';
import { ERROR_RESPONSES } from './responses.js';
import { warningsTo, writerOf } from './writer.js';

const tags = ['policies'];
const security = API_KEY_SECURITY;

/** Safe change of the policies: impact previews, the shadow policies' report, and promoting a shadow. Registered behind the admin key check. */
export const policyChangeRoutes: FastifyPluginAsync<RoutesOptions> = async (fastify, { context }) => {
  const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
  const { policies, impact, shadows } = context;

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
        `and the latest checks they disagreed on (at most ${MAX_DISAGREEMENTS}, newest first), each explained both ways.`,
      response: { 200: shadowReportSchema, ...ERROR_RESPONSES },
    },
    handler: async () => ({
      policies: (await policies.list())
        .filter((policy) => policy.shadow !== undefined)
        .map((policy) => ({ name: policy.name, in_place_of: typeof policy.shadow === 'string' ? policy.shadow : null, source: policies.sourceOf(policy.name) })),
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

};
