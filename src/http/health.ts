import type { FastifyPluginAsync } from 'fastify';
import type { RoutesOptions } from './context.js';

const healthSchema = {
  type: 'object',
  properties: {
    status: { type: 'string', enum: ['ok'] },
    revision: { type: 'integer', description: 'The policy snapshot revision this process serves.' },
  },
  required: ['status', 'revision'],
  additionalProperties: false,
} as const;

/** Liveness: the process answers. */
export const healthRoutes: FastifyPluginAsync<RoutesOptions> = async (app, { context }) => {
  app.get('/health', {
    schema: { tags: ['operations'], summary: 'Liveness', response: { 200: healthSchema } },
    handler: async () => ({ status: 'ok' as const, revision: context.snapshots.current.revision }),
  });
};
