import t, { type Test } from 'tap';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ALLOWED, BY_DEFAULT, BY_GUARD, createLivePolicies, LIVE_POLICIES } from '../helpers/live-traffic.js';
import { startServer, temporaryDataDir, type TestServer } from '../helpers/server.js';
import { keyDigest } from '../../src/admin-keys.js';
import type { Config } from '../../src/config/config.js';
import { ManualClock } from '../helpers/manual-clock.js';

/**
 * GET /admin/live on a real server, with traffic the test sends over HTTP: exact counts of
 * decisions, checks, errors, rules and denials; the worker pool's bulks counted like the front's;
 * masking; authentication; the Prometheus counters per rule.
 */


interface Second {
  at: number;
  allowed: number;
  denied: number;
  check: { count: number; p50_ms: number | null; p99_ms: number | null };
  bulk: { count: number; p50_ms: number | null; p99_ms: number | null };
  errors_4xx: number;
  errors_5xx: number;
  pool: { queue: number; utilization: number } | null;
  feed: { changes: number; lag_max_ms: number | null };
}

const sum = (seconds: Second[], read: (second: Second) => number) => seconds.reduce((total, second) => total + read(second), 0);

/** Reads GET /admin/live until `done` holds for its seconds (the server closes one every second); bounded. */
async function liveWhen(server: TestServer, done: (seconds: Second[]) => boolean, headers: Record<string, string> = {}) {
  for (let attempt = 0; ; attempt++) {
    const live = await server.call('GET', '/admin/live', undefined, headers);
    if (live.status !== 200 || done(live.body.seconds) || attempt === 600) return live;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function serverWithPolicies(t: Test, overrides: Partial<Config> = {}): Promise<TestServer> {
  const server = await startServer(overrides);
  t.teardown(server.close);
  await createLivePolicies(server);
  return server;
}

t.test('the traffic a test sends is counted exactly: decisions, latency, errors, rules, denials', async (t) => {
  // auto: the small bulk is decided on the front, the big one (over 8 KiB) in the worker.
  const server = await serverWithPolicies(t, { evaluation: 'auto', workers: 1 });
  for (const body of [ALLOWED, ALLOWED, ALLOWED, BY_GUARD, BY_DEFAULT]) t.equal((await server.call('POST', '/check', body)).status, 200);
  t.equal((await server.call('POST', '/check', { principal: {} })).status, 422, 'a refused check is an error, not a decision');
  const small = [ALLOWED, BY_GUARD];
  t.equal((await server.call('POST', '/check/bulk', small)).status, 200);
  const big = Array.from({ length: 120 }, (_, index) => [ALLOWED, ALLOWED, BY_DEFAULT][index % 3]!);
  big.push(BY_GUARD);
  t.ok(JSON.stringify(big).length > 8192, 'the big bulk goes to the worker pool');
  t.equal((await server.call('POST', '/check/bulk', big)).status, 200);

  const expected = { allowed: 3 + 1 + 80, denied: 2 + 1 + 41 };
  // A decision is counted before its answer is sent, a response's status and latency after: wait for both.
  const live = await liveWhen(
    server,
    (seconds) =>
      sum(seconds, (s) => s.allowed + s.denied) >= expected.allowed + expected.denied &&
      sum(seconds, (s) => s.check.count + s.bulk.count + s.errors_4xx) >= 5 + 2 + 1,
  );
  t.equal(live.status, 200);
  const seconds: Second[] = live.body.seconds;
  t.same({ allowed: sum(seconds, (s) => s.allowed), denied: sum(seconds, (s) => s.denied) }, expected, 'every decision, once');
  t.equal(sum(seconds, (s) => s.check.count), 5, 'five checks answered');
  t.equal(sum(seconds, (s) => s.bulk.count), 2, 'two bulks answered');
  t.equal(sum(seconds, (s) => s.errors_4xx), 1, 'the refused check');
  t.equal(sum(seconds, (s) => s.errors_5xx), 0);
  for (const second of seconds) {
    for (const latency of [second.check, second.bulk]) {
      t.equal(latency.count === 0, latency.p50_ms === null && latency.p99_ms === null, 'percentiles exactly when something was measured');
      if (latency.count > 0) t.ok(latency.p50_ms! > 0 && latency.p50_ms! <= latency.p99_ms!);
    }
    t.ok(second.pool !== null && second.pool.utilization >= 0 && second.pool.utilization <= 1, 'a pool figure each second');
  }
  t.equal(live.body.window_seconds, 900);
  t.ok(live.body.started_at <= seconds[0]!.at && seconds.at(-1)!.at <= live.body.now);

  t.same(live.body.rules.rules, [
    { policy: 'desk', rule: 'admins', effect: 'allow', decisions: 84 },
    { policy: 'guard', rule: 'no-interns', effect: 'deny', decisions: 3 },
  ]);
  t.same(live.body.rules.policies, [
    { policy: 'desk', allowed: 84, denied: 0 },
    { policy: 'guard', allowed: 0, denied: 3 },
  ]);
  t.same(live.body.rules.default_effect, { allowed: 0, denied: 41 });

  const { recent_denials: recent } = live.body;
  t.same([recent.capacity, recent.values], [200, false]);
  t.equal(recent.denials.length, 44);
  t.same(recent.denials[0], {
    at: recent.denials[0].at,
    principal: { uri: 'user:ivy', attribute_keys: ['department', 'intern'] },
    resource: { uri: 'laptop:7', attribute_keys: ['kind'] },
    action: 'administer',
    reason: 'Rule no-interns denied the action in policy guard',
    revision: 2,
  }, "newest first: the big bulk's last item, denied in the worker, as sent with its values masked");
  t.same(
    recent.denials.slice(0, 3).map((denial: { reason: string }) => denial.reason),
    ['Rule no-interns denied the action in policy guard', 'Action denied by default effect', 'Action denied by default effect'],
  );
  t.notMatch(JSON.stringify(recent), /"hr"|"it"|"laptop"|true/, 'no attribute value anywhere');

  const metrics = (await server.call('GET', '/metrics')).body as string;
  t.match(metrics, /^verdict_rule_decisions_total\{policy="desk",rule="admins",effect="allow"\} 84$/m);
  t.match(metrics, /^verdict_rule_decisions_total\{policy="guard",rule="no-interns",effect="deny"\} 3$/m);
  t.match(metrics, /^verdict_default_effect_decisions_total\{effect="deny"\} 41$/m);
  t.match(metrics, /^verdict_decisions_total\{allowed="true"\} 84$/m, 'the same decisions as the outcome counter');
});

t.test('`since` returns only the newer seconds; `top` bounds the lists; bad queries are 422', async (t) => {
  const server = await serverWithPolicies(t);
  t.equal((await server.call('POST', '/check', ALLOWED)).status, 200);
  t.equal((await server.call('POST', '/check', BY_GUARD)).status, 200);
  const first = await liveWhen(server, (seconds) => sum(seconds, (s) => s.allowed + s.denied) === 2);
  const last = first.body.seconds.at(-1).at;
  t.equal((await server.call('POST', '/check', BY_DEFAULT)).status, 200);
  const newer = await liveWhen(server, (seconds) => sum(seconds, (s) => s.denied) === 2);
  const since = await server.call('GET', `/admin/live?since=${last}&top=1`);
  t.ok(since.body.seconds.every((second: { at: number }) => second.at > last), 'only seconds after `since`');
  t.ok(since.body.seconds.length <= newer.body.seconds.length);
  t.equal(sum(since.body.seconds, (s) => s.denied), 1, 'the denial made after it');
  t.same(since.body.rules.rules, [{ policy: 'desk', rule: 'admins', effect: 'allow', decisions: 1 }], 'one rule at most, ties by name');
  for (const query of ['top=0', 'top=101', 'since=yesterday', 'other=1']) {
    const refused = await server.call('GET', `/admin/live?${query}`);
    t.equal(refused.status, 422, query);
    t.ok(Array.isArray(refused.body.detail), `${query}: the field to fix`);
  }
});

t.test('recent denials: values with --recent-denials-values, none with --recent-denials 0', async (t) => {
  const withValues = await serverWithPolicies(t, { recentDenialsValues: true, recentDenials: 2 });
  for (const body of [BY_GUARD, BY_DEFAULT, BY_GUARD]) await withValues.call('POST', '/check', body);
  const shown = (await withValues.call('GET', '/admin/live')).body.recent_denials;
  t.same([shown.capacity, shown.values, shown.denials.length], [2, true, 2]);
  t.same(shown.denials[0].principal, { uri: 'user:ivy', attributes: { department: 'it', intern: true } });
  t.same(shown.denials[1].principal, { uri: null, attributes: { department: 'hr' } });
  t.same(shown.denials[1].resource, { uri: 'laptop:7', attributes: { kind: 'laptop' } });

  const off = await serverWithPolicies(t, { recentDenials: 0 });
  await off.call('POST', '/check', BY_GUARD);
  await off.call('POST', '/check/bulk', [BY_GUARD, BY_DEFAULT]);
  t.same((await off.call('GET', '/admin/live')).body.recent_denials, { capacity: 0, per_second: 0, values: false, denials: [] });
});

t.test('--recent-denials-rate keeps at most so many denials a second, from the front and from the worker pool', async (t) => {
  const clock = new ManualClock();
  clock.advance(1000 - (clock.now() % 1000));
  const front = await startServer({ recentDenials: 10, recentDenialsRate: 3 }, { clock });
  t.teardown(front.close);
  await createLivePolicies(front);
  const shown = async (server: TestServer) => (await server.call('GET', '/admin/live')).body.recent_denials;
  for (let index = 0; index < 5; index++) t.equal((await front.call('POST', '/check', BY_DEFAULT)).status, 200);
  t.match(await shown(front), { capacity: 10, per_second: 3, denials: { length: 3 } }, 'three of the five denials of one second');
  clock.advance(999);
  await front.call('POST', '/check', BY_DEFAULT);
  t.equal((await shown(front)).denials.length, 3, 'none more before that second is up');
  clock.advance(1);
  t.equal((await front.call('POST', '/check/bulk', [BY_DEFAULT, BY_GUARD, BY_DEFAULT, BY_GUARD])).status, 200);
  t.equal((await shown(front)).denials.length, 6, 'three more of a bulk in the next');

  const pooled = await startServer({ recentDenials: 10, recentDenialsRate: 2, evaluation: 'pool', workers: 1 }, { clock });
  t.teardown(pooled.close);
  await createLivePolicies(pooled);
  t.equal((await pooled.call('POST', '/check/bulk', [BY_DEFAULT, BY_GUARD, BY_DEFAULT, BY_GUARD])).status, 200);
  t.match(await shown(pooled), { per_second: 2, denials: { length: 2 } }, "two of the worker's four");
});

t.test("recent denials keep the action's attributes and the context, masked as the sides are, from the front and from the worker pool", async (t) => {
  const sent = { ...BY_DEFAULT, action: { name: 'administer', attributes: { soft: true } }, context: { ip: '10.1.2.3' } };
  const flat = { ...BY_DEFAULT, action_attributes: { soft: false }, context: { hour: 9 } };
  // Masked: the bulk goes to the worker pool, which tells the front its denials; with values: decided on the front.
  for (const [overrides, masked] of [[{ evaluation: 'pool' as const, workers: 1 }, true], [{ recentDenialsValues: true }, false]] as const) {
    const server = await serverWithPolicies(t, overrides as Partial<Config>);
    t.equal((await server.call('POST', '/check', sent)).status, 200);
    t.equal((await server.call('POST', '/check/bulk', [flat, BY_DEFAULT])).status, 200);
    const { denials } = (await server.call('GET', '/admin/live')).body.recent_denials;
    const parts = (denial: Record<string, unknown>) => ({ action_attributes: denial.action_attributes, action_attribute_keys: denial.action_attribute_keys, context: denial.context, context_keys: denial.context_keys });
    const absent = { action_attributes: undefined, action_attribute_keys: undefined, context: undefined, context_keys: undefined };
    t.same(
      denials.map(parts),
      masked
        ? [absent, { ...absent, action_attribute_keys: ['soft'], context_keys: ['hour'] }, { ...absent, action_attribute_keys: ['soft'], context_keys: ['ip'] }]
        : [absent, { ...absent, action_attributes: { soft: false }, context: { hour: 9 } }, { ...absent, action_attributes: { soft: true }, context: { ip: '10.1.2.3' } }],
      masked ? 'newest first, keys only' : 'newest first, with their values',
    );
    if (masked) t.notMatch(JSON.stringify(denials), /10\.1\.2\.3|"hour":9|true|false/, 'no value of the action or the context');
  }
});

t.test('the change-feed lag of a write made through another server on the same store', async (t) => {
  const dataDir = temporaryDataDir();
  const writer = await startServer({ dataDir });
  const follower = await startServer({ dataDir });
  t.teardown(async () => {
    await writer.close();
    await follower.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  t.equal((await writer.call('POST', '/admin/policies', LIVE_POLICIES[0])).status, 200);
  const live = await liveWhen(follower, (seconds) => sum(seconds, (s) => s.feed.changes) >= 1);
  const changed = (live.body.seconds as Second[]).filter((second) => second.feed.changes > 0);
  t.equal(sum(changed, (s) => s.feed.changes), 1, 'one change applied');
  t.ok(changed[0]!.feed.lag_max_ms! >= 0 && changed[0]!.feed.lag_max_ms! < 60_000, `lag ${changed[0]!.feed.lag_max_ms} ms`);
  t.ok((live.body.seconds as Second[]).filter((second) => second.feed.changes === 0).every((second) => second.feed.lag_max_ms === null));
});

t.test('the admin key decides who reads it; a read key may', async (t) => {
  const directory = temporaryDataDir();
  t.teardown(() => rmSync(directory, { recursive: true, force: true }));
  const keysFile = join(directory, 'keys');
  writeFileSync(keysFile, `watcher read ${keyDigest('watcher-key-0123456789').toString('hex')}\n`);
  const server = await startServer({ adminAuthRequired: true, adminApiKey: 'admin-key', adminKeysFile: keysFile });
  t.teardown(server.close);
  const anonymous = await server.call('GET', '/admin/live');
  t.same([anonymous.status, anonymous.body], [401, { detail: 'Invalid API key. Please provide a valid API key.' }]);
  t.equal((await server.call('GET', '/admin/live', undefined, { 'WAY-API-KEY': 'wrong' })).status, 401);
  t.equal((await server.call('GET', '/admin/live', undefined, { 'WAY-API-KEY': 'admin-key' })).status, 200);
  const asReader = await server.call('GET', '/admin/live', undefined, { 'WAY-API-KEY': 'watcher-key-0123456789' });
  t.equal(asReader.status, 200, 'a read key reads the live view');
  t.same(Object.keys(asReader.body).sort(), ['now', 'recent_denials', 'rules', 'seconds', 'started_at', 'window_seconds']);
});
