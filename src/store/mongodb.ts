import { MongoClient, MongoError, type ClientSession, MongoServerError, type ChangeStream, type Collection, type Db, type ResumeToken, type Timestamp } from 'mongodb';
import type { Policy } from '../schemas/policy.js';
import type { Entity } from '../schemas/entity.js';
import { DuplicateKeyError, StoreUnavailableError, type FeedPosition, type LoadedPolicies, type Store, type StoreChangeListener } from './store.js';

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
  _id: 'policy-position' | 'entity-position' | 'policy-revision';
  value: number;
}

const DUPLICATE_KEY = 11000;
/** Server codes after which a change stream cannot resume from its token. */
const HISTORY_LOST = new Set([136, 280, 286]);
const RETRY_BACKOFF_MILLIS = { first: 100, max: 5000 };

export interface MongoStoreOptions {
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
  private readonly streams = new Set<ChangeStream>();
  private closed = false;

  private constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
  ) {
    this.policies = db.collection('policies');
    this.entities = db.collection('entities');
    this.counters = db.collection('counters');
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
      const store = new MongoStore(client, client.db(options.database));
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
  }

  private async nextValue(counter: Counter['_id']): Promise<number> {
    const updated = await this.counters.findOneAndUpdate(
      { _id: counter },
      { $inc: { value: 1 } },
      { upsert: true, returnDocument: 'after' },
    );
    return updated!.value;
  }

  /** Runs a policy write and the revision increment in one transaction. */
  private async writePolicies(write: (session: ClientSession) => Promise<boolean>): Promise<boolean> {
    const session = this.client.startSession();
    try {
      let changed = false;
      await session.withTransaction(async () => {
        changed = await write(session);
        if (changed) {
          await this.counters.updateOne({ _id: 'policy-revision' }, { $inc: { value: 1 } }, { upsert: true, session });
        }
      });
      return changed;
    } catch (error) {
      return unavailable(error);
    } finally {
      await session.endSession();
    }
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
    const row = await this.policies.findOne({ _id: name }).catch(unavailable);
    return row === null ? undefined : (JSON.parse(row.document) as Policy);
  }

  async createPolicy(policy: Policy): Promise<void> {
    const position = await this.nextValue('policy-position').catch(unavailable);
    try {
      await this.writePolicies(async (session) => {
        await this.policies.insertOne({ _id: policy.name, position, document: JSON.stringify(policy) }, { session });
        return true;
      });
    } catch (error) {
      if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) {
        throw new DuplicateKeyError(`Policy '${policy.name}' already exists`);
      }
      throw error;
    }
  }

  async replacePolicy(policy: Policy): Promise<boolean> {
    return this.writePolicies(async (session) => {
      const result = await this.policies.updateOne({ _id: policy.name }, { $set: { document: JSON.stringify(policy) } }, { session });
      return result.matchedCount > 0;
    });
  }

  async deletePolicy(name: string): Promise<boolean> {
    return this.writePolicies(async (session) => (await this.policies.deleteOne({ _id: name }, { session })).deletedCount > 0);
  }

  async getEntity(uri: string): Promise<Entity | undefined> {
    const row = await this.entities.findOne({ _id: uri }).catch(unavailable);
    return row === null ? undefined : (JSON.parse(row.document) as Entity);
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

  async createEntity(entity: Entity): Promise<void> {
    const position = await this.nextValue('entity-position').catch(unavailable);
    try {
      await this.entities.insertOne({ _id: entity.uri, position, document: JSON.stringify(entity) });
    } catch (error) {
      if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) {
        throw new DuplicateKeyError(`Entity '${entity.uri}' already exists`);
      }
      unavailable(error);
    }
  }

  /** Compare-and-set on the stored text: a concurrent update from another process makes this one retry. */
  async updateEntity(uri: string, change: (entity: Entity) => Entity): Promise<Entity | undefined> {
    for (;;) {
      const row = await this.entities.findOne({ _id: uri }).catch(unavailable);
      if (row === null) return undefined;
      const updated = change(JSON.parse(row.document) as Entity);
      const result = await this.entities
        .updateOne({ _id: uri, document: row.document }, { $set: { document: JSON.stringify(updated) } })
        .catch(unavailable);
      if (result.matchedCount > 0) return updated;
    }
  }

  async deleteEntity(uri: string): Promise<boolean> {
    const result = await this.entities.deleteOne({ _id: uri }).catch(unavailable);
    return result.deletedCount > 0;
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
