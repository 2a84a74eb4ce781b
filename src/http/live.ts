import type { FastifyPluginAsync } from 'fastify';
import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import { liveQuerySchema, liveSchema } from '../schemas/live.js';
import { WINDOW_SECONDS, type LiveWindow } from '../live/live-window.js';
import type { LiveCounters } from '../live/live-counters.js';
import { API_KEY_SECURITY } from './admin-auth.js';
import { ERROR_RESPONSES } from './responses.js';

/** `GET /admin/live`: the live view's figures; the caller registers it behind the admin key check (a `read` key may read it). */
export const liveRoutes: FastifyPluginAsync<{ window: LiveWindow; counters: LiveCounters }> = async (fastify, { window, counters }) => {
  const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
  app.get('/admin/live', {
    schema: {
      tags: ['operations'],
      security: API_KEY_SECURITY,
      summary: 'Live figures of this process: the last 15 minutes by the second, top rules, recent denials',
      description:
        'Kept in memory by each process (with `--processes N`, by the one that answers). Poll with `since` set to the `at` of the last second you hold to get only newer seconds.',
      querystring: liveQuerySchema,
      response: { 200: liveSchema, ...ERROR_RESPONSES },
    },
    handler: (request) => {
      const { denials } = counters;
      return {
        now: Date.now(),
        started_at: window.startedAt,
        window_seconds: WINDOW_SECONDS,
        seconds: window.seconds(request.query.since),
        rules: counters.rules.inWindow(request.query.top),
        recent_denials: { capacity: denials?.capacity ?? 0, per_second: denials?.perSecond ?? 0, values: denials?.withValues ?? false, denials: denials?.list() ?? [] },
      };
    },
  });
};
