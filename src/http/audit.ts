import type { FastifyPluginAsync } from 'fastify';
import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import { auditPageSchema, auditQuerySchema } from '../schemas/audit.js';
import { API_KEY_SECURITY } from './admin-auth.js';
import type { RoutesOptions } from './context.js';
import { ERROR_RESPONSES } from './responses.js';

/** The audit trail, `GET /admin/audit`; the caller registers it behind the admin key check. */
export const auditRoutes: FastifyPluginAsync<RoutesOptions> = async (fastify, { context }) => {
  const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();

  app.get('/admin/audit', {
    schema: {
      tags: ['audit'],
      security: API_KEY_SECURITY,
      summary: 'Admin writes, newest first',
      description: 'One record per admin write, committed with it. Filters narrow the list; `next_cursor` pages through it.',
      querystring: auditQuerySchema(context.config.maxPageSize),
      response: { 200: auditPageSchema, ...ERROR_RESPONSES },
    },
    handler: (request) => {
      const { since, until, target, actor, limit, cursor } = request.query;
      const prefix = target?.endsWith('*') ?? false;
      return context.audit.page(
        {
          since: since === undefined ? undefined : Date.parse(since),
          until: until === undefined ? undefined : Date.parse(until),
          target: prefix ? target!.slice(0, -1) : target,
          targetPrefix: prefix,
          actor,
        },
        { limit, cursor },
      );
    },
  });
};
