import { MongoClient, MongoServerSelectionError } from 'mongodb';
import type { Policy } from '../../schemas/policy.js';
import type { Entity } from '../../schemas/entity.js';
import type { SchemaDocument } from '../../attribute-schemas/schema-document.js';
import type { MongoFilter } from '../../engine/mongodb-filter.js';
import type { FeedPosition, LoadedPolicies, LoadedPolicyChanges, PromoteOutcome, Store, StoreChangeListener, StoreOptions } from '../store.js';
import { StoreUnavailableError, type CheckedAgainst } from '../errors.js';
import { policyTarget, type AuditQuery, type AuditRecord, type AuditRetention, type Writer } from '../../audit/record.js';
import { unavailability } from './errors.js';
import { countEntities } from './entity-count.js';
import { collectionsOf, type StoreCollections } from './collections.js';
import { ensureEpoch } from './set-up.js';
import { StoreMaintenance, type BuildConnection } from './maintenance.js';
import { listAudit, pruneAudit, recordOfVersion } from './audit.js';
import { listEntities, listEntitiesAfter, listEntitiesUnder, readEntityOnCheckPath } from './entities.js';
import { clientOptions, MONGODB_TIMEOUTS, topologyRefusal, type MongoTimeouts } from './connection.js';
import { ENTITY_ROW_LAYOUT, NARROWED_NESTING } from './queryable.js';
import { MongoWrites } from './writes.js';
import { MongoPolicies } from './policies.js';
import { MongoSchemas } from './schemas.js';
import { MongoEntityWrites } from './entity-writes.js';
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
 * This is the facade: each capability is a module of its own (policies.ts, schemas.ts, entities.ts
 * and entity-writes.ts, audit.ts, change-source.ts), sharing the write machinery of writes.ts; the
 * facade connects, makes the set-up, and hands each call to its capability.
 */
export class MongoStore implements Store {
  readonly entityFilter = { layout: ENTITY_ROW_LAYOUT, nestedIn: NARROWED_NESTING };
  readonly maintenance: StoreMaintenance | undefined;
  private readonly collections: StoreCollections;
  private readonly writes: MongoWrites;
  private readonly policies: MongoPolicies;
  private readonly schemas: MongoSchemas;
  private readonly entityWrites: MongoEntityWrites;
  private readonly changes: MongoChangeSource;
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
    const db = client.db(database);
    this.collections = collectionsOf(db);
    this.writes = new MongoWrites(client, this.collections, options, timeouts, () => this.setUpAfterResets());
    this.policies = new MongoPolicies(this.writes);
    this.schemas = new MongoSchemas(this.writes);
    this.entityWrites = new MongoEntityWrites(this.writes);
    this.changes = new MongoChangeSource(client, db, () => {
      this.resets.seen++;
      this.setUpAfterResets().catch(() => undefined);
    });
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

  // Policies (policies.ts) and the schema document (schemas.ts).

  loadPolicies(): Promise<LoadedPolicies>;
  loadPolicies(since: number): Promise<LoadedPolicyChanges>;
  loadPolicies(since?: number): Promise<LoadedPolicyChanges> {
    return since === undefined ? this.policies.loadPolicies() : this.policies.loadPolicies(since);
  }
  policyRevision(): Promise<number> {
    return this.policies.policyRevision();
  }
  getPolicy(name: string): Promise<Policy | undefined> {
    return this.policies.getPolicy(name);
  }
  createPolicy(policy: Policy, by: Writer, checked?: CheckedAgainst): Promise<void> {
    return this.policies.createPolicy(policy, by, checked);
  }
  replacePolicy(policy: Policy, by: Writer, checked?: CheckedAgainst): Promise<boolean> {
    return this.policies.replacePolicy(policy, by, checked);
  }
  deletePolicy(name: string, by: Writer): Promise<boolean> {
    return this.policies.deletePolicy(name, by);
  }
  promotePolicy(promoted: Policy, shadowName: string, shadowAsRead: Policy, by: Writer, checked?: CheckedAgainst): Promise<PromoteOutcome> {
    return this.policies.promotePolicy(promoted, shadowName, shadowAsRead, by, checked);
  }
  restorePolicy(policy: Policy, version: number, by: Writer, checked?: CheckedAgainst): Promise<void> {
    return this.policies.restorePolicy(policy, version, by, checked);
  }
  writeSchemas(document: SchemaDocument, by: Writer, restoredFrom?: number): Promise<number> {
    return this.schemas.writeSchemas(document, by, restoredFrom);
  }
  deleteSchemas(by: Writer): Promise<number | false> {
    return this.schemas.deleteSchemas(by);
  }
  schemasVersion(version: number): Promise<AuditRecord | undefined> {
    return this.schemas.schemasVersion(version);
  }

  // The entity registry: reads (entities.ts, entity-count.ts), those that fill a cache held after the feed's position; writes (entity-writes.ts).

  getEntity(uri: string): Promise<Entity | undefined> {
    return readEntityOnCheckPath(this.collections.entities, uri, this.changes.afterFeed);
  }
  listEntitiesAfter(after: string, limit: number): Promise<Entity[]> {
    return listEntitiesAfter(this.collections.entities, after, limit, this.changes.afterFeed);
  }
  listEntities(offset: number, limit: number): Promise<Entity[]> {
    return listEntities(this.collections.entities, offset, limit);
  }
  listEntitiesUnder(prefix: string, after: string, limit: number, narrowedBy?: MongoFilter): Promise<Entity[]> {
    return listEntitiesUnder(this.collections.entities, prefix, after, limit, narrowedBy);
  }
  countEntities(): Promise<number> {
    return countEntities(this.collections);
  }
  createEntity(entity: Entity, by: Writer, checked?: CheckedAgainst): Promise<void> {
    return this.entityWrites.createEntity(entity, by, checked);
  }
  createEntities(entities: readonly Entity[], by: Writer, checked?: CheckedAgainst): Promise<void> {
    return this.entityWrites.createEntities(entities, by, checked);
  }
  updateEntity(uri: string, change: (entity: Entity) => Entity, by: Writer, checked?: CheckedAgainst): Promise<Entity | undefined> {
    return this.entityWrites.updateEntity(uri, change, by, checked);
  }
  deleteEntity(uri: string, by: Writer): Promise<boolean> {
    return this.entityWrites.deleteEntity(uri, by);
  }

  // The audit trail (audit.ts) and the change source (change-source.ts).

  listAudit(query: AuditQuery): Promise<AuditRecord[]> {
    return listAudit(this.collections.audit, query);
  }
  policyVersion(name: string, version: number): Promise<AuditRecord | undefined> {
    return recordOfVersion(this.collections.audit, policyTarget(name), version);
  }
  pruneAudit(retention: AuditRetention, batch: number): Promise<number> {
    return pruneAudit(this.collections.audit, retention, batch, this.writes.clock());
  }
  /** Whenever the feed loses track, the set-up is made again (in the background: writes wait for it), since a drop takes indexes, counters and the epoch with it. */
  watch(listener: StoreChangeListener, from?: FeedPosition): () => void {
    return this.changes.watch(listener, from);
  }

  async close(): Promise<void> {
    await this.maintenance?.stop();
    await this.changes.close();
    await this.client.close();
  }
}
