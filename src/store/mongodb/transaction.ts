import { setTimeout as sleep } from 'node:timers/promises';
import { MongoError, MongoErrorLabel, type ClientSession, type TransactionOptions } from 'mongodb';

/**
 * A transaction whose commit was sent but not confirmed before the retries ran out: it may have
 * been committed, or not (MongoDB's UnknownTransactionCommitResult). `cause` says why.
 */
export class CommitOutcomeUnknownError extends Error {
  constructor(override readonly cause: MongoError) {
    super(cause.message);
  }
}

/** What the driver labels a transaction it may run again from the start, or a commit it may send again. */
const retryable = (error: unknown, label: string) => error instanceof MongoError && error.hasErrorLabel(label);

/** The pause before attempt `attempt` (1 and up), as the driver's withTransaction pauses: 5 ms growing by half up to 500 ms, times a random jitter. */
const backoffMillis = (attempt: number) => Math.random() * Math.min(5 * 1.5 ** attempt, 500);

/**
 * Runs `work` in a transaction on `session` and commits it, retrying as the driver's
 * withTransaction does (the whole transaction after a TransientTransactionError, such as a write
 * conflict or a failover; the commit after an UnknownTransactionCommitResult, each after a growing
 * pause), but starts no new
 * attempt, and sends no commit again, once `retryMs` have passed. withTransaction itself retries for
 * 120 s whatever the client's timeouts: `timeoutMS`, which bounded it, has no effect from driver 7.8.
 *
 * Rejects with the last error, or with CommitOutcomeUnknownError when the last commit's outcome
 * is unknown. Each operation is bounded by the client's own timeouts (see MongoStore.open).
 */
export async function runTransaction<T>(
  session: ClientSession,
  work: () => Promise<T>,
  retryMs: number,
  options: TransactionOptions = {},
): Promise<T> {
  const deadline = performance.now() + retryMs;
  let lastError: unknown;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0) {
      await sleep(backoffMillis(attempt));
      // The pause may have run past the budget: the last attempt's error is the answer.
      if (performance.now() >= deadline) throw lastError;
    }
    session.startTransaction(options);
    let result: T;
    try {
      result = await work();
    } catch (error) {
      if (session.inTransaction()) await session.abortTransaction();
      if (retryable(error, MongoErrorLabel.TransientTransactionError) && performance.now() < deadline) {
        lastError = error;
        continue;
      }
      throw error;
    }
    for (let commit = 0; ; commit++) {
      // A commit sent again waits as a new attempt does: a primary that answers at once would otherwise be sent thousands.
      if (commit > 0) await sleep(backoffMillis(commit));
      try {
        await session.commitTransaction();
        return result;
      } catch (error) {
        if (retryable(error, MongoErrorLabel.UnknownTransactionCommitResult)) {
          if (performance.now() < deadline) continue;
          throw new CommitOutcomeUnknownError(error as MongoError);
        }
        if (retryable(error, MongoErrorLabel.TransientTransactionError) && performance.now() < deadline) {
          lastError = error;
          break;
        }
        throw error;
      }
    }
  }
}
