import type { FastifyPluginAsync } from 'fastify';

const healthSchema = {
  type: 'object',
  properties: { status: { type: 'string', enum: ['ok'] } },
  required: ['status'],
  additionalProperties: false,
} as const;

/** Liveness: the process answers. */
export const healthRoutes: FastifyPluginAsync = async (app) => {
  app.get('/health', {
    schema: { tags: ['operations'], summary: 'Liveness', response: { 200: healthSchema } },
    handler: async () => ({ status: 'ok' as const }),
  });
};
