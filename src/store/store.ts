import type { Policy } from '../schemas/policy.js';
import type { ChangedPolicy } from '../engine/compile.js';
import type { MongoFilter, MongoFilterOptions } from '../engine/mongodb-filter.js';
import type { Entity } from '../schemas/entity.js';
import type { AuditOperation, AuditQuery, AuditRecord, AuditRetention, Writer } from '../audit/record.js';
import type { SchemaDocument } from '../attribute-schemas/schema-document.js';
import type { CheckedAgainst } from './errors.js';

/**
 * The uris that start with `prefix`, one ending with `:`, as a range: at least `from` and below `to`
 * (the prefix with its last character the next one), in the byte order of UTF-8 as in code units.
 */
export function uriRange(prefix: string): { from: string; to: string } {
  if (!prefix.endsWith(':')) throw new Error(`uriRange: '${prefix}' does not end with ':'`);
  return { from: prefix, to: `${prefix.slice(0, -1)};` };
}

export interface PolicySet {
  /** Increases with every policy write; the snapshot built from this set carries it. */
  revision: number;
  /** In creation order. */
  policies: Policy[];
}

declare const feedPositionBrand: unique symbol;
/** A point in a store's change feed; only the store that made it can read it. */
export type FeedPosition = { readonly [feedPositionBrand]: true };

/** What a promote did: see PolicyWrites.promotePolicy. */
export type PromoteOutcome = 'promoted' | 'gone' | 'changed';

/** The attribute schema document in force and the version of it the write that made it made. */
export interface StoredSchemas {
  document: SchemaDocument;
  version: number;
}

/**
 * The key a schema document write logs among the policy changes: no policy name has a ':' (names are
 * slugs). A schema write moves the policy revision, so that the schemas travel with the policies (see
 * LoadedPolicies.schemas), and a load since a revision before it is always of the whole set.
 */
export const SCHEMAS_CHANGE = ':schemas';

export interface LoadedPolicies extends PolicySet {
  /** The attribute schema document stored with the policies, read in the same snapshot; absent when there is none. */
  schemas?: StoredSchemas;
  /**
   * Each policy's place in creation order, increasing (a policy created or restored after its
   * deletion gets a new one, past every other; a replaced one keeps its own). Absent: the indexes.
   */
  positions?: number[];
  /**
   * Identifies the store's history (MongoDB: a database dropped and refilled gets another), when it
   * has one: changes read later apply to this set only under the same epoch.
   */
  epoch?: number;
  /**
   * Where the change feed stood when the policies were read: watching from here misses nothing
   * committed after this load (a change it already holds may be announced again).
   */
  feedPosition: FeedPosition;
}

/** The policies written after a revision, each as it stands at `revision` (see Store.loadPolicies). */
export interface PolicyChanges {
  revision: number;
  /** See LoadedPolicies.epoch. */
  epoch?: number;
  changes: ChangedPolicy[];
}

/** What `loadPolicies(since)` returns: only what changed, when the store can tell, else the whole set. */
export type LoadedPolicyChanges = LoadedPolicies | PolicyChanges;

/** What changed in the store, as every process hears it. */
export type StoreChange =
  /** `committedAt`: when the (earliest) change was committed, epoch ms, when the store knows. */
  | { kind: 'policies'; committedAt: number | undefined }
  | { kind: 'entity'; uri: string; committedAt: number | undefined }
  /** The feed lost track (history trimmed, stream invalidated): reload everything. */
  | { kind: 'everything' }
  /** The feed cannot reach the store for now; it keeps retrying and announces `resumed`. */
  | { kind: 'interrupted'; reason: string }
  | { kind: 'resumed' };

export type StoreChangeListener = (change: StoreChange) => void;

/** Hears how admin writes went, for the audit metrics. */
export interface AuditObserver {
  /** A write committed with its audit record. */
  recorded(operation: AuditOperation): void;
  /** A write failed in the store (not refused as a duplicate): neither it nor its record was committed. */
  failed(): void;
  /** The store could not confirm a write in time: it and its record may have been committed, or not. */
  unconfirmed?(): void;
}

export interface StoreOptions {
  /** Record registry attribute values in the audit trail (otherwise only which keys changed). */
  auditValues: boolean;
  observer?: AuditObserver;
  /** The clock audit records are stamped and retention ages are measured by (epoch ms); Date.now by default. */
  clock?: () => number;
}

/** Work a store does in the background, whose cost grows with what it holds (see mongodb/maintenance.ts). */
export interface BackgroundMaintenance {
  /** What is not done yet, or failing, for `/ready`; undefined once done. */
  status(): string | undefined;
  /** A step that failed, and will be tried again: for the log. */
  on(event: 'failed', listener: (failure: { step: string; error: Error }) => void): unknown;
}

/** Reading the policies, and the schema document that travels with them. */
export interface PolicyReads {
  loadPolicies(): Promise<LoadedPolicies>;
  /**
   * The policies written after revision `since`, as they stand now, when the store still knows
   * which (it keeps a bounded log of them); otherwise, or when `since` is ahead of the store (it
   * was dropped and refilled), the whole set.
   */
  loadPolicies(since: number): Promise<LoadedPolicyChanges>;
  /** The revision loadPolicies would return now, without loading anything. */
  policyRevision(): Promise<number>;
  getPolicy(name: string): Promise<Policy | undefined>;
}

/** Writing policies: each write moves the policy revision and is audited. */
export interface PolicyWrites {
  /** Rejects with DuplicateKeyError when the name is taken. `checked`: see CheckedAgainst (on every write that takes it). */
  createPolicy(policy: Policy, by: Writer, checked?: CheckedAgainst): Promise<void>;
  /** Replaces in place, keeping the creation order; false when there is no such policy. */
  replacePolicy(policy: Policy, by: Writer, checked?: CheckedAgainst): Promise<boolean>;
  deletePolicy(name: string, by: Writer): Promise<boolean>;
  /**
   * Makes the shadow `shadowName` live in one write, provided it still reads `shadowAsRead` (what
   * `promoted` was made from) inside the write's transaction: where `promoted` names the shadow itself
   * (a shadow added beside the live policies), it is rewritten as `promoted`; otherwise the live policy
   * of `promoted`'s name is replaced by `promoted` (keeping its place) and the shadow deleted. Each
   * write is audited. `gone` or `changed` (the shadow was edited meanwhile) write nothing.
   */
  promotePolicy(promoted: Policy, shadowName: string, shadowAsRead: Policy, by: Writer, checked?: CheckedAgainst): Promise<PromoteOutcome>;
  /**
   * Makes `policy` (version `version` of it, from its history) current again: in place when the
   * policy exists, else created anew (last in creation order). Rejects with DuplicateKeyError when
   * another process creates the policy while it finds none.
   */
  restorePolicy(policy: Policy, version: number, by: Writer, checked?: CheckedAgainst): Promise<void>;
}

/** The attribute schema document (read with the policies: see LoadedPolicies.schemas). */
export interface SchemaWrites {
  /**
   * Replaces the attribute schema document (or deletes it: `document` null, false when there is
   * none), as one policy revision (see SCHEMAS_CHANGE), with its audit record (target `schemas`);
   * `restoredFrom`: the write restores that version. Resolves with the version it made.
   */
  writeSchemas(document: SchemaDocument, by: Writer, restoredFrom?: number): Promise<number>;
  deleteSchemas(by: Writer): Promise<number | false>;
  /** The record of the write that made version `version` of the schema document, if it is still kept. */
  schemasVersion(version: number): Promise<AuditRecord | undefined>;
}

/** Reading the entity registry. */
export interface EntityReads {
  getEntity(uri: string): Promise<Entity | undefined>;
  /** In registration order. */
  listEntities(offset: number, limit: number): Promise<Entity[]>;
  /** Up to `limit` entities whose uri sorts after `after` ('' for the first), in uri order, by an index range: the entity cache's warm-up pages. */
  listEntitiesAfter(after: string, limit: number): Promise<Entity[]>;
  countEntities(): Promise<number>;
  /**
   * Up to `limit` entities whose uri starts with `prefix` (which ends with `:`, as `<type>:` does) and
   * sorts after `after` ('' for the first), in uri order: the order of the uris' UTF-8 bytes, the
   * same in every store. Reads an index range, never the whole registry. `narrowedBy`: see
   * QueryableEntities; a store without that capability leaves none out.
   */
  listEntitiesUnder(prefix: string, after: string, limit: number, narrowedBy?: MongoFilter): Promise<Entity[]>;
}

/**
 * The optional capability of narrowing a listing by a filter in the database (MongoDB's): entities
 * whose stored attributes `narrowedBy` (a MongoDB filter written for `entityFilter`) does not select
 * may be left out of listEntitiesUnder (the others are listed as without it). A narrowed listing that
 * runs out of its time in the database rejects with NarrowingTimedOut.
 */
export interface QueryableEntities {
  /** Where a filter finds an entity's uri and attributes, and how many levels of the query it is placed in (see mongoFilter). */
  readonly entityFilter: { layout: MongoFilterOptions; nestedIn: number };
}

/** Writing the entity registry: each write is audited. */
export interface EntityWrites {
  /** Rejects with DuplicateKeyError when the uri is taken. */
  createEntity(entity: Entity, by: Writer, checked?: CheckedAgainst): Promise<void>;
  /**
   * Registers every entity or none, each with its audit record, in one transaction, in the order
   * given. Rejects with DuplicateKeyError naming the first uri that is taken.
   */
  createEntities(entities: readonly Entity[], by: Writer, checked?: CheckedAgainst): Promise<void>;
  /** Applies `change` to the stored entity atomically; undefined when there is no such entity. */
  updateEntity(uri: string, change: (entity: Entity) => Entity, by: Writer, checked?: CheckedAgainst): Promise<Entity | undefined>;
  deleteEntity(uri: string, by: Writer): Promise<boolean>;
}

/** The audit trail the writes leave. */
export interface AuditTrail {
  /**
   * Audit records matching `query`, newest first: by id, which grows in the order their writes
   * committed. A record's time is the clock of the process that made the write, when it made it:
   * with several processes on one store, times may run backwards from one record to the next by as
   * much as their clocks disagree, and `since`/`until` select by those times.
   */
  listAudit(query: AuditQuery): Promise<AuditRecord[]>;
  /** The record of the write that made version `version` of policy `name`, if it is still kept. */
  policyVersion(name: string, version: number): Promise<AuditRecord | undefined>;
  /**
   * Deletes up to `batch` of the oldest records that `retention` no longer keeps, holding the store
   * no longer than that takes (embedded: one short transaction; MongoDB: one delete, in no
   * transaction, so that processes pruning at once never conflict); returns how many went (fewer
   * than `batch`: nothing is left to prune, or another process pruned some of them meanwhile).
   */
  pruneAudit(retention: AuditRetention, batch: number): Promise<number>;
}

/** The change source every process follows. */
export interface Subscribable {
  /**
   * Calls `listener` for every change committed by other processes (and other connections),
   * in commit order, until the returned function is called: every change after `from` (a position
   * from loadPolicies), or after this call when none is given. A process's own writes are applied
   * by the code that makes them, before they are acknowledged.
   */
  watch(listener: StoreChangeListener, from?: FeedPosition): () => void;
}

export interface Lifecycle {
  /** Present on a store that maintains its database in the background (MongoDB, unless --store-maintenance off). */
  readonly maintenance?: BackgroundMaintenance;
  close(): Promise<void>;
}

/**
 * Where policies and entities live: every capability a driver offers. Implementations:
 * `embedded/` (SQLite, the default) and `mongodb/` (shared by many processes), each a module per
 * capability behind one facade. Every write resolves only once it is durable, and every write that
 * changes something commits, in the same transaction, one audit record naming `by`; a write that
 * changes nothing or fails leaves none.
 */
export interface Store
  extends PolicyReads, PolicyWrites, SchemaWrites, EntityReads, EntityWrites, AuditTrail, Subscribable, Lifecycle, Partial<QueryableEntities> {}
