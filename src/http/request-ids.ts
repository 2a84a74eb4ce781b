import { randomUUID } from 'node:crypto';

/**
 * Request ids in the shape of a random UUID, unique across processes and restarts: a random UUID's
 * first 80 bits (its version and variant included) drawn once per process, then a count of the
 * process's requests in place of its last 48. Drawing a fresh random UUID for every request costs
 * about a microsecond of each, and nothing needs an id to be unpredictable.
 */
export function requestIds(): () => string {
  const prefix = randomUUID().slice(0, 24);
  let count = 0;
  return () => prefix + (count++).toString(16).padStart(12, '0');
}
