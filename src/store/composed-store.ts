import type { Policy } from '../schemas/policy.js';
import type { Entity } from '../schemas/entity.js';
import type { SchemaDocument } from '../attribute-schemas/schema-document.js';
import type { MongoFilter } from '../engine/mongodb-filter.js';
import type { AuditQuery, AuditRecord, AuditRetention, Writer } from '../audit/record.js';
import type { CheckedAgainst } from './errors.js';
import type {
  AuditTrail,
  EntityReads,
  EntityWrites,
  FeedPosition,
  LoadedPolicies,
  LoadedPolicyChanges,
  PolicyReads,
  PolicyWrites,
  PromoteOutcome,
  SchemaWrites,
  Store,
  StoreChangeListener,
  Subscribable,
} from './store.js';

/** What a driver is made of: an object for each capability of a Store. */
export interface StoreParts {
  policies: PolicyReads & PolicyWrites;
  schemas: SchemaWrites;
  entities: EntityReads & EntityWrites;
  audit: AuditTrail;
  changes: Subscribable;
}

/**
 * A Store made of its parts: each call is handed to the part of its capability. A driver's facade
 * extends it, sets `parts` in its constructor, and adds how it opens and closes.
 */
export abstract class ComposedStore implements Store {
  protected abstract readonly parts: StoreParts;

  abstract close(): Promise<void>;

  loadPolicies(): Promise<LoadedPolicies>;
  loadPolicies(since: number): Promise<LoadedPolicyChanges>;
  loadPolicies(since?: number): Promise<LoadedPolicyChanges> {
    return since === undefined ? this.parts.policies.loadPolicies() : this.parts.policies.loadPolicies(since);
  }
  policyRevision(): Promise<number> {
    return this.parts.policies.policyRevision();
  }
  getPolicy(name: string): Promise<Policy | undefined> {
    return this.parts.policies.getPolicy(name);
  }
  createPolicy(policy: Policy, by: Writer, checked?: CheckedAgainst): Promise<void> {
    return this.parts.policies.createPolicy(policy, by, checked);
  }
  replacePolicy(policy: Policy, by: Writer, checked?: CheckedAgainst): Promise<boolean> {
    return this.parts.policies.replacePolicy(policy, by, checked);
  }
  deletePolicy(name: string, by: Writer): Promise<boolean> {
    return this.parts.policies.deletePolicy(name, by);
  }
  promotePolicy(promoted: Policy, shadowName: string, shadowAsRead: Policy, by: Writer, checked?: CheckedAgainst): Promise<PromoteOutcome> {
    return this.parts.policies.promotePolicy(promoted, shadowName, shadowAsRead, by, checked);
  }
  restorePolicy(policy: Policy, version: number, by: Writer, checked?: CheckedAgainst): Promise<void> {
    return this.parts.policies.restorePolicy(policy, version, by, checked);
  }

  writeSchemas(document: SchemaDocument, by: Writer, restoredFrom?: number): Promise<number> {
    return this.parts.schemas.writeSchemas(document, by, restoredFrom);
  }
  deleteSchemas(by: Writer): Promise<number | false> {
    return this.parts.schemas.deleteSchemas(by);
  }
  schemasVersion(version: number): Promise<AuditRecord | undefined> {
    return this.parts.schemas.schemasVersion(version);
  }

  getEntity(uri: string): Promise<Entity | undefined> {
    return this.parts.entities.getEntity(uri);
  }
  listEntities(offset: number, limit: number): Promise<Entity[]> {
    return this.parts.entities.listEntities(offset, limit);
  }
  listEntitiesAfter(after: string, limit: number): Promise<Entity[]> {
    return this.parts.entities.listEntitiesAfter(after, limit);
  }
  listEntitiesUnder(prefix: string, after: string, limit: number, narrowedBy?: MongoFilter): Promise<Entity[]> {
    return this.parts.entities.listEntitiesUnder(prefix, after, limit, narrowedBy);
  }
  countEntities(): Promise<number> {
    return this.parts.entities.countEntities();
  }
  createEntity(entity: Entity, by: Writer, checked?: CheckedAgainst): Promise<void> {
    return this.parts.entities.createEntity(entity, by, checked);
  }
  createEntities(entities: readonly Entity[], by: Writer, checked?: CheckedAgainst): Promise<void> {
    return this.parts.entities.createEntities(entities, by, checked);
  }
  updateEntity(uri: string, change: (entity: Entity) => Entity, by: Writer, checked?: CheckedAgainst): Promise<Entity | undefined> {
    return this.parts.entities.updateEntity(uri, change, by, checked);
  }
  deleteEntity(uri: string, by: Writer): Promise<boolean> {
    return this.parts.entities.deleteEntity(uri, by);
  }

  listAudit(query: AuditQuery): Promise<AuditRecord[]> {
    return this.parts.audit.listAudit(query);
  }
  policyVersion(name: string, version: number): Promise<AuditRecord | undefined> {
    return this.parts.audit.policyVersion(name, version);
  }
  pruneAudit(retention: AuditRetention, batch: number): Promise<number> {
    return this.parts.audit.pruneAudit(retention, batch);
  }

  watch(listener: StoreChangeListener, from?: FeedPosition): () => void {
    return this.parts.changes.watch(listener, from);
  }
}
