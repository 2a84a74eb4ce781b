import t from 'tap';
import { compile, evaluate } from '../../src/engine/index.js';
import type { CheckInput } from '../../src/requests/check-request.js';
import { LiveCounters } from '../../src/live/live-counters.js';
import { LiveWindow, WINDOW_SECONDS, type PoolGauges } from '../../src/live/live-window.js';
import { MAX_COUNTED_RULES, RuleTally } from '../../src/live/rule-tally.js';
import { RecentDenials } from '../../src/live/recent-denials.js';
import { LatencyHistogram } from '../../src/live/latency-histogram.js';
import { tallyBulk } from '../../src/live/bulk-tally.js';
import { cond, policy, rule } from '../engine/helpers.js';

/**
 * The live view's aggregates against known sequences of decisions, responses and store changes,
 * decided by the real engine, with a clock the test moves (no sleeping, no timer).
 */

const START = Date.UTC(2024, 5, 1, 12, 0, 0);

const POLICIES = [
  policy('desk', [rule('admins', { principal: [cond('==', 'it', 'attributes.department')], actions: ['administer'] })]),
  policy('guard', [rule('no-interns', { effect: 'deny', principal: [cond('==', true, 'attributes.intern')], actions: ['administer'] })]),
];
const SNAPSHOT = compile(POLICIES, 7);

const input = (attributes: Record<string, unknown>, action = 'administer', uri?: string): CheckInput => ({
  principal: { uri, attributes: new Map(Object.entries(attributes)) },
  resource: { uri: 'laptop:1', attributes: new Map([['kind', 'laptop']]) },
  action,
});
const ALLOWED_BY_ADMINS = input({ department: 'it' });
const DENIED_BY_GUARD = input({ department: 'it', intern: true });
const DENIED_BY_DEFAULT = input({ department: 'hr' }, 'administer', 'user:bob');

function live(options: { clock?: () => number; pool?: PoolGauges; denials?: RecentDenials } = {}) {
  const counters = new LiveCounters(new RuleTally(START), options.denials);
  const window = new LiveWindow(counters, options.pool, options.clock ?? (() => START));
  const decide = (check: CheckInput, times = 1) => {
    for (let i = 0; i < times; i++) counters.decided(check, evaluate(SNAPSHOT, check), SNAPSHOT.revision);
  };
  return { counters, window, decide };
}

t.test('one second of known decisions, responses and changes becomes one exact row', async (t) => {
  const { counters, window, decide } = live();
  decide(ALLOWED_BY_ADMINS, 3);
  decide(DENIED_BY_GUARD, 2);
  decide(DENIED_BY_DEFAULT);
  for (const milliseconds of [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 8]) counters.responded(200, milliseconds, 'check');
  counters.responded(200, 2, 'bulk');
  counters.responded(422, 0.05, 'check');
  counters.responded(404, 0.05, undefined);
  counters.responded(503, 40, 'bulk');
  counters.feedApplied(0.03);
  counters.feedApplied(0.12);
  counters.schemaViolated(1);
  counters.schemaViolated(2);
  window.close(START + 1000);

  const [second] = window.seconds();
  t.same(second, {
    at: START + 1000,
    seconds: 1,
    allowed: 3,
    denied: 3,
    check: { count: 10, p50_ms: second!.check.p50_ms, p99_ms: second!.check.p99_ms },
    bulk: { count: 1, p50_ms: second!.bulk.p50_ms, p99_ms: second!.bulk.p99_ms },
    errors_4xx: 2,
    errors_5xx: 1,
    schema_violations: 3,
    pool: null,
    feed: { changes: 2, lag_max_ms: 120 },
  });
  t.ok(second!.check.p50_ms! >= 0.1 && second!.check.p50_ms! <= 0.1 * 1.09, `check p50 ${second!.check.p50_ms} is 0.1 ms within a bucket`);
  t.ok(second!.check.p99_ms! >= 8 && second!.check.p99_ms! <= 8 * 1.09, `check p99 ${second!.check.p99_ms} is the slow one`);
  t.ok(second!.bulk.p50_ms! >= 2 && second!.bulk.p50_ms! <= 2 * 1.09, 'a failed bulk (503) is an error, not a latency');
});

t.test('a second with nothing in it has zero counts and no percentiles', async (t) => {
  const { counters, window, decide } = live();
  decide(ALLOWED_BY_ADMINS);
  counters.responded(200, 1, 'check');
  window.close(START + 1000);
  window.close(START + 2000);
  const [, empty] = window.seconds();
  t.same(empty, {
    at: START + 2000,
    seconds: 1,
    allowed: 0,
    denied: 0,
    check: { count: 0, p50_ms: null, p99_ms: null },
    bulk: { count: 0, p50_ms: null, p99_ms: null },
    errors_4xx: 0,
    errors_5xx: 0,
    schema_violations: 0,
    pool: null,
    feed: { changes: 0, lag_max_ms: null },
  });
});

t.test('a late close covers the whole interval; the ring keeps the last 900 and answers after `since`', async (t) => {
  const { window, decide } = live();
  decide(ALLOWED_BY_ADMINS, 5);
  window.close(START + 3500);
  t.same(
    window.seconds().map(({ at, seconds, allowed }) => ({ at, seconds, allowed })),
    [{ at: START + 3500, seconds: 3.5, allowed: 5 }],
  );
  for (let second = 1; second <= WINDOW_SECONDS + 5; second++) {
    decide(ALLOWED_BY_ADMINS, second);
    window.close(START + 3500 + second * 1000);
  }
  const kept = window.seconds();
  t.equal(kept.length, WINDOW_SECONDS);
  t.same([kept[0]!.allowed, kept.at(-1)!.allowed], [6, WINDOW_SECONDS + 5], 'the oldest six closed seconds are gone');
  t.ok(kept.every((second, index) => index === 0 || second.at - kept[index - 1]!.at === 1000), 'oldest first, one second apart');
  t.same(
    window.seconds(START + 3500 + (WINDOW_SECONDS + 3) * 1000).map((second) => second.allowed),
    [WINDOW_SECONDS + 4, WINDOW_SECONDS + 5],
  );
});

t.test('pool utilisation is the share of worker time busy in each interval (pool gauges given by the test)', async (t) => {
  const pool = { queueSize: 0, threads: 2, busyMilliseconds: 500 };
  const { window } = live({ pool });
  pool.busyMilliseconds = 1500;
  pool.queueSize = 3;
  window.close(START + 1000);
  pool.busyMilliseconds = 1500;
  pool.queueSize = 0;
  window.close(START + 2000);
  t.same(
    window.seconds().map((second) => second.pool),
    [
      { queue: 3, utilization: 0.5 },
      { queue: 0, utilization: 0 },
    ],
  );
});

t.test('top rules: decisions by rule, by policy and by default effect, in a window counted by the minute', async (t) => {
  const { counters, window, decide } = live();
  decide(ALLOWED_BY_ADMINS, 4);
  decide(DENIED_BY_GUARD, 2);
  decide(DENIED_BY_DEFAULT, 3);
  decide(input({ department: 'it' }, 'read'), 1); // no rule covers 'read': a default denial
  t.same(counters.rules.inWindow(10), {
    since: START,
    rules: [
      { policy: 'desk', rule: 'admins', effect: 'allow', decisions: 4 },
      { policy: 'guard', rule: 'no-interns', effect: 'deny', decisions: 2 },
    ],
    policies: [
      { policy: 'desk', allowed: 4, denied: 0 },
      { policy: 'guard', allowed: 0, denied: 2 },
    ],
    default_effect: { allowed: 0, denied: 4 },
  });
  t.same(counters.rules.inWindow(1).rules.length, 1, 'limited to `top`');

  // Sixteen more minutes, one guard denial in each: the window keeps fifteen whole minutes and the current one.
  for (let minute = 1; minute <= 16; minute++) {
    for (let second = 1; second <= 60; second++) {
      if (second === 30) decide(DENIED_BY_GUARD);
      window.close(START + (minute - 1) * 60_000 + second * 1000);
    }
  }
  const later = counters.rules.inWindow(10);
  t.equal(later.since, START + 60_000 * 1, 'the first minute (with the early decisions) is gone');
  t.same(later.rules, [{ policy: 'guard', rule: 'no-interns', effect: 'deny', decisions: 15 }]);
  t.same(later.default_effect, { allowed: 0, denied: 0 });
  decide(ALLOWED_BY_ADMINS);
  t.same(counters.rules.inWindow(10).rules.map((counted) => counted.decisions), [15, 1], 'the current minute counts before it closes');
  t.same(
    counters.rules.totals().map(({ decider, total }) => [decider.kind === 'rule' ? `${decider.policy}/${decider.rule}` : `default ${decider.effect}`, total]),
    [
      ['desk/admins', 5],
      ['guard/no-interns', 18],
      ['default deny', 4],
    ],
    'totals since start, for Prometheus',
  );
});

t.test('decisions with no policies count as default denials; rules past the bound count together as (other)', async (t) => {
  const tally = new RuleTally(START);
  tally.count(evaluate(compile([], 1), ALLOWED_BY_ADMINS));
  const many = compile(
    Array.from({ length: MAX_COUNTED_RULES + 2 }, (_, index) => policy(`p${index}`, [rule('r', { principal: [cond('==', index, 'attributes.n')] })])),
    2,
  );
  for (let index = 0; index < MAX_COUNTED_RULES + 2; index++) tally.count(evaluate(many, input({ n: index }, 'access')));
  const window = tally.inWindow(MAX_COUNTED_RULES + 1);
  t.same(window.default_effect, { allowed: 0, denied: 1 });
  t.equal(window.rules.length, MAX_COUNTED_RULES + 1);
  t.same(window.rules[0], { policy: '(other)', rule: '(other)', effect: 'allow', decisions: 2 });
  t.ok(window.rules.slice(1).every((counted) => counted.decisions === 1));
});

t.test('recent denials: the last N, newest first, values masked unless asked for', async (t) => {
  const masked = new RecentDenials(2, false);
  const { decide } = live({ denials: masked });
  decide(DENIED_BY_GUARD);
  decide(ALLOWED_BY_ADMINS);
  decide(DENIED_BY_DEFAULT);
  decide(DENIED_BY_GUARD);
  const denials = masked.list();
  t.equal(denials.length, 2, 'bounded');
  t.same(denials.map(({ at: _at, ...denial }) => denial), [
    {
      principal: { uri: null, attribute_keys: ['department', 'intern'] },
      resource: { uri: 'laptop:1', attribute_keys: ['kind'] },
      action: 'administer',
      reason: 'Rule no-interns denied the action in policy guard',
      revision: 7,
    },
    {
      principal: { uri: 'user:bob', attribute_keys: ['department'] },
      resource: { uri: 'laptop:1', attribute_keys: ['kind'] },
      action: 'administer',
      reason: 'Action denied by default effect',
      revision: 7,
    },
  ]);
  t.notMatch(JSON.stringify(denials), /"hr"|"laptop"|true/, 'no value shows');

  const withValues = new RecentDenials(5, true);
  live({ denials: withValues }).decide(DENIED_BY_DEFAULT);
  t.same(withValues.list()[0]!.principal, { uri: 'user:bob', attributes: { department: 'hr' } });
  t.same(withValues.list()[0]!.resource, { uri: 'laptop:1', attributes: { kind: 'laptop' } });
});

t.test("a worker's bulk tally counts as the same decisions made on the front", async (t) => {
  const checks = [ALLOWED_BY_ADMINS, DENIED_BY_GUARD, DENIED_BY_DEFAULT, ALLOWED_BY_ADMINS, DENIED_BY_GUARD];
  const front = live({ denials: new RecentDenials(10, true) });
  for (const check of checks) front.decide(check);
  const pooled = live({ denials: new RecentDenials(10, true) });
  const tally = tallyBulk(checks, checks.map((check) => evaluate(SNAPSHOT, check)), 2);
  pooled.counters.decidedInWorker(tally, SNAPSHOT.revision);

  t.same([pooled.counters.allowed, pooled.counters.denied], [2, 3]);
  t.same(pooled.counters.rules.inWindow(10), front.counters.rules.inWindow(10));
  const reasons = (denials: RecentDenials) => denials.list().map((denial) => denial.reason);
  t.same(reasons(pooled.counters.denials!), reasons(front.counters.denials!).slice(0, 2), "the bulk's last two denials, newest first");
});

t.test('latency percentiles are within one bucket (9%) of the exact ones', async (t) => {
  const histogram = new LatencyHistogram();
  t.equal(histogram.quantile(0.5), undefined, 'nothing recorded, no percentile');
  const values = Array.from({ length: 1000 }, (_, index) => 0.01 * (index + 1)); // 0.01 … 10 ms
  for (const value of values) histogram.record(value);
  for (const [q, exact] of [[0.5, 5], [0.99, 9.9], [1, 10]] as const) {
    const found = histogram.quantile(q)!;
    t.ok(found >= exact && found <= exact * 1.09, `p${q * 100}: ${found} for ${exact}`);
  }
  histogram.record(0);
  histogram.record(1e9);
  t.ok(histogram.quantile(1)! >= 60_000, 'anything slower than a minute lands in the last bucket');
  histogram.reset();
  t.equal(histogram.count, 0);
  t.equal(histogram.quantile(0.5), undefined);
});

t.test('the checks since a time count the seconds closed after it and the second under way', async (t) => {
  const { counters, window, decide } = live();
  decide(ALLOWED_BY_ADMINS, 2);
  window.close(START + 1000);
  decide(DENIED_BY_GUARD);
  counters.responded(422, 0.05, 'check');
  window.close(START + 2000);
  t.equal(window.checksSince(START + 1000), 2, 'the second closed after it: a denial and a refusal');
  t.equal(window.checksSince(START), 4);
  decide(DENIED_BY_DEFAULT);
  t.equal(window.checksSince(START + 2000), 1, 'the second under way');
  window.close(START + 3000);
  window.close(START + 4000);
  t.equal(window.checksSince(START + 3000), 0, 'quiet since');
});
