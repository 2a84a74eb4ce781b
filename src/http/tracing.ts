import type { FastifyInstance, FastifyRequest, onRequestHookHandler, onSendHookHandler } from 'fastify';
import type { Span } from '@opentelemetry/api';
import { RequestTrace } from '../tracing/request-trace.js';
import type { Tracing } from '../tracing/tracing.js';
import type { TracedRequests } from '../services/compose.js';
import { REVISION_HEADER } from '../schemas/wire.js';

/** The routes whose requests decide, and so are traced: checks, bulks, AuthZEN, plans, external authorization. */
const DECIDING = /^\/(check|access\/v1|plan|ext-authz)\b/;
const traced = new WeakMap<FastifyRequest, { span: Span; trace: RequestTrace; childSpan: Tracing['childSpan'] }>();

/** The trace of `request` when it is traced: its origin carries it to the decision observer. */
export const traceOf = (request: FastifyRequest): RequestTrace | undefined => traced.get(request)?.trace;

/**
 * Has each decision `request` makes be a span of its own, the child of the request's, when the
 * request is traced (and so sampled): decided on the front or in a worker, which says what decided each.
 */
export function traceItemsOf(request: FastifyRequest): void {
  const entry = traced.get(request);
  if (entry === undefined) return;
  const { span, trace, childSpan } = entry;
  trace.itemTraced = (decider, index) => childSpan(span, 'verdict decision', { 'verdict.item': index, ...decider });
}

/**
 * A span for each request that decides, the child of the caller's trace (`traceparent`): the route,
 * the status, the revision, and what its decisions came to (see RequestTrace); never a value, a token
 * or a claim. Other routes (admin, metrics, the dashboard) are not traced.
 */
export function traceDecidingRequests(app: FastifyInstance, { tracing }: TracedRequests): void {
  const start: onRequestHookHandler = (request, _reply, done) => {
    const route = request.routeOptions.url ?? request.url;
    const span = tracing.requestSpan(`${request.method} ${route}`, request.headers);
    // A request its trace does not sample is followed no further: nothing is tallied, nothing ends.
    if (span.isRecording()) traced.set(request, { span, trace: new RequestTrace(), childSpan: tracing.childSpan });
    done();
  };
  // At onSend, with the status and headers set: an onResponse hook would wait for 'finish'.
  const end: onSendHookHandler = (request, reply, payload, done) => {
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
    done(null, payload);
  };
  // The hooks go on the deciding routes alone: other routes run as they do without tracing.
  app.addHook('onRoute', (route) => {
    if (!DECIDING.test(route.url)) return;
    route.onRequest = [start, ...asList(route.onRequest)];
    route.onSend = [...asList(route.onSend), end];
  });
}

const asList = <Hook>(hooks: Hook | Hook[] | undefined): Hook[] => (hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks]);
