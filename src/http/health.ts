import type { FastifyPluginAsync } from 'fastify';
import { ClientError } from '../errors.js';
import type { ReadinessReport } from '../services/readiness.js';
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
    degraded: {
      type: 'boolean',
      description: 'The store cannot be reached or the policy snapshot cannot be rebuilt: decisions go on from the last snapshot.',
    },
    detail: { type: 'string', description: 'Which conditions do not hold (only when some do not).' },
    checks: {
      type: 'object',
      description:
        'Each condition (workers, snapshot, store, shutdown): `ok` or why it does not hold; and, with `?verbose=true` only, never failing: `evaluation`, where bulk checks are decided, and why, ' +
        '`worker_threads`, how many and why, and `placement` (with `--evaluation auto` and a core to spare): the path big bulks take now, and what each path was measured to cost.',
      additionalProperties: { type: 'string' },
    },
  },
  required: ['status', 'degraded', 'checks'],
  additionalProperties: false,
} as const;

export interface ReadyBody {
  status: 'ready' | 'not ready';
  degraded: boolean;
  detail?: string;
  checks: Record<string, string>;
}

/**
 * `?verbose=true` adds what this process chose to `checks`. Read by hand rather than by a querystring
 * schema, which would load the schema compiler on a start's first probe.
 */
function isVerbose(query: unknown): boolean {
  const verbose = (query as Record<string, unknown>).verbose;
  if (verbose === undefined || verbose === 'false') return false;
  if (verbose === 'true') return true;
  throw new ClientError(400, `verbose must be true or false; got ${JSON.stringify(verbose).slice(0, 40)}`);
}

/** The body of GET /ready; the status code is 200 when ready (degraded or not), else 503. Choices are reported when given. */
export function readyBody({ ready, degraded, checks, choices }: ReadinessReport): ReadyBody {
  const status = ready ? 'ready' : 'not ready';
  const failing = Object.entries(checks).filter(([, outcome]) => outcome !== 'ok');
  const reported = choices === undefined ? checks : { ...checks, ...choices };
  if (failing.length === 0) return { status, degraded, checks: reported };
  const summary = ready ? 'Ready, degraded' : 'Not ready';
  return { status, degraded, detail: `${summary}: ${failing.map(([name, outcome]) => `${name} (${outcome})`).join(', ')}`, checks: reported };
}

/**
 * The probes' answers as JSON.stringify writes them, so that the first probe of a start loads no
 * schema compiler (see lazySchemaCompilers). Their bodies are built in their schema's key order
 * with no other key, so the text is the one fast-json-stringify would write.
 */
const asPlainJson = () => (body: unknown) => JSON.stringify(body);

/** Liveness (the process answers) and readiness (it can decide, from a loaded snapshot, and is not stopping). */
export const healthRoutes: FastifyPluginAsync<RoutesOptions> = async (app, { context }) => {
  app.get('/health', {
    serializerCompiler: asPlainJson,
    schema: { tags: ['operations'], summary: 'Liveness', response: { 200: healthSchema } },
    handler: async () => ({ status: 'ok' as const, revision: context.snapshots.current.revision }),
  });
  app.get('/ready', {
    serializerCompiler: asPlainJson,
    schema: {
      tags: ['operations'],
      summary: 'Readiness',
      description: '`?verbose=true` adds, to `checks`, what this process chose: where bulks are decided, how many worker threads, and the placement measured.',
      response: { 200: readySchema, 503: readySchema },
    },
    handler: async (request, reply) => {
      const verbose = isVerbose(request.query);
      const { choices, ...report } = await context.readiness.report();
      return reply.code(report.ready ? 200 : 503).send(readyBody(verbose ? { ...report, choices } : report));
    },
  });
};
