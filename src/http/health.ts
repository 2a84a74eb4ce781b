import type { FastifyPluginAsync } from 'fastify';
import type { ReadinessReport } from '../readiness.js';
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

const readySchema = {
  type: 'object',
  properties: {
    status: { type: 'string', enum: ['ready', 'not ready'] },
    detail: { type: 'string', description: 'What is not ready (only when not ready).' },
    checks: {
      type: 'object',
      description: 'Each condition (snapshot, store, workers, shutdown): `ok` or why it does not hold.',
      additionalProperties: { type: 'string' },
    },
  },
  required: ['status', 'checks'],
  additionalProperties: false,
} as const;

export interface ReadyBody {
  status: 'ready' | 'not ready';
  detail?: string;
  checks: Record<string, string>;
}

/** The body of GET /ready; the status code is 200 when ready, else 503. */
export function readyBody({ ready, checks }: ReadinessReport): ReadyBody {
  if (ready) return { status: 'ready', checks };
  const failing = Object.entries(checks).filter(([, outcome]) => outcome !== 'ok');
  return { status: 'not ready', detail: `Not ready: ${failing.map(([name, outcome]) => `${name} (${outcome})`).join(', ')}`, checks };
}

/** Liveness (the process answers) and readiness (it can decide with current policies, and is not stopping). */
export const healthRoutes: FastifyPluginAsync<RoutesOptions> = async (app, { context }) => {
  app.get('/health', {
    schema: { tags: ['operations'], summary: 'Liveness', response: { 200: healthSchema } },
    handler: async () => ({ status: 'ok' as const, revision: context.snapshots.current.revision }),
  });
  app.get('/ready', {
    schema: { tags: ['operations'], summary: 'Readiness', response: { 200: readySchema, 503: readySchema } },
    handler: async (_request, reply) => {
      const report = await context.readiness.report();
      return reply.code(report.ready ? 200 : 503).send(readyBody(report));
    },
  });
};
