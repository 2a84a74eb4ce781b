import type { RequestListener } from 'node:http';
import type { FastifyInstance, FastifyPluginAsync, onResponseHookHandler } from 'fastify';
import type { Metrics } from '../live/metrics.js';
import type { LatencyKind, LiveCounters } from '../live/live-counters.js';
import type { Observations } from '../live/plain-metrics.js';

const LATENCY_KINDS: Record<string, LatencyKind> = {
  '/check': 'check',
  '/check/bulk': 'bulk',
  '/access/v1/evaluation': 'check',
  '/access/v1/evaluations': 'bulk',
};

/**
 * Times every route's responses into the request histogram and the live counters. Each route gets
 * its own hook holding its label sets by status, so a request costs one map lookup and one observation.
 */
export function instrumentRoutes(app: FastifyInstance, metrics: Metrics, live: LiveCounters): void {
  app.addHook('onRoute', (route) => {
    const method = [route.method].flat().join(',');
    const byStatus = new Map<number, Observations>();
    const latencyKind = method === 'POST' ? LATENCY_KINDS[route.url] : undefined;
    const probe = route.config?.accessProbe === true;
    const observe: onResponseHookHandler = (_request, reply, done) => {
      let observations = byStatus.get(reply.statusCode);
      if (observations === undefined) {
        observations = metrics.requestDuration.bind({ method, route: route.url, status_code: String(reply.statusCode) });
        byStatus.set(reply.statusCode, observations);
      }
      const milliseconds = reply.elapsedTime;
      observations.observe(milliseconds / 1000);
      if (!(probe && reply.statusCode === 401)) live.responded(reply.statusCode, milliseconds, latencyKind);
      done();
    };
    route.onResponse = route.onResponse === undefined ? [observe] : [route.onResponse].flat().concat(observe);
  });
}

/** GET /metrics: Prometheus text exposition. */
export const metricsRoutes: FastifyPluginAsync<{ metrics: Metrics }> = async (app, { metrics }) => {
  app.get('/metrics', {
    schema: { tags: ['operations'], summary: 'Prometheus metrics', produces: [metrics.registry.contentType] },
    handler: async (_request, reply) => reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
  });
};

/** What a port of its own for /metrics (--metrics-port) serves besides /metrics: the probes, answered by the app. */
const PROBES = new Set(['/health', '/ready']);

/**
 * The handler of a port of its own for /metrics (--metrics-port): GET /metrics, and GET /health and
 * /ready passed to `app`, so that a kubelet can probe a sidecar whose API listens on loopback only.
 */
export function metricsListener(metrics: Metrics, app: RequestListener): RequestListener {
  return (request, response) => {
    const path = (request.url ?? '').split('?')[0]!;
    if (request.method === 'GET' && PROBES.has(path)) return app(request, response);
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'application/json; charset=utf-8' });
      response.end(JSON.stringify({ detail: 'Not Found' }));
      return;
    }
    void metrics.registry.metrics().then((text) => {
      response.writeHead(200, { 'content-type': metrics.registry.contentType });
      response.end(text);
    });
  };
}
