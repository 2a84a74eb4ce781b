import {
  MongoError,
  MongoErrorLabel,
  MongoNetworkError,
  MongoOperationTimeoutError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  MongoWriteConcernError,
} from 'mongodb';
import { StoreUnavailableError, StoreWriteUnconfirmedError } from '../errors.js';
import { CommitOutcomeUnknownError } from './transaction.js';

/** The server's code for an operation that ran past its `maxTimeMS`. */
export const MAX_TIME_EXPIRED = 50;

/**
 * Server error codes that mean the replica set cannot serve the operation now (an election, a
 * node shutting down or unreachable, a majority not yet available); the same call succeeds later.
 */
const UNAVAILABLE_CODES: ReadonlyMap<number, string> = new Map([
  [6, 'HostUnreachable'],
  [7, 'HostNotFound'],
  [64, 'WriteConcernFailed'],
  [89, 'NetworkTimeout'],
  [91, 'ShutdownInProgress'],
  [133, 'FailedToSatisfyReadPreference'],
  [134, 'ReadConcernMajorityNotAvailableYet'],
  [189, 'PrimarySteppedDown'],
  [262, 'ExceededTimeLimit'],
  [9001, 'SocketException'],
  [10107, 'NotWritablePrimary'],
  [11600, 'InterruptedAtShutdown'],
  [11602, 'InterruptedDueToReplStateChange'],
  [13435, 'NotPrimaryNoSecondaryOk'],
  [13436, 'NotPrimaryOrSecondary'],
]);

/** Labels the server or the driver puts on errors that a later attempt may not meet. */
const UNAVAILABLE_LABELS = [
  MongoErrorLabel.RetryableWriteError,
  MongoErrorLabel.TransientTransactionError,
  MongoErrorLabel.UnknownTransactionCommitResult,
  MongoErrorLabel.RetryableError,
  MongoErrorLabel.SystemOverloadedError,
];

/** Why `error` means "MongoDB cannot serve this now", or undefined when it does not (a bug: a 500, logged). */
export function unavailability(error: unknown): string | undefined {
  if (error instanceof CommitOutcomeUnknownError) return unavailability(error.cause) ?? error.message;
  if (!(error instanceof MongoError)) return undefined;
  if (error instanceof MongoNetworkError || error instanceof MongoServerSelectionError || error instanceof MongoOperationTimeoutError) {
    return error.message;
  }
  if (error instanceof MongoTopologyClosedError) return 'the connection to MongoDB is closing';
  if (error instanceof MongoWriteConcernError) return `write concern not satisfied: ${error.message}`;
  if (error instanceof MongoServerError) {
    const name = UNAVAILABLE_CODES.get(Number(error.code));
    if (name !== undefined) return `${name}: ${error.message}`;
    if (error.writeConcernError !== undefined) return `write concern not satisfied: ${String(error.writeConcernError.errmsg ?? error.message)}`;
  }
  const label = UNAVAILABLE_LABELS.find((candidate) => error.hasErrorLabel(candidate));
  return label === undefined ? undefined : `${label}: ${error.message}`;
}

/** Rethrows `error` as StoreUnavailableError (503) when MongoDB cannot serve it now; any other error as it is. */
export function rethrowStoreError(error: unknown): never {
  const reason = unavailability(error);
  if (reason !== undefined) throw new StoreUnavailableError(`MongoDB is unavailable (${reason})`);
  throw error;
}

/** As rethrowStoreError, for a write that was not committed: the message says so (it is safe to send again). */
export function rethrowWriteError(error: unknown): never {
  const reason = unavailability(error);
  if (reason !== undefined) throw new StoreUnavailableError(`MongoDB is unavailable (${reason}); the write was not applied`);
  throw error;
}

/** The error for a write whose commit MongoDB did not confirm within `retryMs`. */
export function unconfirmedWrite(error: CommitOutcomeUnknownError, retryMs: number): StoreWriteUnconfirmedError {
  return new StoreWriteUnconfirmedError(
    `MongoDB did not confirm the write within ${retryMs / 1000} s (${unavailability(error)}): ` +
      'it may have been applied, or not: read it back before sending it again',
  );
}
