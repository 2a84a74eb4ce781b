/** The smallest latency told apart from zero, in milliseconds (one microsecond). */
const SMALLEST_MS = 0.001;
/** Buckets per doubling: each bucket is about 9% wider than the one below it. */
const BUCKETS_PER_DOUBLING = 8;
/** Up to about 60 seconds; anything slower lands in the last bucket. */
const LAST_BUCKET = Math.ceil(Math.log2(60_000 / SMALLEST_MS) * BUCKETS_PER_DOUBLING);

/** The upper bound of bucket `index`, in milliseconds. */
export const bucketBound = (index: number) => SMALLEST_MS * 2 ** (index / BUCKETS_PER_DOUBLING);

/**
 * Latencies of one second, counted in fixed buckets of geometrically growing width, so that
 * recording one costs a logarithm and an increment (no allocation) and a percentile read from it
 * is off by at most one bucket's width (9%).
 */
export class LatencyHistogram {
  private readonly counts = new Float64Array(LAST_BUCKET + 1);
  count = 0;

  record(milliseconds: number): void {
    const index = milliseconds <= SMALLEST_MS ? 0 : Math.min(LAST_BUCKET, Math.ceil(Math.log2(milliseconds / SMALLEST_MS) * BUCKETS_PER_DOUBLING));
    this.counts[index]!++;
    this.count++;
  }

  /** The upper bound of the bucket holding the q-quantile (0 < q ≤ 1), in milliseconds; undefined when nothing was recorded. */
  quantile(q: number): number | undefined {
    if (this.count === 0) return undefined;
    const rank = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    for (let index = 0; index < this.counts.length; index++) {
      seen += this.counts[index]!;
      if (seen >= rank) return bucketBound(index);
    }
    return bucketBound(LAST_BUCKET);
  }

  reset(): void {
    this.counts.fill(0);
    this.count = 0;
  }
}
