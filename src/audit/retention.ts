import type { AuditTrail } from '../store/store.js';
import type { AuditRetention } from './record.js';

const UNIT_MILLIS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `--audit-retention`: `forever`, or an age (`90d`, `12h`, `30m`, `45s`), a count of records
 * (`100000`), or both (`90d,100000`: a record goes when it is too old or too far back).
 * Returns undefined for `forever`; throws an Error saying what is wrong otherwise.
 */
export function parseRetention(text: string): AuditRetention | undefined {
  const trimmed = text.trim().toLowerCase();
  if (trimmed === 'forever') return undefined;
  const retention: AuditRetention = {};
  for (const part of trimmed.split(',').map((item) => item.trim())) {
    const match = /^([1-9][0-9]{0,11})([smhd]?)$/.exec(part);
    if (match === null) throw new Error(`'${part}' is neither an age (like 90d, 12h, 30m, 45s) nor a count of records`);
    const [, amount, unit] = match;
    const field = unit === '' ? 'maxCount' : 'maxAgeMs';
    if (retention[field] !== undefined) throw new Error(`more than one ${unit === '' ? 'count' : 'age'} in '${text}'`);
    retention[field] = Number(amount) * (unit === '' ? 1 : UNIT_MILLIS[unit!]!);
  }
  return retention;
}

/** Records deleted per transaction: small enough that writes waiting on the store wait a moment at most. */
const PRUNE_BATCH = 500;
const PRUNE_INTERVAL_MILLIS = 60_000;

export interface PruneObserver {
  pruned(records: number): void;
  failed(error: Error): void;
}

/**
 * Enforces the retention in the background: at start and then every minute, deletes what it no
 * longer keeps, a small batch per transaction and a turn of the event loop between batches, so
 * that admin writes and decisions go on meanwhile.
 */
export class AuditPruner {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly store: AuditTrail,
    private readonly retention: AuditRetention,
    private readonly observer: PruneObserver,
  ) {}

  start(): void {
    this.runInBackground();
    this.timer = setInterval(() => this.runInBackground(), PRUNE_INTERVAL_MILLIS);
    this.timer.unref();
  }

  /** Prunes everything the retention no longer keeps; resolves with how many records went. */
  async prune(): Promise<number> {
    let total = 0;
    for (;;) {
      if (this.stopped) return total;
      const pruned = await this.store.pruneAudit(this.retention, PRUNE_BATCH);
      total += pruned;
      if (pruned > 0) this.observer.pruned(pruned);
      if (pruned < PRUNE_BATCH) return total;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Stops the schedule and waits for a run in progress, so the store can close under it. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }

  private runInBackground(): void {
    if (this.running !== undefined) return;
    this.running = this.prune()
      .then(
        () => undefined,
        (error: Error) => this.observer.failed(error),
      )
      .finally(() => (this.running = undefined));
  }
}
