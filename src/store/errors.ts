/** What a store's operations fail with, whichever store: the routes answer each as its own status. */
import { ClientError, RequestValidationError } from '../errors.js';

/** A policy or entity that already exists under the same name or uri (`key`, when the store can tell). */
export class DuplicateKeyError extends Error {
  constructor(
    message: string,
    readonly key?: string,
  ) {
    super(message);
  }
}

/** The store cannot be reached: the request is answered 503, decisions go on from the last snapshot. */
export class StoreUnavailableError extends Error {}

/**
 * The attribute schema document a write was checked against under `--schema-enforcement reject`:
 * its version in this process (undefined: none). The write commits only if the store holds that one
 * when it does; else it is refused with SchemasMovedOn, not applied: a process whose change feed is
 * interrupted would otherwise store what the schemas in the store forbid.
 */
export interface CheckedAgainst {
  schemasVersion: number | undefined;
}

/** A write refused because the store holds other attribute schemas than the ones it was checked against (503: this process is behind). */
export class SchemasMovedOn extends StoreUnavailableError {
  constructor(checked: number | undefined, stored: number | undefined) {
    const version = (value: number | undefined) => (value === undefined ? 'none' : `version ${value}`);
    super(
      `The attribute schemas changed in the store (${version(stored)}) since this process applied the ones it checked the write against (${version(checked)}): ` +
        'it was not applied; send it again once this process has caught up (a moment, unless its change feed is interrupted: see /ready)',
    );
  }
}

/**
 * A write the store could not confirm in time: it may have been applied, or not. Answered 503 with
 * the message as the detail (which says to read it back before sending it again, never to retry blindly).
 */
export class StoreWriteUnconfirmedError extends StoreUnavailableError {}

/**
 * Whether a write failed because it was refused rather than because the store failed: a key taken,
 * schemas moved on since it was checked, or what the write's own work (an entity update's change,
 * say) refused the client. No audit write
 * failed then: nothing is counted as one.
 */
export const isRefusal = (error: unknown): boolean =>
  error instanceof DuplicateKeyError || error instanceof SchemasMovedOn || error instanceof ClientError || error instanceof RequestValidationError;

/**
 * A listing narrowed by a filter in the database ran out of its time there (see Store.listEntitiesUnder):
 * the caller lists the same range without the filter, which an index serves at once.
 */
export class NarrowingTimedOut extends Error {}
