import t from 'tap';
import { Counter, Histogram, Registry } from 'prom-client';
import { PlainCounter, PlainHistogram } from '../../src/live/plain-metrics.js';

// The plain-number metrics of the request path are scraped exactly as prom-client's own counter and
// histogram would be after the same updates: a scrape cannot tell which kept the counts.

const BOUNDS = [0.001, 0.01, 0.1, 1];

t.test('a histogram: the same exposition as prom-client after the same observations', async (t) => {
  const theirs = new Registry();
  const ours = new Registry();
  const histogram = new Histogram({ name: 'latency_seconds', help: 'How long', labelNames: ['route', 'status_code'] as const, buckets: BOUNDS, registers: [theirs] });
  const plain = new PlainHistogram('latency_seconds', 'How long', BOUNDS, ours);
  const bound = { ok: plain.bind({ route: '/check', status_code: '200' }), refused: plain.bind({ route: '/check', status_code: '422' }) };
  plain.bind({ route: '/never', status_code: '200' });
  t.equal(await ours.metrics(), await theirs.metrics(), 'nothing observed: no label set listed');
  // Denials first: label sets are listed in the order they were first observed.
  const observations: [keyof typeof bound, number][] = [['refused', 0.02], ['ok', 0.0005], ['ok', 0.001], ['ok', 0.5], ['ok', 3], ['refused', 0.01]];
  for (const [outcome, seconds] of observations) {
    histogram.labels('/check', outcome === 'ok' ? '200' : '422').observe(seconds);
    bound[outcome].observe(seconds);
  }
  const scraped = await ours.metrics();
  t.equal(scraped, await theirs.metrics());
  t.match(scraped, 'latency_seconds_bucket{le="0.001",route="/check",status_code="200"} 2', 'a bound is inclusive');
  ours.resetMetrics();
  theirs.resetMetrics();
  bound.ok.observe(0.05);
  histogram.labels('/check', '200').observe(0.05);
  t.equal(await ours.metrics(), await theirs.metrics(), 'after a reset');
});

t.test('a histogram without labels: listed with its zeros from the start, as prom-client lists it until a reset', async (t) => {
  const theirs = new Registry();
  const ours = new Registry();
  const histogram = new Histogram({ name: 'bulk_checks', help: 'Checks per bulk', buckets: [1, 10, 100], registers: [theirs] });
  const plain = new PlainHistogram('bulk_checks', 'Checks per bulk', [1, 10, 100], ours).unlabelled();
  const scraped = await ours.metrics();
  t.equal(scraped, await theirs.metrics(), 'nothing observed');
  t.match(scraped, 'bulk_checks_bucket{le="1"} 0', 'its zeros listed');
  for (const size of [3, 100, 1000]) {
    histogram.observe(size);
    plain.observe(size);
  }
  t.equal(await ours.metrics(), await theirs.metrics(), 'after observations');
  ours.resetMetrics();
  theirs.resetMetrics();
  t.equal(await ours.metrics(), await theirs.metrics(), 'after a reset: not listed');
  histogram.observe(7);
  plain.observe(7);
  t.equal(await ours.metrics(), await theirs.metrics(), 'observed after a reset');
});

t.test('a counter: the same exposition as prom-client after the same increments', async (t) => {
  const theirs = new Registry();
  const ours = new Registry();
  const counter = new Counter({ name: 'decisions_total', help: 'Decisions', labelNames: ['allowed'] as const, registers: [theirs] });
  const plain = new PlainCounter('decisions_total', 'Decisions', ours);
  const [allowed, denied] = [plain.bind({ allowed: 'true' }), plain.bind({ allowed: 'false' })];
  t.equal(await ours.metrics(), await theirs.metrics(), 'nothing counted: no label set listed');
  denied.inc();
  counter.labels('false').inc();
  allowed.inc(0);
  counter.labels('true').inc(0);
  t.equal(await ours.metrics(), await theirs.metrics(), 'a count of 0 is listed once counted');
  allowed.inc(41);
  counter.labels('true').inc(41);
  denied.inc();
  counter.labels('false').inc();
  const scraped = await ours.metrics();
  t.equal(scraped, await theirs.metrics());
  t.match(scraped, 'decisions_total{allowed="true"} 41');
});
