import type { Clock, Timer } from '../../src/clock.js';

interface Scheduled {
  due: number;
  every: number | undefined;
  work: () => void;
  cancelled: boolean;
}

/**
 * A clock that moves only when the test moves it: `advance` runs every timer that falls due on the
 * way, in the order they fall due, each at its own hour. It starts at the system's time, so that
 * tokens signed by the test are current.
 */
export class ManualClock implements Clock {
  private time = Date.now();
  private readonly timers: Scheduled[] = [];

  now(): number {
    return this.time;
  }

  after(millis: number, work: () => void): Timer {
    return this.schedule(millis, undefined, work);
  }

  every(millis: number, work: () => void): Timer {
    return this.schedule(millis, millis, work);
  }

  /** Moves the clock on by `millis`, running what falls due meanwhile. */
  advance(millis: number): void {
    const until = this.time + millis;
    for (;;) {
      const next = this.timers.filter((timer) => !timer.cancelled && timer.due <= until).sort((a, b) => a.due - b.due)[0];
      if (next === undefined) break;
      this.time = Math.max(this.time, next.due);
      if (next.every === undefined) next.cancelled = true;
      else next.due += next.every;
      next.work();
    }
    this.time = until;
  }

  /** The timers waiting to run. */
  get pending(): number {
    return this.timers.filter((timer) => !timer.cancelled).length;
  }

  private schedule(millis: number, every: number | undefined, work: () => void): Timer {
    for (let index = this.timers.length - 1; index >= 0; index--) if (this.timers[index]!.cancelled) this.timers.splice(index, 1);
    const timer: Scheduled = { due: this.time + millis, every, work, cancelled: false };
    this.timers.push(timer);
    return { cancel: () => (timer.cancelled = true) };
  }
}
