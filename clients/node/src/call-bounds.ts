import { VerdictTimeoutError } from './errors.js';

/** How long one call may keep its caller waiting, over the client's own `timeoutMs`. */
export interface CallBounds {
  /** Stops waiting once aborted: the call rejects with the signal's reason (an `AbortError`, as `fetch` does). */
  signal?: AbortSignal;
  /** Stops waiting after this many milliseconds: the call rejects with a VerdictTimeoutError. */
  timeoutMs?: number;
}

/**
 * The work `start` begins, or its caller's end of patience first; nothing is begun for a signal
 * already aborted. A batched check goes on in its bulk for the other callers; only this caller
 * stops waiting for it, and is never given an allow it did not wait for.
 */
export function within<T>(start: () => Promise<T>, bounds: CallBounds, what: string): Promise<T> {
  const { signal, timeoutMs } = bounds;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const work = start();
  if (signal === undefined && timeoutMs === undefined) return work;
  return new Promise<T>((resolve, reject) => {
    const settle = (finish: () => void) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', aborted);
      finish();
    };
    const aborted = () => settle(() => reject(signal!.reason));
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => settle(() => reject(new VerdictTimeoutError(`${what}: no answer within ${timeoutMs} ms`, undefined, undefined, undefined))), timeoutMs);
    signal?.addEventListener('abort', aborted, { once: true });
    work.then(
      (value) => settle(() => resolve(value)),
      (error: unknown) => settle(() => reject(error)),
    );
  });
}
