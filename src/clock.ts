/** A timer a clock started: cancelled before it fires, or (for a repeating one) between firings. */
export interface Timer {
  cancel(): void;
}

/**
 * Where time passes: the hour it is, and work to do later. Every part that waits or dates something
 * takes one, so that tests move time on by hand instead of sleeping (see test/helpers/manual-clock.ts).
 * Its timers never keep the process alive.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `work` once, `millis` from now. */
  after(millis: number, work: () => void): Timer;
  /** Runs `work` every `millis`, the first time `millis` from now. */
  every(millis: number, work: () => void): Timer;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  after: (millis, work) => {
    const timeout = setTimeout(work, millis).unref();
    return { cancel: () => clearTimeout(timeout) };
  },
  every: (millis, work) => {
    const interval = setInterval(work, millis).unref();
    return { cancel: () => clearInterval(interval) };
  },
};
