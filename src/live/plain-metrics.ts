import type { Metric, MetricValueWithName, Registry } from 'prom-client';

/**
 * Metrics counted on the request path: each update is plain arithmetic on numbers held here, and
 * prom-client reads them only when /metrics is scraped. (prom-client's own labelled updates
 * validate and hash the labels on every call: about 2 µs for a histogram observation, a tenth of
 * what a whole check costs.) The exposition is the one prom-client gives its own counters and
 * histograms: label sets in the order they were first counted, listed from their first count on.
 */

type Labels = Record<string, string>;

/** What prom-client's registry reads from a metric when it is scraped. */
abstract class ScrapedMetric {
  abstract readonly type: 'counter' | 'histogram';
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  protected abstract values(): MetricValueWithName<string>[];

  get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: MetricValueWithName<string>[] }> {
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.values() });
  }

  abstract reset(): void;
}

/** One label set of a PlainCounter. */
export class Count {
  value = 0;
  listed = false;

  constructor(
    readonly labels: Labels,
    private readonly listedIn: Count[],
  ) {}

  inc(by = 1): void {
    if (!this.listed) {
      this.listed = true;
      this.listedIn.push(this);
    }
    this.value += by;
  }
}

/** A counter whose label sets are bound once (`bind`) and counted with `inc`. */
export class PlainCounter extends ScrapedMetric {
  readonly type = 'counter';
  private listed: Count[] = [];
  private readonly bound: Count[] = [];

  bind(labels: Labels): Count {
    const count = new Count(labels, this.listed);
    this.bound.push(count);
    return count;
  }

  protected values(): MetricValueWithName<string>[] {
    return this.listed.map(({ labels, value }) => ({ labels, value }));
  }

  reset(): void {
    this.listed.length = 0;
    for (const count of this.bound) {
      count.value = 0;
      count.listed = false;
    }
  }
}

/** One label set of a PlainHistogram. */
export class Observations {
  /** Observations per bucket (not cumulative); the last slot holds those above every bound. */
  readonly perBucket: Float64Array;
  sum = 0;
  count = 0;
  listed = false;

  constructor(
    readonly labels: Labels,
    private readonly bounds: readonly number[],
    private readonly listedIn: Observations[],
  ) {
    this.perBucket = new Float64Array(bounds.length + 1);
  }

  /** From now on it is scraped, observed or not. */
  list(): void {
    this.listed = true;
    this.listedIn.push(this);
  }

  observe(value: number): void {
    if (!this.listed) this.list();
    let bucket = 0;
    while (bucket < this.bounds.length && value > this.bounds[bucket]!) bucket++;
    this.perBucket[bucket]!++;
    this.sum += value;
    this.count++;
  }
}

/** A histogram whose label sets are bound once (`bind`) and observed with `observe`. */
export class PlainHistogram extends ScrapedMetric {
  readonly type = 'histogram';
  private readonly listed: Observations[] = [];
  private readonly bound: Observations[] = [];

  constructor(
    name: string,
    help: string,
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    super(name, help, registry);
  }

  bind(labels: Labels): Observations {
    const observations = new Observations(labels, this.bounds, this.listed);
    this.bound.push(observations);
    return observations;
  }

  /**
   * The one label set of a histogram without labels: scraped from the start, with its zeros, as
   * prom-client scrapes such a histogram until it is reset.
   */
  unlabelled(): Observations {
    const observations = this.bind({});
    observations.list();
    return observations;
  }

  protected values(): MetricValueWithName<string>[] {
    return this.listed.flatMap(({ labels, perBucket, sum, count }) => {
      let cumulative = 0;
      const buckets = this.bounds.map((bound, index) => {
        cumulative += perBucket[index]!;
        return { metricName: `${this.name}_bucket`, labels: { le: bound, ...labels }, value: cumulative };
      });
      return [
        ...buckets,
        { metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...labels }, value: count },
        { metricName: `${this.name}_sum`, labels, value: sum },
        { metricName: `${this.name}_count`, labels, value: count },
      ];
    });
  }

  reset(): void {
    this.listed.length = 0;
    for (const observations of this.bound) {
      observations.perBucket.fill(0);
      observations.sum = 0;
      observations.count = 0;
      observations.listed = false;
    }
  }
}
