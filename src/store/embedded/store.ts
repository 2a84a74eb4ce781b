import type Database from 'better-sqlite3';
import type { Policy } from '../../schemas/policy.js';
import type { Entity } from '../../schemas/entity.js';
import type { SchemaDocument } from '../../attribute-schemas/schema-document.js';
import type { FeedPosition, LoadedPolicies, LoadedPolicyChanges, PromoteOutcome, Store, StoreChangeListener } from '../store.js';
import type { CheckedAgainst } from '../errors.js';
import type { AuditQuery, AuditRecord, AuditRetention, Writer } from '../../audit/record.js';
import { openDatabase } from './database.js';
import { EmbeddedWrites, type EmbeddedStoreOptions } from './writes.js';
import { EmbeddedPolicies } from './policies.js';
import { EmbeddedSchemas } from './schemas.js';
import { EmbeddedEntities } from './entities.js';
import { EmbeddedAuditTrail } from './audit.js';
import { EmbeddedChangeFeed } from './change-feed.js';

/**
 * The default store: one SQLite file in the data directory (see database.ts). Documents are kept as
 * JSON text, so every value keeps its JSON type.
 *
 * This is the facade: each capability is a module of its own (policies.ts, schemas.ts, entities.ts,
 * audit.ts, change-feed.ts), sharing the write machinery of writes.ts; the facade opens the file and
 * hands each call to its capability.
 */
export class EmbeddedStore implements Store {
  private readonly db: Database.Database;
  private readonly policies: EmbeddedPolicies;
  private readonly schemas: EmbeddedSchemas;
  private readonly entities: EmbeddedEntities;
  private readonly audit: EmbeddedAuditTrail;
  private readonly changes: EmbeddedChangeFeed;

  constructor(dataDirectory: string, options: EmbeddedStoreOptions = {}) {
    this.db = openDatabase(dataDirectory);
    const writes = new EmbeddedWrites(this.db, options);
    this.changes = new EmbeddedChangeFeed(this.db);
    this.audit = new EmbeddedAuditTrail(this.db, writes.clock);
    this.policies = new EmbeddedPolicies(writes, this.changes);
    this.schemas = new EmbeddedSchemas(writes, this.audit);
    this.entities = new EmbeddedEntities(writes);
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

  // The entity registry (entities.ts).

  getEntity(uri: string): Promise<Entity | undefined> {
    return this.entities.getEntity(uri);
  }
  listEntities(offset: number, limit: number): Promise<Entity[]> {
    return this.entities.listEntities(offset, limit);
  }
  listEntitiesAfter(after: string, limit: number): Promise<Entity[]> {
    return this.entities.listEntitiesAfter(after, limit);
  }
  listEntitiesUnder(prefix: string, after: string, limit: number): Promise<Entity[]> {
    return this.entities.listEntitiesUnder(prefix, after, limit);
  }
  countEntities(): Promise<number> {
    return this.entities.countEntities();
  }
  createEntity(entity: Entity, by: Writer, checked?: CheckedAgainst): Promise<void> {
    return this.entities.createEntity(entity, by, checked);
  }
  createEntities(entities: readonly Entity[], by: Writer, checked?: CheckedAgainst): Promise<void> {
    return this.entities.createEntities(entities, by, checked);
  }
  updateEntity(uri: string, change: (entity: Entity) => Entity, by: Writer, checked?: CheckedAgainst): Promise<Entity | undefined> {
    return this.entities.updateEntity(uri, change, by, checked);
  }
  deleteEntity(uri: string, by: Writer): Promise<boolean> {
    return this.entities.deleteEntity(uri, by);
  }

  // The audit trail (audit.ts) and the change feed (change-feed.ts).

  listAudit(query: AuditQuery): Promise<AuditRecord[]> {
    return this.audit.listAudit(query);
  }
  policyVersion(name: string, version: number): Promise<AuditRecord | undefined> {
    return this.audit.policyVersion(name, version);
  }
  pruneAudit(retention: AuditRetention, batch: number): Promise<number> {
    return this.audit.pruneAudit(retention, batch);
  }
  watch(listener: StoreChangeListener, from?: FeedPosition): () => void {
    return this.changes.watch(listener, from);
  }

  /** What this connection's durability rests on, as SQLite reports it (read by tests; pragmas are per connection). */
  durability(): { journalMode: string; synchronous: number } {
    return {
      journalMode: this.db.pragma('journal_mode', { simple: true }) as string,
      synchronous: this.db.pragma('synchronous', { simple: true }) as number,
    };
  }

  async close(): Promise<void> {
    this.changes.close();
    this.db.close();
  }
}
