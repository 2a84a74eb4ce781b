import type { Clock } from './clock.js';

/**
 * At most `perSecond` of something in each second (0: no limit): what a busy process keeps of its
 * decisions for later (the recent checks, the recent denials). Once a second's share is taken,
 * `take` answers without reading the clock until a timer ends the second: it is asked of every
 * decision. Keeping fewer matters beyond their bytes: whatever is kept outlives V8's young
 * generation, which grows under load by what outlives it.
 */
export class PerSecondShare {
  private second = 0;
  private takenThisSecond = 0;
  /** This second's share is taken: nothing more until the next second (when a timer clears it). */
  private spent = false;

  constructor(
    readonly perSecond: number,
    private readonly clock: Clock,
  ) {}

  /** Whether one more may be kept now; if so, it is counted against this second's share. */
  take(): boolean {
    if (this.spent) return false;
    if (this.perSecond === 0) return true;
    const now = this.clock.now();
    this.startSecondOf(now);
    if (++this.takenThisSecond >= this.perSecond) {
      this.spent = true;
      this.clock.after(1000 - (now % 1000), () => (this.spent = false));
    }
    return true;
  }

  /** How many `take` would allow now, at most `most`. */
  left(most: number): number {
    if (this.spent) return 0;
    if (this.perSecond === 0) return most;
    this.startSecondOf(this.clock.now());
    return Math.min(most, this.perSecond - this.takenThisSecond);
  }

  private startSecondOf(now: number): void {
    const second = Math.floor(now / 1000);
    if (second !== this.second) [this.second, this.takenThisSecond] = [second, 0];
  }
}
