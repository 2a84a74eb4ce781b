import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import { UnavailableError } from '../errors.js';

/**
 * Waits for the snapshot to include a write that is already durable (`done` says what it did). When
 * the store cannot be read back, the client must not repeat the write (a policy's would be refused
 * as a duplicate): the snapshot builder keeps retrying and applies it.
 */
export async function applied(snapshots: PolicySnapshots, done: string): Promise<void> {
  try {
    await snapshots.refresh();
  } catch (error) {
    throw new UnavailableError(
      `${done}, but this process could not load it yet (${(error as Error).message}); ` +
        'it will apply it as soon as the store answers: do not send the write again',
    );
  }
}
