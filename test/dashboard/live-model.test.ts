import t from 'tap';
import { clock, figure, hasValues, liveCharts, mergeSeconds, niceScale, summarize, timeTicks, type LiveSecond } from '../../dashboard/src/live-model.js';
import { replayOf } from '../../dashboard/src/replay.js';

const second = (at: number, fields: Partial<LiveSecond> = {}): LiveSecond => ({
  at,
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
  ...fields,
});

t.test('polls merge: newer seconds are added once, seconds past the window are dropped', async (t) => {
  const held = [second(1000), second(2000)];
  const merged = mergeSeconds(held, [second(2000), second(3000), second(4000)], 4000, 2);
  t.same(merged.map((s) => s.at), [3000, 4000], 'the window is two seconds: 2000 is past it, and was not added twice');
  t.same(mergeSeconds([], [second(1000)], 1000, 900).map((s) => s.at), [1000]);
});

t.test('the window sums, and the rate of its last seconds (longer intervals weigh what they lasted)', async (t) => {
  const seconds = [
    second(1000, { allowed: 10, denied: 2, check: { count: 12, p50_ms: 0.1, p99_ms: 0.2 }, errors_4xx: 1 }),
    second(3000, { seconds: 2, allowed: 4, denied: 0, bulk: { count: 1, p50_ms: 3, p99_ms: 3 }, errors_5xx: 1 }),
  ];
  t.same(summarize(seconds), { allowed: 14, denied: 2, checks: 12, bulks: 1, errors4xx: 1, errors5xx: 1, recentRate: 16 / 3 });
  t.same(summarize([]).recentRate, undefined, 'no rate over nothing');
  t.equal(summarize(seconds, 1).recentRate, 2, 'the last interval alone: 4 decisions over 2 seconds');
});

t.test('chart series: rates per second, percentiles as measured, gaps where nothing was', async (t) => {
  const seconds = [
    second(1000, { allowed: 6, denied: 2, check: { count: 8, p50_ms: 0.1, p99_ms: 0.5 } }),
    second(3000, { seconds: 2, allowed: 4 }),
  ];
  t.same(liveCharts.decisions(seconds), {
    times: [1000, 3000],
    series: [
      { label: 'allowed', tone: 'allowed', values: [6, 2] },
      { label: 'denied', tone: 'denied', values: [2, 0] },
    ],
  });
  const latency = liveCharts.latency(seconds, 'check');
  t.same(latency.series.map((line) => line.values), [
    [0.1, null],
    [0.5, null],
  ]);
  t.equal(hasValues(latency), true);
  t.equal(hasValues(liveCharts.latency(seconds, 'bulk')), false, 'no bulk answered: nothing to draw');
  t.equal(hasValues(liveCharts.poolQueue(seconds)), false, 'no pool: nothing to draw');
  t.same(liveCharts.poolUtilization([second(1000, { pool: { queue: 2, utilization: 0.25 } })]).series[0]!.values, [25]);
});

t.test('axes: round maxima and ticks, times on round seconds or minutes', async (t) => {
  t.same(niceScale(0), { max: 1, ticks: [0, 0.25, 0.5, 0.75, 1] }, 'an empty chart still has an axis');
  t.same(niceScale(7), { max: 8, ticks: [0, 2, 4, 6, 8] });
  t.same(niceScale(100), { max: 100, ticks: [0, 25, 50, 75, 100] });
  t.same(niceScale(0.37), { max: 0.4, ticks: [0, 0.1, 0.2, 0.3, 0.4] });
  t.same(niceScale(1234), { max: 1500, ticks: [0, 500, 1000, 1500] });
  const start = Date.UTC(2024, 5, 1, 12, 0, 7);
  t.same(timeTicks(start, start + 15 * 60_000), [5, 10, 15].map((minute) => Date.UTC(2024, 5, 1, 12, minute)), 'fifteen minutes: every five');
  t.same(timeTicks(start, start + 40_000), [10, 20, 30, 40].map((s) => Date.UTC(2024, 5, 1, 12, 0, s)), 'forty seconds: every ten');
  t.match(clock(start, true), /^\d\d:\d\d:07$/);
  t.same([figure(0), figure(0.0523), figure(12.345), figure(1234.6)], ['0', '0.0523', '12.3', '1,235']);
});

t.test('a recent denial fills the playground: values when kept, keys named when masked', async (t) => {
  const masked = replayOf({
    at: 0,
    principal: { uri: 'user:ivy', attribute_keys: ['intern'] },
    resource: { uri: null, attribute_keys: [] },
    action: 'administer',
    reason: 'r',
    revision: 1,
  });
  t.same(masked, {
    principal: { uri: 'user:ivy', attributes: '{"intern":null}' },
    resource: { uri: '', attributes: '' },
    action: 'administer',
    actionAttributes: '',
    context: '',
    maskedKeys: ['principal intern'],
  });
  const kept = replayOf({
    at: 0,
    principal: { uri: null, attributes: { intern: true } },
    resource: { uri: 'laptop:7', attributes: {} },
    action: 'administer',
    reason: 'r',
    revision: 1,
  });
  t.same(kept, { principal: { uri: '', attributes: '{"intern":true}' }, resource: { uri: 'laptop:7', attributes: '' }, action: 'administer', actionAttributes: '', context: '', maskedKeys: [] });
  const withActionAndContext = (values: boolean) =>
    replayOf({
      at: 0,
      principal: { uri: 'user:ivy', attributes: {} },
      resource: { uri: null, attributes: {} },
      action: 'delete',
      ...(values ? { action_attributes: { soft: true }, context: { ip: '10.1.2.3' } } : { action_attribute_keys: ['soft'], context_keys: ['ip'] }),
      reason: 'r',
      revision: 1,
    });
  t.same(withActionAndContext(true), { principal: { uri: 'user:ivy', attributes: '' }, resource: { uri: '', attributes: '' }, action: 'delete', actionAttributes: '{"soft":true}', context: '{"ip":"10.1.2.3"}', maskedKeys: [] });
  t.same(
    withActionAndContext(false),
    { principal: { uri: 'user:ivy', attributes: '' }, resource: { uri: '', attributes: '' }, action: 'delete', actionAttributes: '{"soft":null}', context: '{"ip":null}', maskedKeys: ['action attribute soft', 'context ip'] },
    "the action's attributes and the context masked as the sides are",
  );
});
