import {
  MongoClient,
  MongoError,
  MongoServerError,
  type ChangeStream,
  type ClientSession,
  type Collection,
  type Db,
  type Filter,
  type ResumeToken,
  type Timestamp,
} from 'mongodb';
import type { Policy } from '../schemas/policy.js';
import type { Entity } from '../schemas/entity.js';
import { DuplicateKeyError, StoreUnavailableError, type FeedPosition, type LoadedPolicies, type Store, type StoreChangeListener, type StoreOptions } from './store.js';
import {
  entityRecord,
  policyRecord,
  policyTarget,
  type AuditDraft,
  type AuditOperation,
  type AuditQuery,
  type AuditRecord,
  type AuditRetention,
  type PolicyChange,
  type Writer,
} from '../audit/record.js';

/**
 * A policy or entity: keyed by its name or uri (so a delete event names it), ordered by a position
 * from a counter, kept as JSON text so that every value keeps its JSON type and any attribute key
 * (`__proto__`, `a.b`, `$x`) is stored as it is.
 */
interface StoredDocument {
  _id: string;
  position: number;
  document: string;
}

interface Counter {
  /** `policy-position`, `entity-position`, `policy-revision`, `audit-sequence`, or `policy-version:<name>`. */
  _id: string;
  value: number;
}

/** An audit record: numbered from the `audit-sequence` counter, its JSON in `record`, the fields queries use beside it. */
interface StoredAuditRecord {
  _id: number;
  time: Date;
  target: string;
  actor: string;
  policy_version?: number;
  record: string;
}

/** The write in progress: its session, and the audit operations it recorded. */
interface Transaction {
  session: ClientSession;
  recorded: AuditOperation[];
}

/** The actor of the baseline records that give policies stored before the audit trail a version 1. */
const BASELINE_WRITER: Writer = { actor: 'verdict', client: '', requestId: '', route: '' };

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const DUPLICATE_KEY = 11000;
/** Server codes after which a change stream cannot resume from its token. */
const HISTORY_LOST = new Set([136, 280, 286]);
const RETRY_BACKOFF_MILLIS = { first: 100, max: 5000 };

export interface MongoStoreOptions extends Partial<StoreOptions> {
  uri: string;
  database: string;
  /** How long start-up waits for a reachable server before giving up. */
  serverSelectionTimeoutMS?: number;
}

/**
 * When a change was committed, epoch ms: the event's wall time (MongoDB 6.0 and later), else its
 * cluster time, which counts whole seconds.
 */
function commitTime(event: { wallTime?: Date; clusterTime?: Timestamp }): number | undefined {
  if (event.wallTime !== undefined) return event.wallTime.getTime();
  return event.clusterTime === undefined ? undefined : event.clusterTime.t * 1000;
}

/** A position in a MongoDB change feed: an operation time, where a change stream can start. */
const feedPosition = (operationTime: Timestamp) => ({ operationTime }) as unknown as FeedPosition;
const operationTimeAt = (position: FeedPosition) => (position as unknown as { operationTime: Timestamp }).operationTime;
const auditRecordOf = (row: StoredAuditRecord): AuditRecord => ({ id: row._id, ...(JSON.parse(row.record) as AuditDraft) });

/** Connectivity failures become StoreUnavailableError (503), other errors pass through. */
function unavailable(error: unknown): never {
  if (error instanceof MongoError && !(error instanceof MongoServerError)) {
    throw new StoreUnavailableError(`MongoDB is unreachable: ${error.message}`);
  }
  throw error;
}

/**
 * The shared store for many Verdict processes: policies and entities in MongoDB (a replica set,
 * for transactions and change streams), written with majority write concern. Every process
 * follows the others' writes through a change stream that resumes where it stopped.
 */
export class MongoStore implements Store {
  private readonly policies: Collection<StoredDocument>;
  private readonly entities: Collection<StoredDocument>;
  private readonly counters: Collection<Counter>;
  private readonly audit: Collection<StoredAuditRecord>;
  private readonly streams = new Set<ChangeStream>();
  private closed = false;

  private constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
    private readonly options: Partial<StoreOptions>,
  ) {
    this.policies = db.collection('policies');
    this.entities = db.collection('entities');
    this.counters = db.collection('counters');
    this.audit = db.collection('audit');
  }

  /** Connects and prepares the collections; fails within the selection timeout when no server answers. */
  static async open(options: MongoStoreOptions): Promise<MongoStore> {
    const client = new MongoClient(options.uri, {
      serverSelectionTimeoutMS: options.serverSelectionTimeoutMS ?? 10_000,
      writeConcern: { w: 'majority' },
      readConcern: { level: 'majority' },
    });
    try {
      await client.connect();
      const store = new MongoStore(client, client.db(options.database), options);
      await store.prepare();
      return store;
    } catch (error) {
      await client.close().catch(() => undefined);
      throw new StoreUnavailableError(`cannot use MongoDB (${(error as Error).message})`);
    }
  }

  private async prepare(): Promise<void> {
    await this.policies.createIndex({ position: 1 });
    await this.entities.createIndex({ position: 1 });
    await this.audit.createIndex({ target: 1, _id: -1 });
    await this.audit.createIndex({ actor: 1, _id: -1 });
    await this.audit.createIndex({ time: 1 });
    await this.audit.createIndex(
      { target: 1, policy_version: 1 },
      { unique: true, partialFilterExpression: { policy_version: { $exists: true } } },
    );
    await this.recordBaselines();
  }

  /**
   * On a database written before the audit trail existed, gives every stored policy a baseline
   * record as version 1, so that it has a history to restore. Processes starting together agree:
   * the transaction that finds the audit sequence already started does nothing.
   */
  private async recordBaselines(): Promise<void> {
    if ((await this.counters.findOne({ _id: 'audit-sequence' })) !== null) return;
    await this.write(async (transaction) => {
      const { session } = transaction;
      if ((await this.counters.findOne({ _id: 'audit-sequence' }, { session })) !== null) return;
      await this.counters.insertOne({ _id: 'audit-sequence', value: 0 }, { session });
      for (const row of await this.policies.find({}, { session }).sort({ position: 1 }).toArray()) {
        const policy = JSON.parse(row.document) as Policy;
        await this.recordPolicyVersion(transaction, BASELINE_WRITER, { operation: 'policy.baseline', name: policy.name, before: null, after: policy });
      }
    });
  }

  private async nextValue(counter: string, session: ClientSession): Promise<number> {
    const updated = await this.counters.findOneAndUpdate(
      { _id: counter },
      { $inc: { value: 1 } },
      { upsert: true, returnDocument: 'after', session },
    );
    return updated!.value;
  }

  /**
   * Runs `work` in one transaction: the write, its revision or position counters and its audit
   * record commit together or not at all. The driver retries `work` on transient errors (a write
   * conflict with another process), so it must only read and write through the session.
   */
  private async write<T>(work: (transaction: Transaction) => Promise<T>): Promise<T> {
    const session = this.client.startSession();
    let recorded: AuditOperation[] = [];
    try {
      const result = await session.withTransaction(async () => {
        recorded = [];
        return work({ session, recorded });
      });
      for (const operation of recorded) this.options.observer?.recorded(operation);
      return result;
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw error;
      this.options.observer?.failed();
      return unavailable(error);
    } finally {
      await session.endSession();
    }
  }

  /** Inserts `document`; an existing key is a DuplicateKeyError saying `duplicate`. */
  private async insertNew(collection: Collection<StoredDocument>, document: StoredDocument, session: ClientSession, duplicate: string) {
    try {
      await collection.insertOne(document, { session });
    } catch (error) {
      if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) throw new DuplicateKeyError(duplicate);
      throw error;
    }
  }

  private async recordAudit({ session, recorded }: Transaction, draft: AuditDraft, policyVersion?: number): Promise<void> {
    const id = await this.nextValue('audit-sequence', session);
    const stored: StoredAuditRecord = { _id: id, time: new Date(draft.time), target: draft.target, actor: draft.actor, record: JSON.stringify(draft) };
    if (policyVersion !== undefined) stored.policy_version = policyVersion;
    await this.audit.insertOne(stored, { session });
    recorded.push(draft.operation);
  }

  /** Within a write: the revision, then the policy's next version and its audit record. */
  private async recordPolicyWrite(transaction: Transaction, by: Writer, change: PolicyChange): Promise<void> {
    await this.counters.updateOne({ _id: 'policy-revision' }, { $inc: { value: 1 } }, { upsert: true, session: transaction.session });
    await this.recordPolicyVersion(transaction, by, change);
  }

  private async recordPolicyVersion(transaction: Transaction, by: Writer, change: PolicyChange): Promise<void> {
    const version = await this.nextValue(`policy-version:${change.name}`, transaction.session);
    await this.recordAudit(transaction, policyRecord(by, Date.now(), { ...change, version }), version);
  }

  private async recordEntityWrite(transaction: Transaction, by: Writer, change: Omit<Parameters<typeof entityRecord>[2], 'withValues'>) {
    await this.recordAudit(transaction, entityRecord(by, Date.now(), { ...change, withValues: this.options.auditValues ?? false }));
  }

  private async readPolicy(name: string, session?: ClientSession): Promise<Policy | undefined> {
    const row = await this.policies.findOne({ _id: name }, { session });
    return row === null ? undefined : (JSON.parse(row.document) as Policy);
  }

  private async readEntity(uri: string, session?: ClientSession): Promise<Entity | undefined> {
    const row = await this.entities.findOne({ _id: uri }, { session });
    return row === null ? undefined : (JSON.parse(row.document) as Entity);
  }

  /**
   * The revision and the policies from one snapshot (a read-only transaction at snapshot read
   * concern), taken at or after a majority read whose operation time is the feed position: a
   * change stream started there misses nothing committed after the snapshot.
   */
  async loadPolicies(): Promise<LoadedPolicies> {
    const session = this.client.startSession({ causalConsistency: true });
    try {
      await this.counters.findOne({ _id: 'policy-revision' }, { session });
      const operationTime = session.operationTime;
      if (operationTime === undefined) throw new Error('MongoDB reported no operation time (not a replica set member?)');
      const { revision, stored } = await session.withTransaction(
        async () => ({
          revision: await this.counters.findOne({ _id: 'policy-revision' }, { session }),
          stored: await this.policies.find({}, { session }).sort({ position: 1 }).toArray(),
        }),
        { readConcern: { level: 'snapshot' } },
      );
      return {
        revision: revision?.value ?? 0,
        policies: stored.map((row) => JSON.parse(row.document) as Policy),
        feedPosition: feedPosition(operationTime),
      };
    } catch (error) {
      return unavailable(error);
    } finally {
      await session.endSession();
    }
  }

  async policyRevision(): Promise<number> {
    const revision = await this.counters.findOne({ _id: 'policy-revision' }).catch(unavailable);
    return revision?.value ?? 0;
  }

  async getPolicy(name: string): Promise<Policy | undefined> {
    return this.readPolicy(name).catch(unavailable);
  }

  async createPolicy(policy: Policy, by: Writer): Promise<void> {
    await this.write(async (transaction) => {
      const { session } = transaction;
      const position = await this.nextValue('policy-position', session);
      const document = { _id: policy.name, position, document: JSON.stringify(policy) };
      await this.insertNew(this.policies, document, session, `Policy '${policy.name}' already exists`);
      await this.recordPolicyWrite(transaction, by, { operation: 'policy.create', name: policy.name, before: null, after: policy });
    });
  }

  async replacePolicy(policy: Policy, by: Writer): Promise<boolean> {
    return this.write(async (transaction) => {
      const { session } = transaction;
      const before = await this.readPolicy(policy.name, session);
      if (before === undefined) return false;
      await this.policies.updateOne({ _id: policy.name }, { $set: { document: JSON.stringify(policy) } }, { session });
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

  async restorePolicy(policy: Policy, version: number, by: Writer): Promise<void> {
    await this.write(async (transaction) => {
      const { session } = transaction;
      const before = await this.readPolicy(policy.name, session);
      if (before === undefined) {
        const position = await this.nextValue('policy-position', session);
        const document = { _id: policy.name, position, document: JSON.stringify(policy) };
        await this.insertNew(this.policies, document, session, `Policy '${policy.name}' was created meanwhile`);
      } else {
        await this.policies.updateOne({ _id: policy.name }, { $set: { document: JSON.stringify(policy) } }, { session });
      }
      const change = { operation: 'policy.restore' as const, name: policy.name, before: before ?? null, after: policy, restoredFrom: version };
      await this.recordPolicyWrite(transaction, by, change);
    });
  }

  async getEntity(uri: string): Promise<Entity | undefined> {
    return this.readEntity(uri).catch(unavailable);
  }

  async listEntities(offset: number, limit: number): Promise<Entity[]> {
    const rows = await this.entities
      .find({})
      .sort({ position: 1 })
      .skip(Math.min(offset, Number.MAX_SAFE_INTEGER))
      .limit(limit)
      .toArray()
      .catch(unavailable);
    return rows.map((row) => JSON.parse(row.document) as Entity);
  }

  async countEntities(): Promise<number> {
    return this.entities.countDocuments().catch(unavailable);
  }

  async createEntity(entity: Entity, by: Writer): Promise<void> {
    await this.write(async (transaction) => {
      const { session } = transaction;
      const position = await this.nextValue('entity-position', session);
      const document = { _id: entity.uri, position, document: JSON.stringify(entity) };
      await this.insertNew(this.entities, document, session, `Entity '${entity.uri}' already exists`);
      await this.recordEntityWrite(transaction, by, { operation: 'entity.create', uri: entity.uri, before: undefined, after: entity });
    });
  }

  /** A concurrent update from another process is a write conflict: the transaction runs again on the newer entity. */
  async updateEntity(uri: string, change: (entity: Entity) => Entity, by: Writer): Promise<Entity | undefined> {
    return this.write(async (transaction) => {
      const { session } = transaction;
      const before = await this.readEntity(uri, session);
      if (before === undefined) return undefined;
      const updated = change(before);
      await this.entities.updateOne({ _id: uri }, { $set: { document: JSON.stringify(updated) } }, { session });
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
      await this.recordEntityWrite(transaction, by, { operation: 'entity.delete', uri, before, after: undefined });
      return true;
    });
  }

  async listAudit(query: AuditQuery): Promise<AuditRecord[]> {
    const filter: Filter<StoredAuditRecord> = {};
    if (query.before !== undefined) filter._id = { $lt: query.before };
    if (query.since !== undefined || query.until !== undefined) {
      filter.time = {
        ...(query.since === undefined ? {} : { $gte: new Date(query.since) }),
        ...(query.until === undefined ? {} : { $lt: new Date(query.until) }),
      };
    }
    if (query.target !== undefined) filter.target = query.targetPrefix ? { $regex: `^${escapeRegExp(query.target)}` } : query.target;
    if (query.actor !== undefined) filter.actor = query.actor;
    const rows = await this.audit.find(filter).sort({ _id: -1 }).limit(query.limit).toArray().catch(unavailable);
    return rows.map(auditRecordOf);
  }

  async policyVersion(name: string, version: number): Promise<AuditRecord | undefined> {
    const row = await this.audit.findOne({ target: policyTarget(name), policy_version: version }).catch(unavailable);
    return row === null ? undefined : auditRecordOf(row);
  }

  /** Deletes by id, oldest first; deleting what another process already pruned is harmless. */
  async pruneAudit(retention: AuditRetention, batch: number): Promise<number> {
    const oldest = (filter: Filter<StoredAuditRecord>, limit: number) =>
      this.audit.find(filter, { projection: { _id: 1 } }).sort({ _id: 1 }).limit(limit).toArray();
    const prune = async (filter: Filter<StoredAuditRecord>, limit: number) => {
      const ids = (await oldest(filter, limit)).map((row) => row._id);
      return ids.length === 0 ? 0 : (await this.audit.deleteMany({ _id: { $in: ids } })).deletedCount;
    };
    try {
      let pruned = 0;
      if (retention.maxCount !== undefined) {
        const [newestPrunable] = await this.audit.find({}, { projection: { _id: 1 } }).sort({ _id: -1 }).skip(retention.maxCount).limit(1).toArray();
        if (newestPrunable !== undefined) pruned += await prune({ _id: { $lte: newestPrunable._id } }, batch);
      }
      if (retention.maxAgeMs !== undefined && pruned < batch) {
        pruned += await prune({ time: { $lt: new Date(Date.now() - retention.maxAgeMs) } }, batch - pruned);
      }
      return pruned;
    } catch (error) {
      return unavailable(error);
    }
  }

  /**
   * Follows every write to the two collections through a change stream. A transient failure
   * reopens the stream after a growing pause and resumes after the last event seen; when the
   * server can no longer resume from that point, the listener is told to reload everything.
   */
  watch(listener: StoreChangeListener, from?: FeedPosition): () => void {
    let stopped = false;
    let interrupted = false;
    let resumeAfter: ResumeToken | undefined;
    let startAtOperationTime = from === undefined ? undefined : operationTimeAt(from);
    let backoff = RETRY_BACKOFF_MILLIS.first;
    const follow = async (): Promise<void> => {
      while (!stopped && !this.closed) {
        const stream = this.db.watch(
          [{ $match: { 'ns.coll': { $in: ['policies', 'entities'] } } }],
          resumeAfter ? { resumeAfter } : startAtOperationTime ? { startAtOperationTime } : {},
        );
        this.streams.add(stream);
        // The server moves the resume token on every round trip, events or not: proof the stream is live again.
        stream.on('resumeTokenChanged', () => {
          if (!interrupted) return;
          interrupted = false;
          listener({ kind: 'resumed' });
        });
        try {
          for await (const event of stream) {
            backoff = RETRY_BACKOFF_MILLIS.first;
            resumeAfter = event._id;
            startAtOperationTime = undefined;
            if (event.operationType === 'invalidate' || event.operationType === 'drop' || event.operationType === 'dropDatabase') {
              resumeAfter = undefined;
              listener({ kind: 'everything' });
            } else if ('ns' in event && 'documentKey' in event) {
              const key = String((event.documentKey as { _id: unknown })._id);
              const committedAt = commitTime(event);
              listener(event.ns.coll === 'policies' ? { kind: 'policies', committedAt } : { kind: 'entity', uri: key, committedAt });
            }
          }
        } catch (error) {
          if (stopped || this.closed) return;
          if (!interrupted) listener({ kind: 'interrupted', reason: (error as Error).message });
          interrupted = true;
          if (error instanceof MongoServerError && HISTORY_LOST.has(Number(error.code))) {
            resumeAfter = undefined;
            listener({ kind: 'everything' });
          }
          await new Promise((resolve) => setTimeout(resolve, backoff));
          backoff = Math.min(backoff * 2, RETRY_BACKOFF_MILLIS.max);
        } finally {
          this.streams.delete(stream);
          await stream.close().catch(() => undefined);
        }
      }
    };
    void follow();
    return () => {
      stopped = true;
      for (const stream of this.streams) void stream.close();
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const stream of this.streams) await stream.close().catch(() => undefined);
    await this.client.close();
  }
}
