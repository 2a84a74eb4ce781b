import { systemClock, type Clock } from '../clock.js';
import type { DecisionRequest } from '../engine/index.js';
import { checkSize, MAX_KEPT_CHECK_BYTES } from '../engine/json-size.js';
import { PerSecondShare } from '../per-second-share.js';

/** A check as this process read it (after the registry merge), and when it was decided. */
export interface RecentCheck {
  request: DecisionRequest;
  at: number;
}

/** A check in the ring, with its size by checkSize. */
type Kept = RecentCheck & { bytes: number };

/**
 * The last checks this process decided, as it read them: what an impact preview replays, exactly as
 * they were decided and without reading the registry again. A ring of `capacity` checks, keeping at
 * most `perSecond` of them each second (0: all); a check larger than MAX_KEPT_CHECK_BYTES is not
 * kept (so the ring holds at most capacity × 16 KB). Held in memory only, never written anywhere.
 */
export class RecentChecks {
  private readonly ring: (Kept | undefined)[];
  private next = 0;
  private readonly share: PerSecondShare;
  /** Checks not kept for their size, since the start. */
  skipped = 0;
  /** What the checks kept hold, by checkSize: at most `boundBytes`. */
  heldBytes = 0;

  constructor(
    readonly capacity: number,
    readonly perSecond = 0,
    private readonly clock: Clock = systemClock,
  ) {
    this.ring = new Array<Kept | undefined>(capacity);
    this.share = new PerSecondShare(perSecond, clock);
  }

  /** The most the ring may hold, in bytes by checkSize. */
  get boundBytes(): number {
    return this.capacity * MAX_KEPT_CHECK_BYTES;
  }

  /** Called for every decision of a busy process: past this second's share it returns before reading the clock. */
  record(request: DecisionRequest): void {
    if (this.capacity === 0 || !this.share.take()) return;
    const bytes = checkSize(request);
    if (bytes > MAX_KEPT_CHECK_BYTES) {
      this.skipped++;
      return;
    }
    this.heldBytes += bytes - (this.ring[this.next]?.bytes ?? 0);
    this.ring[this.next] = { request, at: this.clock.now(), bytes };
    this.next = (this.next + 1) % this.capacity;
  }

  /**
   * How many checks `record` would keep now, at most: what a worker deciding a bulk is asked to send
   * back of it (the first ones), so that checks decided off this thread are kept as these are.
   */
  wanted(): number {
    return this.capacity === 0 ? 0 : this.share.left(this.capacity);
  }

  /** The checks kept, oldest first. */
  list(): RecentCheck[] {
    const older = this.ring.slice(this.next);
    const newer = this.ring.slice(0, this.next);
    return [...older, ...newer].filter((check): check is Kept => check !== undefined);
  }
}
