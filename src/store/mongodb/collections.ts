import type { Collection, Db } from 'mongodb';

/**
 * A policy or entity: keyed by its name or uri (so a delete event names it), ordered by a unique
 * position from a counter, kept as JSON text so that every value keeps its JSON type and any
 * attribute key (`__proto__`, `a.b`, `$x`) is stored as it is. `version` moves on every write, so
 * that a write leaving the text as it was still reaches the change feed (MongoDB logs no change
 * for an update that changes nothing).
 */
export interface StoredDocument {
  _id: string;
  position: number;
  document: string;
  /** Absent on documents written before versions were kept. */
  version?: number;
}

/**
 * An entity's row: beside its text, a queryable copy of its attributes and the version that copy was
 * made at (see queryable.ts); both absent on rows written before copies were kept.
 */
export interface StoredEntity extends StoredDocument {
  attributes?: Record<string, unknown> | null;
  attributes_version?: number;
}

export interface Counter {
  /**
   * `policy-position`, `entity-position`, `policy-revision`, `audit-sequence`,
   * `policy-version:<name>`, `schemas-version`, `store-epoch`, or `entity-count`.
   */
  _id: string;
  value: number;
  /** On `entity-count`: counted from the collection and kept since, so it may be trusted (see entity-count.ts). */
  exact?: true;
  /** On `entity-count` while it is counted again: the rows counted, in uri order up to `after`, and moved since by writes up to there. */
  recount?: { after: string; value: number };
  /** On `entity-count`: the collection's estimate less the count when it was last made exact (see entity-count.ts). */
  drift?: number;
}

/** Which policy a policy revision wrote: kept for the last POLICY_CHANGES_KEPT revisions (see MongoStore.loadPolicies). */
export interface PolicyChangeRecord {
  _id: number;
  name: string;
}

/** An audit record: numbered from the `audit-sequence` counter, its JSON in `record`, the fields queries use beside it. */
export interface StoredAuditRecord {
  _id: number;
  time: Date;
  target: string;
  actor: string;
  policy_version?: number;
  record: string;
}

/**
 * The attribute schema document: one document, `_id` `document`; `document` is its JSON text, null
 * once deleted, and `version` the version the last write made (which also moves on a deletion, so
 * that it reaches the change feed).
 */
export interface StoredSchemaDocument {
  _id: 'document';
  document: string | null;
  version: number;
}

/** The MongoDB store's collections. */
export interface StoreCollections {
  policies: Collection<StoredDocument>;
  entities: Collection<StoredEntity>;
  counters: Collection<Counter>;
  audit: Collection<StoredAuditRecord>;
  policyChanges: Collection<PolicyChangeRecord>;
  schemas: Collection<StoredSchemaDocument>;
}

export function collectionsOf(db: Db): StoreCollections {
  return {
    policies: db.collection('policies'),
    entities: db.collection('entities'),
    counters: db.collection('counters'),
    audit: db.collection('audit'),
    policyChanges: db.collection('policy_changes'),
    schemas: db.collection('schemas'),
  };
}

/** Every collection's name: a drop or rename of any of them undoes some of the set-up (see set-up.ts). */
export const COLLECTION_NAMES = ['policies', 'entities', 'counters', 'audit', 'policy_changes', 'schemas'];

export const ENTITY_COUNT = 'entity-count';
