import { MongoBulkWriteError, MongoServerError, type ClientSession, type Collection, type Document, type MongoClient, type OptionalUnlessRequiredId } from 'mongodb';
import type { SchemaDocument } from '../../attribute-schemas/schema-document.js';
import type { StoredSchemas, StoreOptions } from '../store.js';
import { DuplicateKeyError, isRefusal, SchemasMovedOn, StoreUnavailableError, type CheckedAgainst } from '../errors.js';
import { policyRecord, policyTarget, type AuditDraft, type AuditOperation, type PolicyChange, type Writer } from '../../audit/record.js';
import { rethrowWriteError, unconfirmedWrite } from './errors.js';
import { CommitOutcomeUnknownError, runTransaction } from './transaction.js';
import type { StoreCollections, StoredDocument } from './collections.js';
import { raiseCounters, raisePolicyVersions, versionCounter } from './set-up.js';
import { storedAudit } from './audit.js';
import type { MongoTimeouts } from './connection.js';

// The machinery every MongoDB write shares, whichever capability makes it: one transaction within a
// budget, the counters it advances, the policy revision it moves and the audit record it commits.

/** The write in progress: its session, and the audit operations it recorded. */
export interface Transaction {
  session: ClientSession;
  recorded: AuditOperation[];
}

const POLICY_CHANGES_KEPT = 10_000;
const DUPLICATE_KEY = 11000;

/** The first write error of a failed insert: the error itself, or of a batch the first of its write errors. */
export function firstWriteError(error: MongoServerError): { index: number; keyPattern?: Document } {
  if (!(error instanceof MongoBulkWriteError)) return { index: 0, keyPattern: error.keyPattern as Document | undefined };
  const [first] = [error.writeErrors].flat();
  return { index: first?.index ?? -1, keyPattern: (first?.err as { keyPattern?: Document } | undefined)?.keyPattern };
}

/**
 * Whether an insert failed because a document of that key (name or uri) exists, rather than on a
 * value a counter made (a position): servers that do not say which index count as the former.
 */
export function takenKey(error: unknown): error is MongoServerError {
  if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY)) return false;
  const { keyPattern } = firstWriteError(error);
  return keyPattern === undefined || '_id' in keyPattern;
}

/**
 * A duplicate key that a write's own inserts did not take for a name or uri (those are
 * DuplicateKeyErrors by then): a value a counter handed out was taken already, so the counters
 * were reset under this store (see raiseCounters).
 */
const counterBehind = (error: unknown) => error instanceof MongoServerError && error.code === DUPLICATE_KEY;

/** The attribute schema document as read in `session`; undefined when there is none. */
export async function readSchemas({ schemas }: StoreCollections, session: ClientSession): Promise<StoredSchemas | undefined> {
  const row = await schemas.findOne({ _id: 'document' }, { session });
  return row === null || row.document === null ? undefined : { document: JSON.parse(row.document) as SchemaDocument, version: row.version };
}

export class MongoWrites {
  readonly clock: () => number;
  /** When each write's session must have committed (see beforeNextOperation). */
  private readonly deadlines = new WeakMap<ClientSession, number>();

  constructor(
    private readonly client: MongoClient,
    readonly collections: StoreCollections,
    readonly options: Partial<StoreOptions>,
    private readonly timeouts: MongoTimeouts,
    /** What a write waits for first: the set-up made again after the change feed lost track. */
    private readonly setUpBeforeWrites: () => Promise<void>,
  ) {
    this.clock = options.clock ?? Date.now;
  }

  /** Runs `use` in a causally consistent session of its own (the driver's default for one), ended after. */
  async withSession<T>(use: (session: ClientSession) => Promise<T>): Promise<T> {
    const session = this.client.startSession({ causalConsistency: true });
    try {
      return await use(session);
    } finally {
      await session.endSession();
    }
  }

  /**
   * Runs `work` in one transaction: the write, its revision or position counters and its audit
   * record commit together or not at all. `work` runs again on transient errors (a write conflict
   * with another process), so it must only read and write through the session. A write that could
   * not be committed in time says whether it may have been (see runTransaction). Once after a
   * counter handed out a value already taken, the counters are raised and the write made again.
   */
  async write<T>(work: (transaction: Transaction) => Promise<T>): Promise<T> {
    try {
      await this.setUpBeforeWrites();
    } catch (error) {
      this.options.observer?.failed();
      return rethrowWriteError(error);
    }
    return this.transact(work);
  }

  /** The transaction of `write`, without waiting for the set-up (which makes baselines with it). */
  async transact<T>(work: (transaction: Transaction) => Promise<T>): Promise<T> {
    const session = this.client.startSession();
    this.deadlines.set(session, performance.now() + this.timeouts.retry);
    let recorded: AuditOperation[] = [];
    const attempt = () =>
      runTransaction(
        session,
        () => {
          recorded = [];
          return work({ session, recorded });
        },
        this.timeouts.retry,
      );
    try {
      const result = await attempt().catch(async (error: unknown) => {
        if (!counterBehind(error)) throw error;
        await raiseCounters(this.collections);
        await raisePolicyVersions(this.collections);
        return attempt();
      });
      for (const operation of recorded) this.options.observer?.recorded(operation);
      return result;
    } catch (error) {
      if (isRefusal(error)) throw error;
      if (error instanceof CommitOutcomeUnknownError) {
        this.options.observer?.unconfirmed?.();
        throw unconfirmedWrite(error, this.timeouts.retry);
      }
      this.options.observer?.failed();
      return rethrowWriteError(error);
    } finally {
      await session.endSession();
    }
  }

  /** A read-only transaction at snapshot read concern, bounded as writes are. */
  readSnapshot<T>(session: ClientSession, read: () => Promise<T>): Promise<T> {
    return runTransaction(session, read, this.timeouts.retry, { readConcern: { level: 'snapshot' } });
  }

  /**
   * Throws, within a write, once the write has run longer than its retry budget: it is then aborted,
   * not applied, rather than left to run an operation more, each of which may take the answer
   * timeout. Checked before every counter is advanced (every write advances one or more, and its audit
   * sequence last), so a write ends within its budget and one operation's timeout.
   */
  private beforeNextOperation(session: ClientSession): void {
    const deadline = this.deadlines.get(session);
    if (deadline !== undefined && performance.now() > deadline) {
      throw new StoreUnavailableError(`MongoDB is unavailable (the write took longer than its ${this.timeouts.retry} ms, --mongodb-write-retry-ms); it was not applied`);
    }
  }

  /** Advances `counter` by `count` and returns its new value: the last of the `count` values reserved. */
  async nextValue(counter: string, session: ClientSession, count = 1): Promise<number> {
    this.beforeNextOperation(session);
    const updated = await this.collections.counters.findOneAndUpdate(
      { _id: counter },
      { $inc: { value: count } },
      { upsert: true, returnDocument: 'after', session },
    );
    return updated!.value;
  }

  /** Inserts `document`; an existing key is a DuplicateKeyError saying `duplicate`. */
  async insertNew<Row extends StoredDocument>(collection: Collection<Row>, document: Row, session: ClientSession, duplicate: string): Promise<void> {
    try {
      await collection.insertOne(document as OptionalUnlessRequiredId<Row>, { session });
    } catch (error) {
      if (takenKey(error)) throw new DuplicateKeyError(duplicate);
      throw error;
    }
  }

  /** Within a write: refuses it when the store holds other schemas than those it was checked against (see CheckedAgainst). */
  async holdsSchemas(session: ClientSession, checked: CheckedAgainst | undefined): Promise<void> {
    if (checked === undefined) return;
    const stored = (await readSchemas(this.collections, session))?.version;
    if (stored !== checked.schemasVersion) throw new SchemasMovedOn(checked.schemasVersion, stored);
  }

  async recordAudit({ session, recorded }: Transaction, draft: AuditDraft, policyVersion?: number): Promise<void> {
    const id = await this.nextValue('audit-sequence', session);
    const stored = storedAudit(id, draft);
    if (policyVersion !== undefined) stored.policy_version = policyVersion;
    await this.collections.audit.insertOne(stored, { session });
    recorded.push(draft.operation);
  }

  /** Within a write: the next policy revision, and what it wrote (a policy's name, or SCHEMAS_CHANGE). */
  async movePolicyRevision(session: ClientSession, name: string): Promise<void> {
    const revision = await this.nextValue('policy-revision', session);
    const { policyChanges } = this.collections;
    await policyChanges.insertOne({ _id: revision, name }, { session });
    await policyChanges.deleteMany({ _id: { $lte: revision - POLICY_CHANGES_KEPT } }, { session });
  }

  /** Within a write: the revision and which policy it wrote, then the policy's next version and its audit record. */
  async recordPolicyWrite(transaction: Transaction, by: Writer, change: PolicyChange): Promise<void> {
    await this.movePolicyRevision(transaction.session, change.name);
    await this.recordPolicyVersion(transaction, by, change);
  }

  async recordPolicyVersion(transaction: Transaction, by: Writer, change: PolicyChange): Promise<void> {
    const version = await this.nextValue(versionCounter(policyTarget(change.name)), transaction.session);
    await this.recordAudit(transaction, policyRecord(by, this.clock(), { ...change, version }), version);
  }
}
