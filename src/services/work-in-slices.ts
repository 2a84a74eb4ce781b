import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * Runs work written as a generator that pauses (yields) between slices of it, letting the event
 * loop serve other requests at each pause: a long task delays the checks sent meanwhile by one
 * slice at most, rather than by the whole of it. Resolves with the generator's return value.
 */
export async function runInSlices<Result>(work: Generator<void, Result, void>): Promise<Result> {
  for (let next = work.next(); ; next = work.next()) {
    if (next.done) return next.value;
    await nextTurn();
  }
}

/** Lets the event loop serve what is waiting (other requests) before the next slice of an asynchronous task. */
export const betweenSlices = (): Promise<void> => nextTurn();
