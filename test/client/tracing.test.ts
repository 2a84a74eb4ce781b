import t from 'tap';
import * as opentelemetry from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import Fastify from 'fastify';
import { fastifyGuard, VerdictClient } from '../../clients/node/src/index.js';
import { startServer } from '../helpers/server.js';
import { receiver } from '../helpers/otlp-receiver.js';
import { until } from '../helpers/until.js';
import { roleRule } from './helpers.js';

// The Node client in an app traced with OpenTelemetry (the app's own SDK: a tracer provider, the
// async-hooks context manager, W3C propagation), against a real Verdict exporting its own spans to an
// OTLP receiver: the client's calls join the caller's trace, and a bulk of batched checks is sent
// under a span that links every caller's span.

const exported = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exported)] });
opentelemetry.trace.setGlobalTracerProvider(provider);
opentelemetry.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
opentelemetry.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
const appTracer = opentelemetry.trace.getTracer('the-app');

/** `work` inside a span of the app's, ended after it; resolves to the span's context and what `work` gave. */
async function inSpan<T>(name: string, work: () => Promise<T>): Promise<{ span: opentelemetry.SpanContext; result: T }> {
  return appTracer.startActiveSpan(name, async (span) => {
    try {
      return { span: span.spanContext(), result: await work() };
    } finally {
      span.end();
    }
  });
}

const reader = { principal: { attributes: { role: 'reader' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' };

t.test("checks batched into one bulk: its span is the first caller's child and links each caller's; Verdict's span is the bulk span's child", async (t) => {
  const collector = await receiver(t);
  const server = await startServer({ otlpEndpoint: `${collector.url}/v1/traces`, traceSampleRatio: 1 });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', roleRule('readers', 'reader'))).status, 200);
  const client = new VerdictClient({ url: server.url, opentelemetry });
  t.teardown(() => client.close());
  exported.reset();

  const callers = await Promise.all(['first', 'second', 'third'].map((name) => inSpan(name, () => client.check(reader))));
  t.same(callers.map(({ result }) => result.allowed), [true, true, true]);
  const bulkSpans = exported.getFinishedSpans().filter((span) => span.name === 'verdict check bulk');
  t.equal(bulkSpans.length, 1, 'one bulk, one span');
  const bulk = bulkSpans[0]!;
  t.equal(bulk.kind, opentelemetry.SpanKind.CLIENT);
  t.equal(bulk.spanContext().traceId, callers[0]!.span.traceId, "in the first caller's trace");
  t.equal(bulk.parentSpanContext?.spanId, callers[0]!.span.spanId, "the first caller's child");
  t.same(bulk.links.map((link) => link.context.spanId).sort(), callers.map(({ span }) => span.spanId).sort(), "linking each caller's span");
  t.equal(bulk.attributes['verdict.checks'], 3);

  await until(() => collector.spans.some((span) => span.attributes['http.route'] === '/check/bulk'), "Verdict's span of the bulk");
  const served = collector.spans.find((span) => span.attributes['http.route'] === '/check/bulk')!;
  t.equal(served.traceId, bulk.spanContext().traceId, "Verdict's span in the same trace");
  t.equal(served.parentSpanId, bulk.spanContext().spanId, "the child of the client's bulk span");
});

t.test("a call sent in its caller's turn carries the caller's context; without the API the client sends none", async (t) => {
  const collector = await receiver(t);
  const server = await startServer({ otlpEndpoint: `${collector.url}/v1/traces`, traceSampleRatio: 1 });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', roleRule('readers', 'reader'))).status, 200);
  const traced = new VerdictClient({ url: server.url, opentelemetry, batching: false });
  const untraced = new VerdictClient({ url: server.url, batching: false });
  t.teardown(() => Promise.all([traced.close(), untraced.close()]));

  const { span } = await inSpan('caller', () => traced.evaluation({ subject: { type: 'user', id: 'alice', properties: { role: 'reader' } }, resource: { type: 'doc', id: '1' }, action: { name: 'read' } }));
  await inSpan('caller', () => untraced.check(reader));
  await until(() => collector.spans.filter((received) => received.name.startsWith('POST')).length >= 2, "Verdict's two spans");
  const evaluation = collector.spans.find((received) => received.attributes['http.route'] === '/access/v1/evaluation')!;
  t.equal(evaluation.parentSpanId, span.spanId, "the AuthZEN call's span is the caller's child");
  t.equal(evaluation.traceId, span.traceId);
  const check = collector.spans.find((received) => received.attributes['http.route'] === '/check')!;
  t.notOk(check.parentSpanId, 'a client not given the API joins no trace');
});

t.test("a guard names its route on the client's span: a check alone is 'verdict check' with http.route, a bulk links each caller with its route", async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', roleRule('readers', 'reader'))).status, 200);
  const client = new VerdictClient({ url: server.url, opentelemetry });
  t.teardown(() => client.close());
  const app = Fastify();
  t.teardown(() => app.close());
  const guard = fastifyGuard(client, (request: { headers: Record<string, string | string[] | undefined> }) => ({ ...reader, principal: { attributes: { role: String(request.headers['x-role']) } } }));
  app.get('/documents/:id', { preHandler: guard }, async () => 'the document');
  app.get('/reports/:id', { preHandler: guard }, async () => 'the report');
  exported.reset();

  const alone = await inSpan('request', () => app.inject({ method: 'GET', url: '/documents/7', headers: { 'x-role': 'reader' } }));
  t.equal(alone.result.statusCode, 200);
  const single = exported.getFinishedSpans().find((span) => span.name === 'verdict check')!;
  t.equal(single.attributes['http.route'], '/documents/:id', 'the lone check names the route that asked');
  t.equal(single.parentSpanContext?.spanId, alone.span.spanId);

  exported.reset();
  const together = await Promise.all([
    inSpan('first', () => app.inject({ method: 'GET', url: '/documents/1', headers: { 'x-role': 'reader' } })),
    inSpan('second', () => app.inject({ method: 'GET', url: '/reports/2', headers: { 'x-role': 'guest' } })),
  ]);
  t.same(together.map(({ result }) => result.statusCode), [200, 403]);
  const bulk = exported.getFinishedSpans().find((span) => span.name === 'verdict check bulk');
  t.ok(bulk, 'the two guards checked in one bulk');
  t.same(
    bulk!.links.map((link) => [link.context.spanId, link.attributes?.['http.route']]).sort(),
    [[together[0]!.span.spanId, '/documents/:id'], [together[1]!.span.spanId, '/reports/:id']].sort(),
    "each caller's link names its route",
  );
});
