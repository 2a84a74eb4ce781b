import type { LatencyHistogram } from './latency-histogram.js';
import type { LiveCounters } from './live-counters.js';
import type { LatencySummary, LiveSecond } from '../schemas/live.js';

/** Seconds of history kept: the live view's window. */
export const WINDOW_SECONDS = 900;

/** What the window reads of the worker pool once a second. */
export interface PoolGauges {
  readonly queueSize: number;
  readonly threads: number;
  /** Worker time spent on tasks since the pool started, in ms. */
  readonly busyMilliseconds: number;
}

const toMicroseconds = (milliseconds: number | undefined) => (milliseconds === undefined ? null : Math.round(milliseconds * 1000) / 1000);

function summary(histogram: LatencyHistogram): LatencySummary {
  return { count: histogram.count, p50_ms: toMicroseconds(histogram.quantile(0.5)), p99_ms: toMicroseconds(histogram.quantile(0.99)) };
}

/**
 * The last WINDOW_SECONDS of per-second aggregates, in a ring. `close` (every second, from a timer
 * started by `start`, or called by tests with the time they choose) turns what LiveCounters
 * counted since the last close into one LiveSecond and starts the next.
 */
export class LiveWindow {
  private readonly ring: (LiveSecond | undefined)[] = new Array(WINDOW_SECONDS).fill(undefined);
  private next = 0;
  private lastClose: number;
  private poolBusyAtLastClose: number;
  private timer: NodeJS.Timeout | undefined;
  readonly startedAt: number;

  constructor(
    private readonly counters: LiveCounters,
    private readonly pool: PoolGauges | undefined,
    private readonly clock: () => number = Date.now,
  ) {
    this.startedAt = this.lastClose = clock();
    this.poolBusyAtLastClose = pool?.busyMilliseconds ?? 0;
  }

  start(): void {
    this.timer ??= setInterval(() => this.close(), 1000).unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  close(now = this.clock()): void {
    const counters = this.counters;
    const elapsedMs = Math.max(1, now - this.lastClose);
    this.ring[this.next] = {
      at: now,
      seconds: elapsedMs / 1000,
      allowed: counters.allowed,
      denied: counters.denied,
      check: summary(counters.checkLatency),
      bulk: summary(counters.bulkLatency),
      errors_4xx: counters.clientErrors,
      errors_5xx: counters.serverErrors,
      schema_violations: counters.schemaViolations,
      pool: this.poolSecond(elapsedMs),
      feed: { changes: counters.feedChanges, lag_max_ms: counters.feedChanges === 0 ? null : toMicroseconds(counters.feedLagMaxSeconds * 1000) },
    };
    counters.reset();
    counters.rules.tick(now);
    this.next = (this.next + 1) % WINDOW_SECONDS;
    this.lastClose = now;
  }

  /** The seconds closed after `since` (epoch ms; all of the window when undefined), oldest first. */
  seconds(since = -Infinity): LiveSecond[] {
    const seconds: LiveSecond[] = [];
    for (let offset = 0; offset < WINDOW_SECONDS; offset++) {
      const second = this.ring[(this.next + offset) % WINDOW_SECONDS];
      if (second !== undefined && second.at > since) seconds.push(second);
    }
    return seconds;
  }

  /** The checks decided or refused since `epochMs`: in the seconds closed after it, and in the second under way. */
  checksSince(epochMs: number): number {
    const counted = ({ allowed, denied, errors_4xx, errors_5xx }: Pick<LiveSecond, 'allowed' | 'denied' | 'errors_4xx' | 'errors_5xx'>) => allowed + denied + errors_4xx + errors_5xx;
    const { allowed, denied, clientErrors, serverErrors } = this.counters;
    return this.seconds(epochMs).reduce((sum, second) => sum + counted(second), counted({ allowed, denied, errors_4xx: clientErrors, errors_5xx: serverErrors }));
  }

  private poolSecond(elapsedMs: number): LiveSecond['pool'] {
    if (this.pool === undefined) return null;
    const busy = this.pool.busyMilliseconds;
    const capacity = elapsedMs * Math.max(1, this.pool.threads);
    const utilization = Math.min(1, Math.max(0, (busy - this.poolBusyAtLastClose) / capacity));
    this.poolBusyAtLastClose = busy;
    return { queue: this.pool.queueSize, utilization: Math.round(utilization * 1000) / 1000 };
  }
}
