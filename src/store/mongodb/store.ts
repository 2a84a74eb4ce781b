import { MongoClient, MongoServerSelectionError } from 'mongodb';
import type { Policy } from '../../schemas/policy.js';
import type { QueryableEntities, StoreOptions } from '../store.js';
import { StoreUnavailableError } from '../errors.js';
import { ComposedStore, type StoreParts } from '../composed-store.js';
import type { Writer } from '../../audit/record.js';
import { unavailability } from './errors.js';
import { collectionsOf, type StoreCollections } from './collections.js';
import { ensureEpoch } from './set-up.js';
import { StoreMaintenance, type BuildConnection } from './maintenance.js';
import { MongoAuditTrail } from './audit.js';
import { clientOptions, MONGODB_TIMEOUTS, topologyRefusal, type MongoTimeouts } from './connection.js';
import { ENTITY_ROW_LAYOUT, NARROWED_NESTING } from './queryable.js';
import { MongoWrites } from './writes.js';
import { MongoPolicies } from './policies.js';
import { MongoSchemas } from './schemas.js';
import { MongoEntityRegistry } from './entity-registry.js';
import { MongoChangeSource } from './change-source.js';

/** The actor of the baseline records that give policies stored before the audit trail a version 1. */
const BASELINE_WRITER: Writer = { actor: 'verdict', client: '', requestId: '', route: '' };

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

/**
 * The shared store for many Verdict processes: policies and entities in MongoDB (a replica set,
 * for transactions and change streams), written with majority write concern. Every process
 * follows the others' writes through a change stream that resumes where it stopped.
 *
 * Each capability is a part of its own (policies.ts, schemas.ts, entity-registry.ts, audit.ts,
 * change-source.ts), the writes sharing writes.ts; this facade connects, makes the set-up, and offers
 * the queryable entities besides (queryable.ts).
 */
export class MongoStore extends ComposedStore implements QueryableEntities {
  readonly entityFilter = { layout: ENTITY_ROW_LAYOUT, nestedIn: NARROWED_NESTING };
  readonly maintenance: StoreMaintenance | undefined;
  protected readonly parts: StoreParts & { changes: MongoChangeSource };
  private readonly collections: StoreCollections;
  private readonly writes: MongoWrites;
  /** Times the change feed lost track (a drop, say), and how many of them the set-up has been made again for. */
  private resets = { seen: 0, setUp: 0 };
  private settingUp: Promise<void> | undefined;

  private constructor(
    private readonly client: MongoClient,
    options: Partial<StoreOptions>,
    database: string,
    timeouts: MongoTimeouts,
    maintain: boolean,
    buildConnection: () => Promise<BuildConnection>,
  ) {
    super();
    const db = client.db(database);
    this.collections = collectionsOf(db);
    this.writes = new MongoWrites(client, this.collections, options, timeouts, () => this.setUpAfterResets());
    // Whenever the feed loses track, the set-up is made again (in the background: writes wait for it), since a drop takes indexes, counters and the epoch with it.
    const changes = new MongoChangeSource(client, db, () => {
      this.resets.seen++;
      this.setUpAfterResets().catch(() => undefined);
    });
    this.parts = {
      policies: new MongoPolicies(this.writes),
      schemas: new MongoSchemas(this.writes),
      entities: new MongoEntityRegistry(this.writes, changes.afterFeed),
      audit: new MongoAuditTrail(this.collections.audit, this.writes.clock),
      changes,
    };
    const withSession = this.writes.withSession.bind(this.writes);
    this.maintenance = maintain ? new StoreMaintenance(this.collections, withSession, timeouts.retry, buildConnection, this.writes.clock) : undefined;
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
      const store = new MongoStore(client, options, options.database, timeouts, options.maintenance ?? true, buildConnection);
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
   * may have been dropped), once at a time, and again if it lost track meanwhile. Writes wait for it.
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

  /**
   * On a database written before the audit trail existed, gives every stored policy a baseline
   * record as version 1, so that it has a history to restore. Processes starting together agree:
   * the transaction that finds the audit sequence already started does nothing.
   */
  private async recordBaselines(): Promise<void> {
    const { counters, policies } = this.collections;
    if ((await counters.findOne({ _id: 'audit-sequence' })) !== null) return;
    await this.writes.transact(async (transaction) => {
      const { session } = transaction;
      if ((await counters.findOne({ _id: 'audit-sequence' }, { session })) !== null) return;
      await counters.insertOne({ _id: 'audit-sequence', value: 0 }, { session });
      for (const row of await policies.find({}, { session }).sort({ position: 1 }).toArray()) {
        const policy = JSON.parse(row.document) as Policy;
        await this.writes.recordPolicyVersion(transaction, BASELINE_WRITER, { operation: 'policy.baseline', name: policy.name, before: null, after: policy });
      }
    });
  }

  async close(): Promise<void> {
    await this.maintenance?.stop();
    await this.parts.changes.close();
    await this.client.close();
  }
}
