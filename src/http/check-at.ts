import type { FastifyPluginAsync } from 'fastify';
import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import { checkAtSchema, checkResponseSchema } from '../schemas/check.js';
import { API_KEY_SECURITY } from './admin-auth.js';
import type { RoutesOptions } from './context.js';
import { ERROR_RESPONSES } from './responses.js';

const tags = ['policies'];
const security = API_KEY_SECURITY;

/** The playground's check at a given time, beside the public `/check`; registered behind the admin key check. */
export const checkAtRoutes: FastifyPluginAsync<RoutesOptions> = async (fastify, { context }) => {
  const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
  const { checks } = context;

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

};
