import { jsonEqual } from '../../engine/json-equal.js';
import {
  MongoBulkWriteError,
  MongoClient,
  MongoServerError,
  MongoServerSelectionError,
  type ClientSession,
  type Collection,
  type Db,
  type Document,
  type OptionalUnlessRequiredId,
  type Timestamp,
} from 'mongodb';
import type { Policy } from '../../schemas/policy.js';
import type { Entity } from '../../schemas/entity.js';
import {
  DuplicateKeyError,
  isRefusal,
  SchemasMovedOn,
  StoreUnavailableError,
  type CheckedAgainst,
  type FeedPosition,
  type LoadedPolicies,
  type LoadedPolicyChanges,
  type PolicyChanges,
  type PromoteOutcome,
  SCHEMAS_CHANGE,
  type Store,
  type StoredSchemas,
  type StoreChangeListener,
  type StoreOptions,
} from '../store.js';
import {
  entityRecord,
  policyRecord,
  policyTarget,
  schemasRecord,
  SCHEMAS_TARGET,
  type AuditDraft,
  type AuditOperation,
  type AuditQuery,
  type AuditRecord,
  type AuditRetention,
  type PolicyChange,
  type SchemasChange,
  type Writer,
} from '../../audit/record.js';
import type { SchemaDocument } from '../../attribute-schemas/schema-document.js';
import { rethrowStoreError, rethrowWriteError, unavailability, unconfirmedWrite } from './errors.js';
import { ChangeStreamFollower } from '../change-stream-follower.js';
import { CommitOutcomeUnknownError, runTransaction } from './transaction.js';
import { countEntities, moveEntityCount } from './entity-count.js';
import {
  collectionsOf,
  type Counter,
  type PolicyChangeRecord,
  type StoreCollections,
  type StoredAuditRecord,
  type StoredDocument,
  type StoredEntity,
  type StoredSchemaDocument,
} from './collections.js';
import { ensureEpoch, raiseCounters, raisePolicyVersions, versionCounter } from './set-up.js';
import { StoreMaintenance, type BuildConnection } from './maintenance.js';
import { feedPipeline } from './feed.js';
import { listAudit, pruneAudit, recordOfVersion, storedAudit } from './audit.js';
import { ENTITY_TEXT, entityRow, listEntities, listEntitiesAfter, listEntitiesUnder, readEntityOnCheckPath, SECONDARY_READ, type ReadsAfterFeed } from './entities.js';
import { clientOptions, MONGODB_TIMEOUTS, topologyRefusal, type MongoTimeouts } from './connection.js';
import { ENTITY_ROW_LAYOUT, NARROWED_NESTING, queryableFields } from './queryable.js';
import type { MongoFilter } from '../../engine/mongodb-filter.js';

const POLICY_CHANGES_KEPT = 10_000;

/** The write in progress: its session, and the audit operations it recorded. */
interface Transaction {
  session: ClientSession;
  recorded: AuditOperation[];
}

/** The actor of the baseline records that give policies stored before the audit trail a version 1. */
const BASELINE_WRITER: Writer = { actor: 'verdict', client: '', requestId: '', route: '' };

const DUPLICATE_KEY = 11000;

export interface MongoStoreOptions extends Partial<StoreOptions> {
  uri: string;
  database: string;
  /** How long the driver waits for a server it can use, at start and for every operation. */
  serverSelectionTimeoutMS?: number;
  timeouts?: MongoTimeouts;
  /**
   * Whether this process maintains the database (`--store-maintenance`, on by default): makes the
   * epoch, the baselines and the indexes, backfills and recounts. Off, it never creates, drops or
   * writes anything but what an admin write writes, so a decision-only sidecar needs only find and
   * changeStream rights; another process (or the operator) maintains the database.
   */
  maintenance?: boolean;
}

/** A position in a MongoDB change feed: an operation time, where a change stream can start. */
const feedPosition = (operationTime: Timestamp) => ({ operationTime }) as unknown as FeedPosition;
const operationTimeAt = (position: FeedPosition) => (position as unknown as { operationTime: Timestamp }).operationTime;

/** The first write error of a failed insert: the error itself, or of a batch the first of its write errors. */
function firstWriteError(error: MongoServerError): { index: number; keyPattern?: Document } {
  if (!(error instanceof MongoBulkWriteError)) return { index: 0, keyPattern: error.keyPattern as Document | undefined };
  const [first] = [error.writeErrors].flat();
  return { index: first?.index ?? -1, keyPattern: (first?.err as { keyPattern?: Document } | undefined)?.keyPattern };
}

/**
 * Whether an insert failed because a document of that key (name or uri) exists, rather than on a
 * value a counter made (a position): servers that do not say which index count as the former.
 */
function takenKey(error: unknown): error is MongoServerError {
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

/**
 * The shared store for many Verdict processes: policies and entities in MongoDB (a replica set,
 * for transactions and change streams), written with majority write concern. Every process
 * follows the others' writes through a change stream that resumes where it stopped.
 */
export class MongoStore implements Store {
  readonly entityFilter = { layout: ENTITY_ROW_LAYOUT, nestedIn: NARROWED_NESTING };
  private readonly collections: StoreCollections;
  private readonly policies: Collection<StoredDocument>;
  private readonly entities: Collection<StoredEntity>;
  private readonly counters: Collection<Counter>;
  private readonly audit: Collection<StoredAuditRecord>;
  private readonly policyChanges: Collection<PolicyChangeRecord>;
  private readonly schemas: Collection<StoredSchemaDocument>;
  private readonly clock: () => number;
  private readonly followers = new Set<ChangeStreamFollower>();
  /** Times the change feed lost track (a drop, say), and how many of them the set-up has been made again for. */
  private resets = { seen: 0, setUp: 0 };
  private settingUp: Promise<void> | undefined;
  readonly maintenance: StoreMaintenance | undefined;
  /** When each write's session must have committed (see beforeNextOperation). */
  private readonly deadlines = new WeakMap<ClientSession, number>();

  private constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
    private readonly options: Partial<StoreOptions>,
    private readonly timeouts: MongoTimeouts,
    maintain: boolean,
    buildConnection: () => Promise<BuildConnection>,
  ) {
    this.collections = collectionsOf(db);
    ({ policies: this.policies, entities: this.entities, counters: this.counters, audit: this.audit, policyChanges: this.policyChanges, schemas: this.schemas } = this.collections);
    this.clock = options.clock ?? Date.now;
    this.maintenance = maintain ? new StoreMaintenance(this.collections, (use) => this.withSession(use), timeouts.retry, buildConnection, this.clock) : undefined;
  }

  /**
   * Connects, refuses a server that cannot hold the store, and makes what correctness needs of the
   * database (see setUp); fails within the selection timeout when no server answers. What may take as
   * long as the registry is large runs in the background from then on (see StoreMaintenance).
   */
  static async open(options: MongoStoreOptions): Promise<MongoStore> {
    const timeoutMs = options.serverSelectionTimeoutMS ?? 10_000;
    const timeouts = options.timeouts ?? MONGODB_TIMEOUTS;
    const client = new MongoClient(options.uri, clientOptions(timeouts, timeoutMs, options.uri));
    try {
      await client.connect();
      const refusal = topologyRefusal(await client.db('admin').command({ hello: 1 }), client.options.directConnection);
      if (refusal !== undefined) throw new Error(refusal);
      // Index builds get a connection of their own, with no socket timeout: one that cut a long build would leave it running, and a retry would queue another.
      const buildConnection = async (): Promise<BuildConnection> => {
        const builds = new MongoClient(options.uri, { ...clientOptions(timeouts, timeoutMs, options.uri), socketTimeoutMS: 0, maxPoolSize: 1 });
        await builds.connect();
        return { collections: collectionsOf(builds.db(options.database)), close: () => builds.close() };
      };
      const store = new MongoStore(client, client.db(options.database), options, timeouts, options.maintenance ?? true, buildConnection);
      await store.setUp();
      store.maintenance?.start();
      return store;
    } catch (error) {
      await client.close().catch(() => undefined);
      // The hosts, never the URI: it may hold credentials.
      const hosts = client.options.hosts.map(String).join(', ');
      if (error instanceof MongoServerSelectionError) {
        throw new StoreUnavailableError(
          `cannot use MongoDB: no server at ${hosts} answered within ${timeoutMs / 1000} s (${error.message}); ` +
            'check that MongoDB runs there and this machine reaches it (address, port, firewall, TLS), and that the URI names its replica set',
        );
      }
      const reason = unavailability(error) ?? (error as Error).message;
      throw new StoreUnavailableError(`cannot use MongoDB: ${reason} (at ${hosts})`);
    }
  }

  /**
   * What correctness needs of the database before the store serves, each step bounded by what the
   * policies hold, not the registry: the baselines of the audit trail and the epoch (see
   * set-up.ts). Nothing, with maintenance off. The rest is the background maintenance's.
   */
  private async setUp(): Promise<void> {
    if (this.maintenance === undefined) return;
    await this.recordBaselines();
    await ensureEpoch(this.collections);
  }

  /**
   * Makes the set-up again if the change feed lost track since it was last made (its collections
   * may have been dropped), once at a time, and again if it lost track meanwhile.
   */
  private async setUpAfterResets(): Promise<void> {
    while (this.resets.setUp < this.resets.seen) {
      this.settingUp ??= (async () => {
        const seen = this.resets.seen;
        try {
          await this.setUp();
          // The indexes and counters went with the collections: the maintenance makes them again.
          this.maintenance?.start();
          this.resets.setUp = seen;
        } finally {
          this.settingUp = undefined;
        }
      })();
      await this.settingUp;
    }
  }

  private async withSession<T>(use: (session: ClientSession) => Promise<T>): Promise<T> {
    const session = this.client.startSession();
    try {
      return await use(session);
    } finally {
      await session.endSession();
    }
  }

  /**
   * On a database written before the audit trail existed, gives every stored policy a baseline
   * record as version 1, so that it has a history to restore. Processes starting together agree:
   * the transaction that finds the audit sequence already started does nothing.
   */
  private async recordBaselines(): Promise<void> {
    if ((await this.counters.findOne({ _id: 'audit-sequence' })) !== null) return;
    await this.transact(async (transaction) => {
      const { session } = transaction;
      if ((await this.counters.findOne({ _id: 'audit-sequence' }, { session })) !== null) return;
      await this.counters.insertOne({ _id: 'audit-sequence', value: 0 }, { session });
      for (const row of await this.policies.find({}, { session }).sort({ position: 1 }).toArray()) {
        const policy = JSON.parse(row.document) as Policy;
        await this.recordPolicyVersion(transaction, BASELINE_WRITER, { operation: 'policy.baseline', name: policy.name, before: null, after: policy });
      }
    });
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
  private async nextValue(counter: string, session: ClientSession, count = 1): Promise<number> {
    this.beforeNextOperation(session);
    const updated = await this.counters.findOneAndUpdate(
      { _id: counter },
      { $inc: { value: count } },
      { upsert: true, returnDocument: 'after', session },
    );
    return updated!.value;
  }

  /**
   * Runs `work` in one transaction: the write, its revision or position counters and its audit
   * record commit together or not at all. `work` runs again on transient errors (a write conflict
   * with another process), so it must only read and write through the session. A write that could
   * not be committed in time says whether it may have been (see runTransaction). Once after a
   * counter handed out a value already taken, the counters are raised and the write made again.
   */
  private async write<T>(work: (transaction: Transaction) => Promise<T>): Promise<T> {
    try {
      await this.setUpAfterResets();
    } catch (error) {
      this.options.observer?.failed();
      return rethrowWriteError(error);
    }
    return this.transact(work);
  }

  /** The transaction of `write`, without waiting for the set-up (which makes baselines with it). */
  private async transact<T>(work: (transaction: Transaction) => Promise<T>): Promise<T> {
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
  private readSnapshot<T>(session: ClientSession, read: () => Promise<T>): Promise<T> {
    return runTransaction(session, read, this.timeouts.retry, { readConcern: { level: 'snapshot' } });
  }

  /** Inserts `document`; an existing key is a DuplicateKeyError saying `duplicate`. */
  private async insertNew<Row extends StoredDocument>(collection: Collection<Row>, document: Row, session: ClientSession, duplicate: string) {
    try {
      await collection.insertOne(document as OptionalUnlessRequiredId<Row>, { session });
    } catch (error) {
      if (takenKey(error)) throw new DuplicateKeyError(duplicate);
      throw error;
    }
  }

  private async recordAudit({ session, recorded }: Transaction, draft: AuditDraft, policyVersion?: number): Promise<void> {
    const id = await this.nextValue('audit-sequence', session);
    const stored = storedAudit(id, draft);
    if (policyVersion !== undefined) stored.policy_version = policyVersion;
    await this.audit.insertOne(stored, { session });
    recorded.push(draft.operation);
  }

  /** Within a write: the next policy revision, and what it wrote (a policy's name, or SCHEMAS_CHANGE). */
  private async movePolicyRevision(session: ClientSession, name: string): Promise<void> {
    const revision = await this.nextValue('policy-revision', session);
    await this.policyChanges.insertOne({ _id: revision, name }, { session });
    await this.policyChanges.deleteMany({ _id: { $lte: revision - POLICY_CHANGES_KEPT } }, { session });
  }

  /** Within a write: the revision and which policy it wrote, then the policy's next version and its audit record. */
  private async recordPolicyWrite(transaction: Transaction, by: Writer, change: PolicyChange): Promise<void> {
    await this.movePolicyRevision(transaction.session, change.name);
    await this.recordPolicyVersion(transaction, by, change);
  }

  private async recordPolicyVersion(transaction: Transaction, by: Writer, change: PolicyChange): Promise<void> {
    const version = await this.nextValue(versionCounter(policyTarget(change.name)), transaction.session);
    await this.recordAudit(transaction, policyRecord(by, this.clock(), { ...change, version }), version);
  }

  async writeSchemas(document: SchemaDocument, by: Writer, restoredFrom?: number): Promise<number> {
    return this.write((transaction) =>
      this.recordSchemasWrite(transaction, by, { operation: restoredFrom === undefined ? 'schemas.replace' : 'schemas.restore', after: document, restoredFrom }),
    );
  }

  async deleteSchemas(by: Writer): Promise<number | false> {
    return this.write(async (transaction) =>
      (await this.readSchemas(transaction.session)) === undefined ? false : this.recordSchemasWrite(transaction, by, { operation: 'schemas.delete', after: null }),
    );
  }

  async schemasVersion(version: number): Promise<AuditRecord | undefined> {
    return this.recordOfVersion(SCHEMAS_TARGET, version);
  }

  /** Within a write: the document and its version, the policy revision it moves, and its audit record. */
  private async recordSchemasWrite(transaction: Transaction, by: Writer, change: Omit<SchemasChange, 'before'>): Promise<number> {
    const { session } = transaction;
    const before = (await this.readSchemas(session))?.document ?? null;
    const version = await this.nextValue(versionCounter(SCHEMAS_TARGET), session);
    const document = change.after === null ? null : JSON.stringify(change.after);
    await this.schemas.updateOne({ _id: 'document' }, { $set: { document, version } }, { upsert: true, session });
    await this.movePolicyRevision(session, SCHEMAS_CHANGE);
    await this.recordAudit(transaction, schemasRecord(by, this.clock(), { ...change, before, version }), version);
    return version;
  }

  /** Within a write: refuses it when the store holds other schemas than those it was checked against (see CheckedAgainst). */
  private async holdsSchemas(session: ClientSession, checked: CheckedAgainst | undefined): Promise<void> {
    if (checked === undefined) return;
    const stored = (await this.readSchemas(session))?.version;
    if (stored !== checked.schemasVersion) throw new SchemasMovedOn(checked.schemasVersion, stored);
  }

  private async readSchemas(session: ClientSession): Promise<StoredSchemas | undefined> {
    const row = await this.schemas.findOne({ _id: 'document' }, { session });
    return row === null || row.document === null ? undefined : { document: JSON.parse(row.document) as SchemaDocument, version: row.version };
  }

  private async recordEntityWrite(transaction: Transaction, by: Writer, change: Omit<Parameters<typeof entityRecord>[2], 'withValues'>) {
    await this.recordAudit(transaction, entityRecord(by, this.clock(), { ...change, withValues: this.options.auditValues ?? false }));
  }

  /** The audit records of new entities: their ids reserved at once and inserted together. */
  private async recordEntitiesCreated({ session, recorded }: Transaction, by: Writer, entities: readonly Entity[]): Promise<void> {
    const time = this.clock();
    const withValues = this.options.auditValues ?? false;
    const drafts = entities.map((entity) => entityRecord(by, time, { operation: 'entity.create', uri: entity.uri, before: undefined, after: entity, withValues }));
    const firstId = (await this.nextValue('audit-sequence', session, drafts.length)) - drafts.length + 1;
    await this.audit.insertMany(drafts.map((draft, index) => storedAudit(firstId + index, draft)), { session });
    recorded.push(...drafts.map((draft) => draft.operation));
  }

  private async readPolicy(name: string, session?: ClientSession): Promise<Policy | undefined> {
    const row = await this.policies.findOne({ _id: name }, { session });
    return row === null ? undefined : (JSON.parse(row.document) as Policy);
  }

  private async readEntity(uri: string, session?: ClientSession): Promise<Entity | undefined> {
    const row = await this.entities.findOne({ _id: uri }, { session, ...ENTITY_TEXT });
    return row === null ? undefined : (JSON.parse(row.document) as Entity);
  }

  /**
   * The revision and the policies from one snapshot (a read-only transaction at snapshot read
   * concern), taken at or after a majority read whose operation time is the feed position: a
   * change stream started there misses nothing committed after the snapshot.
   */
  loadPolicies(): Promise<LoadedPolicies>;
  loadPolicies(since: number): Promise<LoadedPolicyChanges>;
  async loadPolicies(since?: number): Promise<LoadedPolicyChanges> {
    const session = this.client.startSession({ causalConsistency: true });
    try {
      if (since !== undefined) {
        const changes = await this.policyChangesSince(since, session);
        if (changes !== undefined) return changes;
      }
      await this.counters.findOne({ _id: 'policy-revision' }, { session });
      const operationTime = session.operationTime;
      if (operationTime === undefined) throw new Error('MongoDB reported no operation time (not a replica set member?)');
      const { revision, epoch, stored, schemas } = await this.readSnapshot(session, async () => ({
        revision: await this.counters.findOne({ _id: 'policy-revision' }, { session }),
        epoch: await this.counters.findOne({ _id: 'store-epoch' }, { session }),
        stored: await this.policies.find({}, { session }).sort({ position: 1 }).toArray(),
        schemas: await this.readSchemas(session),
      }));
      return {
        revision: revision?.value ?? 0,
        ...(schemas && { schemas }),
        policies: stored.map((row) => JSON.parse(row.document) as Policy),
        positions: stored.map((row) => row.position),
        epoch: epoch?.value,
        feedPosition: feedPosition(operationTime),
      };
    } catch (error) {
      return rethrowStoreError(error);
    } finally {
      await session.endSession();
    }
  }

  /**
   * The policies written after revision `since`, as they stand now, read in one snapshot; undefined
   * when the kept records no longer reach back that far (or never did: a database written before
   * they were kept), or `since` is ahead of this database.
   */
  private async policyChangesSince(since: number, session: ClientSession): Promise<PolicyChanges | undefined> {
    return this.readSnapshot(session, async () => {
      const revision = (await this.counters.findOne({ _id: 'policy-revision' }, { session }))?.value ?? 0;
      if (since > revision) return undefined;
      const written = await this.policyChanges.find({ _id: { $gt: since } }, { session, projection: { name: 1 } }).toArray();
      if (written.length !== revision - since) return undefined;
      const names = [...new Set(written.map((change) => change.name))];
      // A schema document written since changes what every policy is held to: the whole set is loaded, with it.
      if (names.includes(SCHEMAS_CHANGE)) return undefined;
      const rows = await this.policies.find({ _id: { $in: names } }, { session }).toArray();
      const byName = new Map(rows.map((row) => [row._id, row]));
      const epoch = (await this.counters.findOne({ _id: 'store-epoch' }, { session }))?.value;
      return {
        revision,
        epoch,
        changes: names.map((name) => {
          const row = byName.get(name);
          return { name, now: row === undefined ? null : { policy: JSON.parse(row.document) as Policy, position: row.position } };
        }),
      };
    });
  }

  async policyRevision(): Promise<number> {
    const revision = await this.counters.findOne({ _id: 'policy-revision' }).catch(rethrowStoreError);
    return revision?.value ?? 0;
  }

  async getPolicy(name: string): Promise<Policy | undefined> {
    return this.readPolicy(name).catch(rethrowStoreError);
  }

  async createPolicy(policy: Policy, by: Writer, checked?: CheckedAgainst): Promise<void> {
    await this.write(async (transaction) => {
      const { session } = transaction;
      await this.holdsSchemas(session, checked);
      const position = await this.nextValue('policy-position', session);
      const document = { _id: policy.name, position, document: JSON.stringify(policy), version: 1 };
      await this.insertNew(this.policies, document, session, `Policy '${policy.name}' already exists`);
      await this.recordPolicyWrite(transaction, by, { operation: 'policy.create', name: policy.name, before: null, after: policy });
    });
  }

  async replacePolicy(policy: Policy, by: Writer, checked?: CheckedAgainst): Promise<boolean> {
    return this.write(async (transaction) => {
      const { session } = transaction;
      await this.holdsSchemas(session, checked);
      const before = await this.readPolicy(policy.name, session);
      if (before === undefined) return false;
      await this.policies.updateOne({ _id: policy.name }, { $set: { document: JSON.stringify(policy) }, $inc: { version: 1 } }, { session });
      await this.recordPolicyWrite(transaction, by, { operation: 'policy.replace', name: policy.name, before, after: policy });
      return true;
    });
  }

  async deletePolicy(name: string, by: Writer): Promise<boolean> {
    return this.write(async (transaction) => {
      const { session } = transaction;
      const before = await this.readPolicy(name, session);
      if (before === undefined) return false;
      await this.policies.deleteOne({ _id: name }, { session });
      await this.recordPolicyWrite(transaction, by, { operation: 'policy.delete', name, before, after: null });
      return true;
    });
  }

  async promotePolicy(promoted: Policy, shadowName: string, shadowAsRead: Policy, by: Writer, checked?: CheckedAgainst): Promise<PromoteOutcome> {
    return this.write(async (transaction): Promise<PromoteOutcome> => {
      const { session } = transaction;
      await this.holdsSchemas(session, checked);
      const before = await this.readPolicy(promoted.name, session);
      const shadow = await this.readPolicy(shadowName, session);
      if (before === undefined || shadow === undefined) return 'gone';
      if (!jsonEqual(shadow, shadowAsRead)) return 'changed';
      await this.policies.updateOne({ _id: promoted.name }, { $set: { document: JSON.stringify(promoted) }, $inc: { version: 1 } }, { session });
      await this.recordPolicyWrite(transaction, by, { operation: 'policy.replace', name: promoted.name, before, after: promoted });
      if (shadowName === promoted.name) return 'promoted';
      await this.policies.deleteOne({ _id: shadowName }, { session });
      await this.recordPolicyWrite(transaction, by, { operation: 'policy.delete', name: shadowName, before: shadow, after: null });
      return 'promoted';
    });
  }

  async restorePolicy(policy: Policy, version: number, by: Writer, checked?: CheckedAgainst): Promise<void> {
    await this.write(async (transaction) => {
      const { session } = transaction;
      await this.holdsSchemas(session, checked);
      const before = await this.readPolicy(policy.name, session);
      if (before === undefined) {
        const position = await this.nextValue('policy-position', session);
        const document = { _id: policy.name, position, document: JSON.stringify(policy), version: 1 };
        await this.insertNew(this.policies, document, session, `Policy '${policy.name}' was created meanwhile`);
      } else {
        await this.policies.updateOne({ _id: policy.name }, { $set: { document: JSON.stringify(policy) }, $inc: { version: 1 } }, { session });
      }
      const change = { operation: 'policy.restore' as const, name: policy.name, before: before ?? null, after: policy, restoredFrom: version };
      await this.recordPolicyWrite(transaction, by, change);
    });
  }

  getEntity(uri: string): Promise<Entity | undefined> {
    return readEntityOnCheckPath(this.entities, uri, this.afterFeed);
  }

  listEntitiesAfter(after: string, limit: number): Promise<Entity[]> {
    return listEntitiesAfter(this.entities, after, limit, this.afterFeed);
  }

  listEntities(offset: number, limit: number): Promise<Entity[]> {
    return listEntities(this.entities, offset, limit);
  }

  listEntitiesUnder(prefix: string, after: string, limit: number, narrowedBy?: MongoFilter): Promise<Entity[]> {
    return listEntitiesUnder(this.entities, prefix, after, limit, narrowedBy);
  }

  countEntities(): Promise<number> {
    return countEntities(this.collections);
  }

  async createEntity(entity: Entity, by: Writer, checked?: CheckedAgainst): Promise<void> {
    await this.write(async (transaction) => {
      const { session } = transaction;
      await this.holdsSchemas(session, checked);
      const position = await this.nextValue('entity-position', session);
      await this.insertNew(this.entities, entityRow(entity, position), session, `Entity '${entity.uri}' already exists`);
      await moveEntityCount(this.counters, session, 1, [entity.uri]);
      await this.recordEntityWrite(transaction, by, { operation: 'entity.create', uri: entity.uri, before: undefined, after: entity });
    });
  }

  /** One insertMany and the audit records in one transaction: every entity is registered, or (on any error) none. */
  async createEntities(entities: readonly Entity[], by: Writer, checked?: CheckedAgainst): Promise<void> {
    if (entities.length === 0) return;
    await this.write(async (transaction) => {
      const { session } = transaction;
      await this.holdsSchemas(session, checked);
      const firstPosition = (await this.nextValue('entity-position', session, entities.length)) - entities.length + 1;
      const rows = entities.map((entity, index) => entityRow(entity, firstPosition + index));
      try {
        await this.entities.insertMany(rows, { session, ordered: true });
      } catch (error) {
        if (takenKey(error)) {
          const uri = entities[firstWriteError(error).index]?.uri;
          throw new DuplicateKeyError(uri === undefined ? 'An entity of this call is already registered' : `Entity '${uri}' already exists`, uri);
        }
        throw error;
      }
      await moveEntityCount(this.counters, session, 1, entities.map((entity) => entity.uri));
      await this.recordEntitiesCreated(transaction, by, entities);
    });
  }

  /** A concurrent update from another process is a write conflict: the transaction runs again on the newer entity. */
  async updateEntity(uri: string, change: (entity: Entity) => Entity, by: Writer, checked?: CheckedAgainst): Promise<Entity | undefined> {
    return this.write(async (transaction) => {
      const { session } = transaction;
      await this.holdsSchemas(session, checked);
      const row = await this.entities.findOne({ _id: uri }, { session, projection: { document: 1, version: 1 } });
      if (row === null) return undefined;
      const before = JSON.parse(row.document) as Entity;
      const updated = change(before);
      const document = JSON.stringify(updated);
      const version = (row.version ?? 0) + 1;
      await this.entities.updateOne({ _id: uri }, { $set: { document, version, ...queryableFields(updated, document, version) } }, { session });
      await this.recordEntityWrite(transaction, by, { operation: 'entity.update', uri, before, after: updated });
      return updated;
    });
  }

  async deleteEntity(uri: string, by: Writer): Promise<boolean> {
    return this.write(async (transaction) => {
      const { session } = transaction;
      const before = await this.readEntity(uri, session);
      if (before === undefined) return false;
      await this.entities.deleteOne({ _id: uri }, { session });
      await moveEntityCount(this.counters, session, -1, [uri]);
      await this.recordEntityWrite(transaction, by, { operation: 'entity.delete', uri, before, after: undefined });
      return true;
    });
  }

  listAudit(query: AuditQuery): Promise<AuditRecord[]> {
    return listAudit(this.audit, query);
  }

  async policyVersion(name: string, version: number): Promise<AuditRecord | undefined> {
    return this.recordOfVersion(policyTarget(name), version);
  }

  private recordOfVersion(target: string, version: number): Promise<AuditRecord | undefined> {
    return recordOfVersion(this.audit, target, version);
  }

  pruneAudit(retention: AuditRetention, batch: number): Promise<number> {
    return pruneAudit(this.audit, retention, batch, this.clock());
  }

  /**
   * Follows every write to policies, entities and the schema document through a change stream (see ChangeStreamFollower
   * and feedPipeline), and the events that end a history: any of the store's collections dropped,
   * renamed or renamed onto, the database dropped. Whenever the feed loses track, the set-up is made
   * again (in the background: writes wait for it), since a drop takes indexes, counters and the epoch with it.
   */
  watch(listener: StoreChangeListener, from?: FeedPosition): () => void {
    const pipeline = feedPipeline();
    const relay: StoreChangeListener = (change) => {
      if (change.kind === 'everything') {
        this.resets.seen++;
        this.setUpAfterResets().catch(() => undefined);
      }
      listener(change);
    };
    // From a secondary when one is there: a fleet's streams would otherwise all weigh on the primary.
    if (from !== undefined) this.reachedFeed(operationTimeAt(from));
    const follower = new ChangeStreamFollower((start) => this.db.watch(pipeline, { ...start, readPreference: SECONDARY_READ }), relay, {
      from: from === undefined ? undefined : operationTimeAt(from),
      reached: this.reachedFeed,
    });
    this.followers.add(follower);
    return () => {
      this.followers.delete(follower);
      void follower.stop();
    };
  }

  /** The change feed's position: the cluster time of the last event any follower was told of, or where it started. */
  private feedTime: Timestamp | undefined;

  private readonly reachedFeed = (time: Timestamp): void => {
    const reached = this.feedTime;
    if (reached === undefined || time.t > reached.t || (time.t === reached.t && time.i > reached.i)) this.feedTime = time;
  };

  /** See ReadsAfterFeed: a causally consistent session advanced to the feed's position, for reads that fill a cache. */
  private readonly afterFeed: ReadsAfterFeed = async (read) => {
    const reached = this.feedTime;
    if (reached === undefined) return read(undefined);
    const session = this.client.startSession({ causalConsistency: true });
    session.advanceOperationTime(reached);
    try {
      return await read(session);
    } finally {
      void session.endSession().catch(() => undefined);
    }
  };

  async close(): Promise<void> {
    await this.maintenance?.stop();
    await Promise.all([...this.followers].map((follower) => follower.stop()));
    this.followers.clear();
    await this.client.close();
  }
}
