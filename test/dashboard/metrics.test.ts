import t from 'tap';
import { liveFigures, parsePrometheusText, quantile, readMetrics } from '../../dashboard/src/metrics.js';

const SCRAPE = `# HELP verdict_decisions_total Decisions made.
# TYPE verdict_decisions_total counter
verdict_decisions_total{allowed="true"} 30
verdict_decisions_total{allowed="false"} 10
# TYPE verdict_decision_duration_seconds histogram
verdict_decision_duration_seconds_bucket{route="/check",le="0.001"} 20
verdict_decision_duration_seconds_bucket{route="/check",le="0.01"} 36
verdict_decision_duration_seconds_bucket{route="/check",le="+Inf"} 40
verdict_decision_duration_seconds_sum{route="/check"} 0.12
verdict_decision_duration_seconds_count{route="/check"} 40
process_cpu_seconds_total 1.5
`;

t.test('samples keep their names, labels (unescaped) and values, and skip comments', async (t) => {
  const samples = parsePrometheusText('# HELP x y\nup 1\nlabelled{path="a\\"b",le="+Inf"} 2.5 1700000000000\n\n');
  t.same(samples, [
    { name: 'up', labels: {}, value: 1 },
    { name: 'labelled', labels: { path: 'a"b', le: '+Inf' }, value: 2.5 },
  ]);
});

t.test('a reading holds the decisions by outcome and the latency histogram in milliseconds', async (t) => {
  const reading = readMetrics(SCRAPE, 1000);
  t.equal(reading.allowed, 30);
  t.equal(reading.denied, 10);
  t.same(reading.latency, [
    { le: 1, count: 20 },
    { le: 10, count: 36 },
    { le: Infinity, count: 40 },
  ]);
});

t.test('a histogram split by route is summed by bucket over the decision routes only', async (t) => {
  const text = [
    'verdict_http_request_duration_seconds_bucket{route="/check",le="0.5"} 1',
    'verdict_http_request_duration_seconds_bucket{route="/check/bulk",le="0.5"} 2',
    'verdict_http_request_duration_seconds_bucket{route="/admin/policies",le="0.5"} 7',
  ].join('\n');
  t.same(readMetrics(text, 0).latency, [{ le: 500, count: 3 }]);
});

t.test('text without Verdict decision metrics reads as nothing', async (t) => {
  t.same(readMetrics('process_cpu_seconds_total 1\n', 0), { at: 0, allowed: undefined, denied: undefined, latency: undefined });
});

t.test('quantiles interpolate inside the bucket that holds the rank', async (t) => {
  const buckets = [
    { le: 1, count: 20 },
    { le: 10, count: 36 },
    { le: Infinity, count: 40 },
  ];
  t.equal(quantile(buckets, 0.5), 1);
  t.equal(quantile(buckets, 0.7), 1 + (9 * 8) / 16);
  t.equal(quantile(buckets, 0.99), 10, 'the +Inf bucket answers with the highest finite bound');
  t.equal(quantile([{ le: Infinity, count: 0 }], 0.5), undefined, 'no observations, no quantile');
});

t.test('between two readings: the rate, the split and the latency of the new decisions only', async (t) => {
  const first = readMetrics(SCRAPE, 1000);
  const second = readMetrics(
    SCRAPE.replace('{allowed="true"} 30', '{allowed="true"} 36')
      .replace('{allowed="false"} 10', '{allowed="false"} 14')
      .replace('le="0.01"} 36', 'le="0.01"} 46')
      .replace('le="+Inf"} 40', 'le="+Inf"} 50'),
    3000,
  );
  const figures = liveFigures(first, second);
  t.equal(figures.decisionsPerSecond, 5);
  t.equal(figures.allowed, 6);
  t.equal(figures.denied, 4);
  t.equal(figures.p50, 1 + (9 * 5) / 10, 'all ten new observations fell between 1 and 10 ms');
});

t.test('the first reading gives totals and no rate; a counter reset counts from zero', async (t) => {
  const first = readMetrics(SCRAPE, 1000);
  t.same(liveFigures(undefined, first), { allowed: 30, denied: 10, p50: 1, p90: 10, p99: 10 });
  const restarted = readMetrics('verdict_decisions_total{allowed="true"} 2\nverdict_decisions_total{allowed="false"} 0\n', 2000);
  t.same(liveFigures(first, restarted), { allowed: 2, denied: 0, decisionsPerSecond: 2 });
});
