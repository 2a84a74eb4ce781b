import { isDeepStrictEqual } from 'node:util';
import type { Policy } from '../schemas/policy.js';
import type { Entity } from '../schemas/entity.js';
import type { ENTITY_OPERATIONS, POLICY_OPERATIONS, SCHEMAS_OPERATIONS } from '../schemas/audit.js';
import type { SchemaDocument } from '../attribute-schemas/schema-document.js';

/** Who made an admin write and through which request; recorded with the write. */
export interface Writer {
  /** The name of the admin key used, or `anonymous` when authentication is off. */
  actor: string;
  /** The client's address. */
  client: string;
  requestId: string;
  /** Method and route, e.g. `POST /create-policy`. */
  route: string;
}

export type PolicyOperation = (typeof POLICY_OPERATIONS)[number];
export type EntityOperation = (typeof ENTITY_OPERATIONS)[number];
export type SchemasOperation = (typeof SCHEMAS_OPERATIONS)[number];
export type AuditOperation = PolicyOperation | EntityOperation | SchemasOperation;

/** An entity as an audit record shows it: its attribute values only when the server records them. */
export type AuditedEntity =
  | { type: Entity['type']; attributes: Record<string, unknown> }
  | { type: Entity['type']; keys: string[] };

interface RecordBase {
  time: string;
  target: string;
  actor: string;
  client: string;
  request_id: string;
  route: string;
}

export interface PolicyRecordFields {
  operation: PolicyOperation;
  /** The version of the policy this write made (the first write of a policy makes version 1). */
  version: number;
  before: Policy | null;
  after: Policy | null;
  /** For a restore: the version restored. */
  restored_from?: number;
}

export interface EntityRecordFields {
  operation: EntityOperation;
  /** Attribute keys added, removed or given another value, sorted. */
  changed_keys: string[];
  before: AuditedEntity | null;
  after: AuditedEntity | null;
}

export interface SchemasRecordFields {
  operation: SchemasOperation;
  /** The version of the schema document this write made (the first write makes version 1; a deletion makes one too). */
  version: number;
  before: SchemaDocument | null;
  after: SchemaDocument | null;
  /** For a restore: the version restored. */
  restored_from?: number;
}

/** An audit record before the store numbers it. */
export type AuditDraft = RecordBase & (PolicyRecordFields | EntityRecordFields | SchemasRecordFields);
/** An audit record as stored and listed: `id` grows with every record, newest first in lists. */
export type AuditRecord = { id: number } & AuditDraft;

/** Whether a record is of a policy write (which has a version, and a policy before and after). */
export const isPolicyRecord = (record: AuditRecord): record is Extract<AuditRecord, PolicyRecordFields> => record.operation.startsWith('policy.');
/** Whether a record is of a schema document write. */
export const isSchemasRecord = (record: AuditRecord): record is Extract<AuditRecord, SchemasRecordFields> => record.operation.startsWith('schemas.');

export const policyTarget = (name: string) => `policy:${name}`;
export const entityTarget = (uri: string) => `entity:${uri}`;
/** The target of the schema document's records: there is one document. */
export const SCHEMAS_TARGET = 'schemas';

function base(target: string, by: Writer, time: number): RecordBase {
  return { time: new Date(time).toISOString(), target, actor: by.actor, client: by.client, request_id: by.requestId, route: by.route };
}

/** A write of policy `name`: the policy before and after it (null where there is none). */
export interface PolicyChange {
  operation: PolicyOperation;
  name: string;
  before: Policy | null;
  after: Policy | null;
  /** For a restore: the version restored. */
  restoredFrom?: number;
}

/** The record of a write that made `version` of a versioned target (a policy, the schema document). */
function versionedRecord<Fields extends PolicyRecordFields | SchemasRecordFields>(
  target: string,
  by: Writer,
  time: number,
  change: { operation: Fields['operation']; before: Fields['before']; after: Fields['after']; restoredFrom?: number; version: number },
): AuditDraft {
  return {
    ...base(target, by, time),
    operation: change.operation,
    version: change.version,
    before: change.before,
    after: change.after,
    ...(change.restoredFrom === undefined ? {} : { restored_from: change.restoredFrom }),
  } as AuditDraft;
}

/** The record of a policy write that made `version` of policy `name`. */
export const policyRecord = (by: Writer, time: number, change: PolicyChange & { version: number }): AuditDraft =>
  versionedRecord<PolicyRecordFields>(policyTarget(change.name), by, time, change);

/** A write of the schema document: the document before and after it (null where there is none). */
export interface SchemasChange {
  operation: SchemasOperation;
  before: SchemaDocument | null;
  after: SchemaDocument | null;
  /** For a restore: the version restored. */
  restoredFrom?: number;
}

/** The record of a schema document write that made `version` of it. */
export const schemasRecord = (by: Writer, time: number, change: SchemasChange & { version: number }): AuditDraft =>
  versionedRecord<SchemasRecordFields>(SCHEMAS_TARGET, by, time, change);

const valuesOf = (entity: Entity) => new Map(entity.attributes.map(({ key, value }) => [key, value]));

function audited(entity: Entity | undefined, withValues: boolean): AuditedEntity | null {
  if (entity === undefined) return null;
  const values = valuesOf(entity);
  return withValues ? { type: entity.type, attributes: Object.fromEntries(values) } : { type: entity.type, keys: [...values.keys()] };
}

/**
 * The record of an entity write. Attribute values may be sensitive: the record names the keys that
 * changed, and holds values only when `withValues` (the server's `--audit-values`).
 */
export function entityRecord(
  by: Writer,
  time: number,
  change: { operation: EntityOperation; uri: string; before: Entity | undefined; after: Entity | undefined; withValues: boolean },
): AuditDraft {
  const before = change.before === undefined ? new Map<string, unknown>() : valuesOf(change.before);
  const after = change.after === undefined ? new Map<string, unknown>() : valuesOf(change.after);
  const changed = new Set<string>();
  for (const [key, value] of before) if (!after.has(key) || !isDeepStrictEqual(after.get(key), value)) changed.add(key);
  for (const key of after.keys()) if (!before.has(key)) changed.add(key);
  return {
    ...base(entityTarget(change.uri), by, time),
    operation: change.operation,
    changed_keys: [...changed].sort(),
    before: audited(change.before, change.withValues),
    after: audited(change.after, change.withValues),
  };
}

/** What `GET /admin/audit` asks for; every field narrows the list. */
export interface AuditQuery {
  /** Epoch ms, inclusive. */
  since?: number;
  /** Epoch ms, exclusive. */
  until?: number;
  /** A target (`policy:<name>`, `entity:<uri>`, `schemas`), or a prefix of one when `targetPrefix`. */
  target?: string;
  targetPrefix?: boolean;
  actor?: string;
  /** Only records older than this id (the cursor of the previous page). */
  before?: number;
  limit: number;
}

/** Records kept: those within `maxAgeMs` of now and among the newest `maxCount`; undefined limits nothing. */
export interface AuditRetention {
  maxAgeMs?: number;
  maxCount?: number;
}
