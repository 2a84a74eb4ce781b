/**
 * The live view's reading of GET /metrics (Prometheus text format): decisions counted by outcome and
 * a latency histogram, turned into rates and percentiles between two readings.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Bucket {
  /** Upper bound in milliseconds (Infinity for `+Inf`). */
  le: number;
  /** Cumulative count of observations at or below `le`. */
  count: number;
}

export interface Reading {
  /** When it was taken, in milliseconds on any monotonic clock. */
  at: number;
  allowed?: number;
  denied?: number;
  latency?: Bucket[];
}

export interface LiveFigures {
  decisionsPerSecond?: number;
  allowed?: number;
  denied?: number;
  p50?: number;
  p90?: number;
  p99?: number;
}

const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
const DECISIONS = /^verdict_decisions(_total)?$/;
const LATENCY_BUCKETS = /^verdict_\w*(duration|latency)\w*_bucket$/;

function number(text: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}

function unescapeLabel(text: string): string {
  return text.replace(/\\(.)/g, (_, character: string) => (character === 'n' ? '\n' : character));
}

export function parsePrometheusText(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = SAMPLE_LINE.exec(line.trim());
    if (match === null) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL)) labels[key!] = unescapeLabel(value!);
    samples.push({ name: match[1]!, labels, value: number(match[3]!) });
  }
  return samples;
}

function sumWhere(samples: Sample[], allowed: string): number | undefined {
  const matching = samples.filter((sample) => DECISIONS.test(sample.name) && sample.labels.allowed === allowed);
  return matching.length === 0 ? undefined : matching.reduce((total, sample) => total + sample.value, 0);
}

/** Samples of a per-route histogram that time decisions; those without a route label all count. */
const isDecisionRoute = (sample: Sample) => sample.labels.route === undefined || sample.labels.route.startsWith('/check');

/** The decision latency histogram, summed over its other labels (status codes, for example), in milliseconds. */
function latencyBuckets(samples: Sample[]): Bucket[] | undefined {
  const names = [...new Set(samples.map((sample) => sample.name).filter((name) => LATENCY_BUCKETS.test(name)))];
  const name = names.find((candidate) => candidate.includes('decision')) ?? names[0];
  if (name === undefined) return undefined;
  const toMilliseconds = /_(milliseconds|ms)_/.test(name) ? 1 : 1000;
  const counts = new Map<number, number>();
  for (const sample of samples) {
    if (sample.name !== name || sample.labels.le === undefined || !isDecisionRoute(sample)) continue;
    const le = number(sample.labels.le) * toMilliseconds;
    counts.set(le, (counts.get(le) ?? 0) + sample.value);
  }
  return [...counts].map(([le, count]) => ({ le, count })).sort((a, b) => a.le - b.le);
}

export function readMetrics(text: string, at: number): Reading {
  const samples = parsePrometheusText(text);
  return { at, allowed: sumWhere(samples, 'true'), denied: sumWhere(samples, 'false'), latency: latencyBuckets(samples) };
}

/** As Prometheus's histogram_quantile: linear interpolation inside the bucket that holds the rank. */
export function quantile(buckets: Bucket[], q: number): number | undefined {
  const total = buckets.at(-1)?.count ?? 0;
  if (total <= 0) return undefined;
  const rank = q * total;
  let lower = { le: 0, count: 0 };
  for (const bucket of buckets) {
    if (bucket.count >= rank) {
      if (bucket.le === Infinity) return lower.le;
      const inBucket = bucket.count - lower.count;
      return inBucket === 0 ? bucket.le : lower.le + ((bucket.le - lower.le) * (rank - lower.count)) / inBucket;
    }
    lower = bucket;
  }
  return lower.le;
}

/** Counters restart at zero with the process: a drop means everything counted is new. */
function increase(previous: number | undefined, current: number): number {
  return previous === undefined || current < previous ? current : current - previous;
}

function bucketIncrease(previous: Bucket[] | undefined, current: Bucket[]): Bucket[] {
  if (previous === undefined || previous.length !== current.length) return current;
  const deltas = current.map((bucket, index) => ({ le: bucket.le, count: bucket.count - previous[index]!.count }));
  return deltas.some((bucket) => bucket.count < 0) ? current : deltas;
}

/**
 * What the live view shows: rates and the allow/deny split over the interval since `previous`, and
 * latency percentiles of the decisions made in it (of all decisions when there is no earlier reading
 * or none were made since).
 */
export function liveFigures(previous: Reading | undefined, current: Reading): LiveFigures {
  const figures: LiveFigures = {};
  if (current.allowed !== undefined || current.denied !== undefined) {
    figures.allowed = increase(previous?.allowed, current.allowed ?? 0);
    figures.denied = increase(previous?.denied, current.denied ?? 0);
    const seconds = previous === undefined ? 0 : (current.at - previous.at) / 1000;
    if (seconds > 0) figures.decisionsPerSecond = (figures.allowed + figures.denied) / seconds;
  }
  if (current.latency !== undefined) {
    const recent = bucketIncrease(previous?.latency, current.latency);
    const buckets = (recent.at(-1)?.count ?? 0) > 0 ? recent : current.latency;
    figures.p50 = quantile(buckets, 0.5);
    figures.p90 = quantile(buckets, 0.9);
    figures.p99 = quantile(buckets, 0.99);
  }
  return figures;
}
