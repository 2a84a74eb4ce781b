import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, temporaryDataDir } from '../helpers/server.js';
import { autoEvaluationChecks } from '../helpers/evaluation.js';

const allowedCheck = { principal: { attributes: { role: 'admin' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' };
const deniedCheck = { principal: { attributes: { role: 'guest' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' };
const adminPolicy = {
  name: 'admins-read',
  rules: [
    {
      name: 'admins',
      effect: 'allow',
      principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'admin' }],
      resource_conditions: [],
      actions: ['read'],
    },
  ],
};

/** Samples of Prometheus text: `name{labels} value` lines; every other non-comment line fails the parse. */
function parsePrometheus(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (-?[0-9.e+-]+|NaN|\+Inf|-Inf)$/.exec(line);
    if (match === null) throw new Error(`not Prometheus text: ${JSON.stringify(line)}`);
    samples.set(match[1]!, Number(match[2]));
  }
  return samples;
}

t.test('GET /ready is 200 with every condition once loaded; /health keeps its shape', async (t) => {
  const server = await startServer({ evaluation: 'auto' });
  const ready = await server.call('GET', '/ready');
  t.equal(ready.status, 200);
  t.same(ready.body, { status: 'ready', degraded: false, checks: { snapshot: 'ok', store: 'ok', feed: 'ok', workers: 'ok' } }, 'a probe reads the conditions, nothing else');
  const verbose = await server.call('GET', '/ready?verbose=true');
  t.same(verbose.body, { status: 'ready', degraded: false, checks: { snapshot: 'ok', store: 'ok', feed: 'ok', workers: 'ok', ...autoEvaluationChecks(1) } }, 'verbose adds where bulks go and why');
  const unclear = await server.call('GET', '/ready?verbose=yes');
  t.equal(unclear.status, 400);
  t.match(unclear.body.detail, /verbose must be true or false; got "yes"/);
  const health = await server.call('GET', '/health');
  t.same(health.body, { status: 'ok', revision: 0 }, '/health keeps its shape');
  await server.close();
});

t.test('GET /metrics is Prometheus text whose counters move with traffic', async (t) => {
  const server = await startServer({ evaluation: 'pool' });
  t.teardown(() => server.close());
  t.equal((await server.call('POST', '/admin/policies', adminPolicy)).status, 200);
  const before = parsePrometheus((await server.call('GET', '/metrics')).body);
  const checkRoute = 'verdict_http_request_duration_seconds_count{method="POST",route="/check",status_code="200"}';
  t.equal(before.get(checkRoute) ?? 0, 0);

  for (let index = 0; index < 3; index++) await server.call('POST', '/check', allowedCheck);
  await server.call('POST', '/check', deniedCheck);
  await server.call('POST', '/check/bulk', [allowedCheck, deniedCheck, deniedCheck]);
  t.equal((await server.call('POST', '/check', { principal: {} })).status, 422);

  const response = await server.call('GET', '/metrics');
  t.equal(response.status, 200);
  t.match(response.headers['content-type'], /^text\/plain/);
  const after = parsePrometheus(response.body);
  t.equal(after.get(checkRoute), 4, 'four /check requests answered 200');
  t.equal(after.get('verdict_http_request_duration_seconds_count{method="POST",route="/check",status_code="422"}'), 1);
  t.equal(after.get('verdict_http_request_duration_seconds_count{method="POST",route="/check/bulk",status_code="200"}'), 1);
  t.equal(after.get('verdict_decisions_total{allowed="true"}'), 4, 'allowed: three checks and one bulk item');
  t.equal(after.get('verdict_decisions_total{allowed="false"}'), 3);
  t.equal(after.get('verdict_bulk_checks_count'), 1);
  t.equal(after.get('verdict_bulk_checks_sum'), 3);
  t.equal(after.get('verdict_snapshot_revision'), 1);
  t.ok((after.get('verdict_snapshot_age_seconds') ?? -1) >= 0);
  t.equal(after.get('verdict_worker_pool_threads'), 1);
  t.equal(after.get('verdict_worker_pool_queue_size'), 0);
  t.equal(after.get('verdict_change_feed_errors_total'), 0);
  t.equal(after.get('verdict_decision_log_dropped_total'), 0);
  t.ok(after.has('process_resident_memory_bytes'), 'process metrics');
  t.ok(after.has('nodejs_eventloop_lag_seconds'), 'event loop metrics');
});

t.test('the decision log holds one well-formed line per decision, from the front and from the workers', async (t) => {
  const logDir = temporaryDataDir();
  const logFile = join(logDir, 'decisions.jsonl');
  const server = await startServer({ decisionLog: logFile, evaluation: 'pool' });
  t.equal((await server.call('POST', '/admin/policies', adminPolicy)).status, 200);
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:ann', attributes: { role: 'admin' } })).status, 200);
  // The server runs in this process: a decision's latency fits within the round trip of its request.
  const sentAt = performance.now();
  await server.call('POST', '/check', allowedCheck);
  const roundTripMs = performance.now() - sentAt;
  await server.call('POST', '/check', { principal: { uri: 'user:ann' }, resource: { attributes: { kind: 'doc' } }, action: 'read' });
  await server.call('POST', '/check/bulk', [deniedCheck, allowedCheck]);
  await server.call('POST', '/check', { principal: {} });
  await server.close();

  const lines = readFileSync(logFile, 'utf8').split('\n');
  t.equal(lines.pop(), '', 'every line ends');
  t.equal(lines.length, 4, 'one line per decision; none for a refused request');
  const records = lines.map((line) => JSON.parse(line));
  for (const record of records) {
    t.same(Object.keys(record), ['time', 'request_id', 'decision_id', 'revision', 'request', 'resolved', 'allowed', 'reason', 'latency_ms']);
    t.ok(!Number.isNaN(Date.parse(record.time)), 'an ISO time');
    t.equal(record.revision, 1);
    t.type(record.latency_ms, 'number');
  }
  t.ok(records[0].latency_ms > 0 && records[0].latency_ms <= roundTripMs, `a check's latency (${records[0].latency_ms} ms) within its round trip (${roundTripMs} ms)`);
  t.same(records[0].request, { principal: { attributes: { role: 'admin' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' });
  t.same([records[0].allowed, records[0].reason], [true, 'Rule admins allowed the action in policy admins-read']);
  t.same(records[1].request.principal, { uri: 'user:ann', attributes: {} }, 'the request as sent');
  t.same(records[1].resolved.principal, { role: 'admin' }, 'the attributes it was decided on');
  t.same(
    records.slice(2).map((record) => [record.allowed, record.request.principal.attributes.role]),
    [
      [false, 'guest'],
      [true, 'admin'],
    ],
    'bulk items in order, decided in a worker',
  );
});
