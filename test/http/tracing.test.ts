import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'undici';
import { scratchDir, startServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import { AUDIENCE, ISSUER, signingKey, tokenFor } from '../helpers/token-issuer.js';
import { EnvoyGrpc } from '../helpers/envoy-grpc.js';
import { receiver } from '../helpers/otlp-receiver.js';

// Tracing (--otlp-endpoint) against an OTLP/HTTP receiver the test starts, which keeps what it
// receives: spans join the caller's trace, carry what decided and never a value or a token; a
// collector down costs no decision and is counted.

const POLICY = {
  name: 'documents',
  rules: [{ name: 'readers-read', effect: 'allow', principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'reader' }], actions: ['read'] }],
};
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const traceparent = { traceparent: `00-${TRACE_ID}-${PARENT}-01` };

async function tracedServer(t: Test, endpoint: string, extra: Record<string, unknown> = {}): Promise<TestServer> {
  const server = await startServer({ otlpEndpoint: `${endpoint}/v1/traces`, traceSampleRatio: 1, otelServiceName: 'verdict-test', ...extra });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', POLICY)).status, 200);
  return server;
}

t.test("each deciding request's span joins the caller's trace and says what decided, and nothing it was sent", async (t) => {
  const collector = await receiver(t);
  const dir = scratchDir(t);
  const key = await signingKey('k1');
  writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [key.publicJwk] }));
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_file: join(dir, 'jwks.json') }] }));
  const server = await tracedServer(t, collector.url, { tokens: join(dir, 'tokens.json'), evaluation: 'pool', workers: 1 });
  const secret = 'a-value-no-span-may-show-3141';
  const check = (role: string) => ({ principal: { attributes: { role, note: secret } }, resource: { uri: 'doc:1' }, action: 'read' });
  const forged = await tokenFor(await signingKey('k1'), 'alice');
  t.equal((await server.call('POST', '/check', check('reader'), traceparent)).status, 200);
  t.equal((await server.call('POST', '/check', check('guest'), traceparent)).status, 200);
  t.equal((await server.call('POST', '/check', { principal: { token: forged }, resource: { uri: 'doc:1' }, action: 'read' }, traceparent)).status, 401);
  t.equal((await server.call('POST', '/check/bulk', Array.from({ length: 50 }, (_, index) => check(index % 2 === 0 ? 'reader' : 'guest')), traceparent)).status, 200);
  t.equal((await server.call('GET', '/admin/policies')).status, 200, 'an admin read: not traced');
  await until(() => collector.spans.length >= 4, 'four spans exported');
  t.equal(collector.spans.length, 4, 'one span a deciding request, none for the admin read');
  for (const span of collector.spans) {
    t.equal(span.traceId, TRACE_ID, `${span.name}: in the caller's trace`);
    t.equal(span.parentSpanId, PARENT, `${span.name}: the child of the caller's span`);
  }
  const [allowed, denied, refused, bulk] = collector.spans;
  t.match(allowed!.attributes, { 'http.route': '/check', 'http.response.status_code': 200, 'verdict.allowed': true, 'verdict.decided_by': 'rule', 'verdict.policy': 'documents', 'verdict.rule': 'readers-read', 'verdict.evaluation': 'front', 'verdict.revision': 1 });
  t.match(denied!.attributes, { 'verdict.allowed': false, 'verdict.decided_by': 'default', 'verdict.default_effect': 'deny' });
  t.match(refused!.attributes, { 'http.response.status_code': 401 });
  t.notOk('verdict.allowed' in refused!.attributes, 'a refused token decided nothing');
  t.match(bulk!.attributes, { 'http.route': '/check/bulk', 'verdict.decisions': 50, 'verdict.allowed_decisions': 25 });
  t.match(bulk!.attributes['verdict.evaluation'], /pool|front/);
  const everything = collector.raw.join('\n');
  t.notOk(everything.includes(secret), 'no attribute value in any span');
  t.notOk(everything.includes(forged), 'no token in any span');
  t.match(everything, /"service\.name".*"verdict-test"/, 'the resource names the service');
});

t.test('a collector that never answers delays no decision; the spans past the queue are dropped and counted', async (t) => {
  const collector = await receiver(t, false);
  const server = await tracedServer(t, collector.url);
  const pool = new Pool(server.url, { connections: 16 });
  t.teardown(() => pool.close());
  const body = JSON.stringify({ principal: { attributes: { role: 'reader' } }, resource: { uri: 'doc:1' }, action: 'read' });
  let answered = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (answered < 3200) {
        const response = await pool.request({ method: 'POST', path: '/check', body, headers: { 'content-type': 'application/json' } });
        await response.body.dump();
        if (response.statusCode !== 200) throw new Error(`answered ${response.statusCode}`);
        answered++;
      }
    }),
  );
  t.ok(answered >= 3200, `every check answered (${answered}) while the collector hangs`);
  const metrics = (await server.call('GET', '/metrics')).body as string;
  const dropped = Number(/^verdict_tracing_spans_dropped (\d+)/m.exec(metrics)?.[1]);
  t.ok(dropped > 0, `spans past the queue dropped, and counted: ${dropped}`);
});

t.test("a gRPC external authorization call is a span too, the child of the traceparent Envoy forwards", async (t) => {
  const collector = await receiver(t);
  const dir = scratchDir(t);
  writeFileSync(join(dir, 'mapping.json'), JSON.stringify({ routes: [{ path: '/documents/{id}', resource_type: 'doc' }] }));
  const server = await tracedServer(t, collector.url, { extAuthz: join(dir, 'mapping.json'), extAuthzGrpc: '0' });
  const envoy = new EnvoyGrpc(server.extAuthzGrpc()!);
  t.teardown(() => envoy.close());
  const answer = await envoy.check({ method: 'GET', path: '/documents/1', headers: { ...traceparent, 'x-role': 'reader' } });
  t.equal(answer.code, 7, 'denied: the mapping gives no role');
  await until(() => collector.spans.length >= 1, 'the span exported');
  const [span] = collector.spans;
  t.same([span!.traceId, span!.parentSpanId], [TRACE_ID, PARENT], "in Envoy's trace");
  t.match(span!.attributes, { 'rpc.system': 'grpc', 'rpc.method': 'Check', 'rpc.grpc.status_code': 7, 'verdict.decisions': 1, 'verdict.allowed': false });
});

t.test('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (--otlp-traces-endpoint) is the whole URL, taken as it is, and wins over the base endpoint', async (t) => {
  const chosen = await receiver(t);
  const base = await receiver(t);
  const server = await startServer({ otlpTracesEndpoint: `${chosen.url}/collector/traces`, otlpEndpoint: `${base.url}/v1/traces`, traceSampleRatio: 1 });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/check', { principal: { attributes: { role: 'reader' } }, resource: { uri: 'doc:1' }, action: 'read' }, traceparent)).status, 200);
  await until(() => chosen.spans.length > 0, 'the span exported');
  t.same([...new Set(chosen.paths)], ['/collector/traces'], 'posted to the path given, nothing added');
  t.same(base.spans, [], 'nothing to the base endpoint');
});

t.test('a span says how its checks were read: a token verified or found verified, entities read from the store or found in the cache', async (t) => {
  const collector = await receiver(t);
  const dir = scratchDir(t);
  const key = await signingKey('k1');
  writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [key.publicJwk] }));
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_file: join(dir, 'jwks.json') }] }));
  const server = await tracedServer(t, collector.url, { tokens: join(dir, 'tokens.json') });
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'doc:7', attributes: { kind: 'report' } })).status, 200);
  const token = await tokenFor(key, 'alice');
  const asked = { principal: { token }, resource: { uri: 'doc:7' }, action: 'read' };
  const first = `00-${TRACE_ID}-${'1'.repeat(16)}-01`;
  const second = `00-${TRACE_ID}-${'2'.repeat(16)}-01`;
  t.equal((await server.call('POST', '/check', asked, { traceparent: first })).status, 200);
  t.equal((await server.call('POST', '/check', asked, { traceparent: second })).status, 200);
  await until(() => collector.spans.filter((span) => span.attributes['http.route'] === '/check').length >= 2, 'both spans');
  const spanOf = (parent: string) => collector.spans.find((span) => span.parentSpanId === parent)!.attributes;
  t.match(spanOf('1'.repeat(16)), { 'verdict.tokens_verified': 1, 'verdict.entities_read': 1 }, 'the first: the token verified, the entity read from the store');
  t.notOk('verdict.tokens_from_memory' in spanOf('1'.repeat(16)));
  t.match(spanOf('2'.repeat(16)), { 'verdict.tokens_from_memory': 1, 'verdict.entities_from_cache': 1 }, 'the second: both at hand');
  t.notOk('verdict.entities_read' in spanOf('2'.repeat(16)));
});

t.test('a bulk asked with ?trace_items=true: each item a span, the child of the request span, saying what decided it; decided where any bulk is, here the worker pool', async (t) => {
  const collector = await receiver(t);
  const server = await tracedServer(t, collector.url, { evaluation: 'pool', workers: 1 });
  const bulk = ['reader', 'guest', 'reader'].map((role) => ({ principal: { attributes: { role } }, resource: { attributes: { kind: 'doc' } }, action: 'read' }));
  const itemsParent = `00-${TRACE_ID}-${'3'.repeat(16)}-01`;
  const plainParent = `00-${TRACE_ID}-${'4'.repeat(16)}-01`;
  t.equal((await server.call('POST', '/check/bulk?trace_items=true', bulk, { traceparent: itemsParent })).status, 200);
  t.equal((await server.call('POST', '/check/bulk', bulk, { traceparent: plainParent })).status, 200);
  await until(() => collector.spans.filter((span) => span.name === 'verdict decision').length >= 3 && collector.spans.filter((span) => span.attributes['http.route'] === '/check/bulk').length >= 2, 'the spans');
  const request = collector.spans.find((span) => span.parentSpanId === '3'.repeat(16))!;
  t.match(request.attributes, { 'verdict.decisions': 3, 'verdict.evaluation': 'pool' }, 'decided in the worker pool, as the bulk without the flag');
  const items = collector.spans.filter((span) => span.name === 'verdict decision').sort((one, other) => Number(one.attributes['verdict.item']) - Number(other.attributes['verdict.item']));
  t.same(items.map((span) => span.parentSpanId), Array(3).fill(request.spanId), "each the request span's child");
  t.match(items.map((span) => span.attributes), [
    { 'verdict.item': 0, 'verdict.allowed': true, 'verdict.decided_by': 'rule', 'verdict.policy': 'documents', 'verdict.rule': 'readers-read' },
    { 'verdict.item': 1, 'verdict.allowed': false, 'verdict.decided_by': 'default' },
    { 'verdict.item': 2, 'verdict.allowed': true },
  ]);
  const plain = collector.spans.find((span) => span.parentSpanId === '4'.repeat(16))!;
  t.equal(collector.spans.filter((span) => span.parentSpanId === plain.spanId).length, 0, 'without the flag, no span per item');
});
