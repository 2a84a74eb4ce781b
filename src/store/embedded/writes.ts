import type Database from 'better-sqlite3';
import type { SchemaDocument } from '../../attribute-schemas/schema-document.js';
import type { StoredSchemas, StoreOptions } from '../store.js';
import { isRefusal, SchemasMovedOn, type CheckedAgainst } from '../errors.js';
import { policyRecord, type AuditDraft, type PolicyChange, type Writer } from '../../audit/record.js';

// The machinery every embedded write shares, whichever capability makes it: one immediate
// transaction, the revision and change log it moves, and the audit record it commits.

/** What a change-log row names: a policy (or the schema document), or an entity. */
export type ChangedCollection = 'policies' | 'entities';

/** Changes kept for followers by default; one that falls further behind reloads everything. */
const DEFAULT_CHANGES_KEPT = 10_000;

export interface EmbeddedStoreOptions extends Partial<StoreOptions> {
  /** How many changes (and policy revisions) the logs keep for followers. */
  changesKept?: number;
}

export class EmbeddedWrites {
  readonly clock: () => number;
  private readonly changesKept: number;
  private readonly statements;
  /** Operations recorded by the write in progress (see write()). */
  private recorded: AuditDraft['operation'][] = [];

  constructor(
    readonly db: Database.Database,
    readonly options: EmbeddedStoreOptions,
  ) {
    this.clock = options.clock ?? Date.now;
    this.changesKept = options.changesKept ?? DEFAULT_CHANGES_KEPT;
    this.statements = {
      schemas: db.prepare('SELECT document, version FROM schema_document WHERE document IS NOT NULL'),
      bumpRevision: db.prepare(`UPDATE revisions SET revision = revision + 1 WHERE collection = ? RETURNING revision`).pluck(),
      logPolicyChange: db.prepare('INSERT INTO policy_changes (revision, name) VALUES (?, ?)'),
      trimPolicyChanges: db.prepare('DELETE FROM policy_changes WHERE revision <= ?'),
      logChange: db.prepare('INSERT INTO changes (collection, key, committed_at) VALUES (?, ?, ?)'),
      trimChanges: db.prepare('DELETE FROM changes WHERE sequence <= last_insert_rowid() - ?'),
      nextPolicyVersion: db
        .prepare('INSERT INTO policy_versions (name, version) VALUES (?, 1) ON CONFLICT (name) DO UPDATE SET version = version + 1 RETURNING version')
        .pluck(),
      insertAudit: db.prepare('INSERT INTO audit (time_ms, target, actor, policy_version, record) VALUES (?, ?, ?, ?, ?)'),
    };
  }

  /**
   * Runs `work` in one immediate transaction: the write, its change-log entry and its audit record
   * commit together or not at all, if the stored schemas are those `checked` names. The observer hears
   * of the records once they are committed.
   */
  write<T>(work: () => T, checked?: CheckedAgainst): T {
    this.recorded = [];
    try {
      const result = this.db
        .transaction(() => {
          // Other processes on this file may have written other schemas (see CheckedAgainst).
          if (checked !== undefined && this.readSchemas()?.version !== checked.schemasVersion) throw new SchemasMovedOn(checked.schemasVersion, this.readSchemas()?.version);
          return work();
        })
        .immediate();
      for (const operation of this.recorded) this.options.observer?.recorded(operation);
      return result;
    } catch (error) {
      if (!isRefusal(error)) this.options.observer?.failed();
      throw error;
    }
  }

  readSchemas(): StoredSchemas | undefined {
    const row = this.statements.schemas.get() as { document: string; version: number } | undefined;
    return row === undefined ? undefined : { document: JSON.parse(row.document) as SchemaDocument, version: row.version };
  }

  recordAudit(draft: AuditDraft, policyVersion: number | null): void {
    this.statements.insertAudit.run(Date.parse(draft.time), draft.target, draft.actor, policyVersion, JSON.stringify(draft));
    this.recorded.push(draft.operation);
  }

  /** Within a write: the collection's revision, and the change logs followers read (trimmed to what they keep). */
  recordChange(collection: ChangedCollection, key: string): void {
    const revision = this.statements.bumpRevision.get(collection) as number;
    if (collection === 'policies') {
      this.statements.logPolicyChange.run(revision, key);
      this.statements.trimPolicyChanges.run(revision - this.changesKept);
    }
    this.statements.logChange.run(collection, key, Date.now());
    this.statements.trimChanges.run(this.changesKept);
  }

  /** Within a write: the revision, the change log, the policy's next version and its audit record. */
  recordPolicyWrite(by: Writer, change: PolicyChange): void {
    this.recordChange('policies', change.name);
    const version = this.statements.nextPolicyVersion.get(change.name) as number;
    this.recordAudit(policyRecord(by, this.clock(), { ...change, version }), version);
  }
}
