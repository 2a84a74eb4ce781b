import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Span } from '@opentelemetry/api';
import { RequestTrace } from '../tracing/request-trace.js';
import type { TracedRequests } from '../services/compose.js';
import { REVISION_HEADER } from '../schemas/wire.js';

/** The routes whose requests decide, and so are traced: checks, bulks, AuthZEN, plans, external authorization. */
const DECIDING = /^\/(check|access\/v1|plan|ext-authz|check-at)\b/;
const traced = new WeakMap<FastifyRequest, { span: Span; trace: RequestTrace }>();

/**
 * A span for each request that decides, the child of the caller's trace (`traceparent`): the route,
 * the status, the revision, and what its decisions came to (see RequestTrace); never a value, a token
 * or a claim. Other routes (admin, metrics, the dashboard) are not traced.
 */
export function traceDecidingRequests(app: FastifyInstance, { tracing, traces }: TracedRequests): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url;
    if (route !== undefined && DECIDING.test(route)) {
      const trace = new RequestTrace();
      traced.set(request, { span: tracing.requestSpan(`${request.method} ${route}`, request.headers), trace });
    }
    done();
  });
  // Once the body is read (its stream's events run outside this request's context), the handler runs
  // with the request's trace current: the decision observer tells it each decision.
  app.addHook('preHandler', (request, _reply, done) => {
    const entry = traced.get(request);
    if (entry !== undefined) traces.enter(entry.trace);
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    const entry = traced.get(request);
    if (entry !== undefined) {
      const { span, trace } = entry;
      const revision = Number(reply.getHeader(REVISION_HEADER));
      span.setAttributes({
        'http.request.method': request.method,
        'http.route': request.routeOptions.url ?? '',
        'http.response.status_code': reply.statusCode,
        ...(Number.isInteger(revision) && { 'verdict.revision': revision }),
        ...trace.attributes(),
      });
      if (reply.statusCode >= 500) span.setStatus({ code: 2 });
      span.end();
    }
    done();
  });
}
