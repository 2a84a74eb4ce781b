import Database from 'better-sqlite3';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { PRIVATE_DIRECTORY, PRIVATE_FILE } from '../private-files.js';
import type { Policy } from '../schemas/policy.js';
import { jsonEqual } from '../engine/json-equal.js';
import type { Entity } from '../schemas/entity.js';
import { type FeedPosition, type LoadedPolicies, type LoadedPolicyChanges, SCHEMAS_CHANGE, type Store, type StoredSchemas, type StoreChangeListener, type StoreOptions, uriRange, type PromoteOutcome } from './store.js';
import { DuplicateKeyError, isRefusal, SchemasMovedOn, type CheckedAgainst } from './errors.js';
import {
  entityRecord,
  policyRecord,
  policyTarget,
  schemasRecord,
  SCHEMAS_TARGET,
  type AuditDraft,
  type AuditQuery,
  type AuditRecord,
  type AuditRetention,
  type PolicyChange,
  type SchemasChange,
  type Writer,
} from '../audit/record.js';
import type { SchemaDocument } from '../attribute-schemas/schema-document.js';

type Collection = 'policies' | 'entities';

export const DATABASE_FILE = 'verdict.db';

/**
 * Schema migrations, in order; `PRAGMA user_version` records how many have run. A release that
 * changes the layout appends one and never edits an earlier one.
 */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE policies (
     position INTEGER PRIMARY KEY AUTOINCREMENT,
     name TEXT NOT NULL UNIQUE,
     document TEXT NOT NULL
   );
   CREATE TABLE entities (
     position INTEGER PRIMARY KEY AUTOINCREMENT,
     uri TEXT NOT NULL UNIQUE,
     document TEXT NOT NULL
   );
   CREATE TABLE revisions (
     collection TEXT PRIMARY KEY,
     revision INTEGER NOT NULL
   );
   INSERT INTO revisions (collection, revision) VALUES ('policies', 0), ('entities', 0);`,
  // 2: the change log other processes follow (see watch()).
  `CREATE TABLE changes (
     sequence INTEGER PRIMARY KEY AUTOINCREMENT,
     collection TEXT NOT NULL,
     key TEXT NOT NULL
   );`,
  // 3: when each change was committed, so that followers can tell how far behind they are.
  `ALTER TABLE changes ADD COLUMN committed_at INTEGER;`,
  // 4: the audit trail (a record per admin write, its JSON in the record column) and each policy's last
  // version number. Policies stored before it get a baseline record (actor `verdict`) as version 1, so
  // that they have a history to restore.
  `CREATE TABLE audit (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     time_ms INTEGER NOT NULL,
     target TEXT NOT NULL,
     actor TEXT NOT NULL,
     policy_version INTEGER,
     record TEXT NOT NULL
   );
   CREATE INDEX audit_by_target ON audit (target, id);
   CREATE INDEX audit_by_actor ON audit (actor, id);
   CREATE INDEX audit_by_time ON audit (time_ms);
   CREATE UNIQUE INDEX audit_policy_versions ON audit (target, policy_version) WHERE policy_version IS NOT NULL;
   CREATE TABLE policy_versions (
     name TEXT PRIMARY KEY,
     version INTEGER NOT NULL
   );
   INSERT INTO policy_versions (name, version) SELECT name, 1 FROM policies;
   INSERT INTO audit (time_ms, target, actor, policy_version, record)
     SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), 'policy:' || name, 'verdict', 1,
            json_object('time', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'target', 'policy:' || name, 'actor', 'verdict',
                        'client', '', 'request_id', '', 'route', '', 'operation', 'policy.baseline', 'version', 1,
                        'before', json('null'), 'after', json(document))
     FROM policies ORDER BY position;`,
  // 5: which policy each policy revision wrote, so that a process can read only the policies written
  // since the revision it holds (see loadPolicies); trimmed like the change log.
  `CREATE TABLE IF NOT EXISTS policy_changes (
     revision INTEGER PRIMARY KEY,
     name TEXT NOT NULL
   );`,
  // 6: the attribute schema document (one row; document NULL when there is none) and the version its last write made.
  `CREATE TABLE IF NOT EXISTS schema_document (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     document TEXT,
     version INTEGER NOT NULL
   );
   INSERT OR IGNORE INTO schema_document (id, document, version) VALUES (1, NULL, 0);`,
];

interface AuditRow {
  id: number;
  record: string;
}

const auditRecordOf = (row: AuditRow): AuditRecord => ({ id: row.id, ...(JSON.parse(row.record) as AuditDraft) });

interface StoredPolicyRow {
  position: number;
  document: string;
}

interface ChangeRow {
  sequence: number;
  collection: Collection;
  key: string;
  /** Epoch ms; null for changes written before migration 3. */
  committed_at: number | null;
}

/** A position in the embedded feed: the sequence of the last change already seen. */
const feedPosition = (sequence: number) => ({ sequence }) as unknown as FeedPosition;
const sequenceAt = (position: FeedPosition) => (position as unknown as { sequence: number }).sequence;

/** Changes kept for followers by default; one that falls further behind reloads everything. */
const DEFAULT_CHANGES_KEPT = 10_000;
/** How often followers look for other processes' commits (a cheap pragma when nothing changed). */
export const CHANGE_POLL_MILLIS = 25;

/** Runs the migrations not yet applied; inside one write transaction, so processes starting together agree. */
function migrate(db: Database.Database): void {
  db.transaction(() => {
    const applied = db.pragma('user_version', { simple: true }) as number;
    if (applied > MIGRATIONS.length) {
      throw new Error(
        `the data directory was written by a newer Verdict (schema ${applied}, this release knows ${MIGRATIONS.length}); upgrade Verdict`,
      );
    }
    for (let version = applied; version < MIGRATIONS.length; version++) db.exec(MIGRATIONS[version]!);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
}

const isUniqueViolation = (error: unknown) =>
  error instanceof Database.SqliteError && error.code === 'SQLITE_CONSTRAINT_UNIQUE';

/**
 * The default store: one SQLite file in the data directory, in WAL mode with `synchronous=FULL`,
 * so a write has reached the disk when its call returns. Documents are kept as JSON text, so every
 * value keeps its JSON type.
 */
export class EmbeddedStore implements Store {
  private readonly db: Database.Database;
  private readonly statements;
  private readonly stopWatching = new Set<NodeJS.Timeout>();
  private readonly auditQueries = new Map<string, Database.Statement>();
  private readonly changesKept: number;
  private readonly clock: () => number;

  constructor(
    dataDirectory: string,
    private readonly options: Partial<StoreOptions> & { changesKept?: number } = {},
  ) {
    this.changesKept = options.changesKept ?? DEFAULT_CHANGES_KEPT;
    this.clock = options.clock ?? Date.now;
    // Policies, entities and the audit trail: the user's alone. SQLite would make its file 0644 (less the
    // umask), and its journal files take the database file's mode, so the file is made here first.
    mkdirSync(dataDirectory, { recursive: true, mode: PRIVATE_DIRECTORY });
    const databaseFile = join(dataDirectory, DATABASE_FILE);
    closeSync(openSync(databaseFile, 'a', PRIVATE_FILE));
    this.db = new Database(databaseFile);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.pragma('busy_timeout = 5000');
    migrate(this.db);
    const db = this.db;
    this.statements = {
      policyRevision: db.prepare(`SELECT revision FROM revisions WHERE collection = 'policies'`).pluck(),
      bumpRevision: db.prepare(`UPDATE revisions SET revision = revision + 1 WHERE collection = ? RETURNING revision`).pluck(),
      allPolicies: db.prepare('SELECT position, document FROM policies ORDER BY position'),
      policy: db.prepare('SELECT document FROM policies WHERE name = ?').pluck(),
      storedPolicy: db.prepare('SELECT position, document FROM policies WHERE name = ?'),
      policyChangesAfter: db.prepare('SELECT DISTINCT name FROM policy_changes WHERE revision > ?').pluck(),
      policyChangesCount: db.prepare('SELECT count(*) FROM policy_changes WHERE revision > ?').pluck(),
      logPolicyChange: db.prepare('INSERT INTO policy_changes (revision, name) VALUES (?, ?)'),
      trimPolicyChanges: db.prepare('DELETE FROM policy_changes WHERE revision <= ?'),
      insertPolicy: db.prepare('INSERT INTO policies (name, document) VALUES (?, ?)'),
      updatePolicy: db.prepare('UPDATE policies SET document = ? WHERE name = ?'),
      deletePolicy: db.prepare('DELETE FROM policies WHERE name = ?'),
      schemas: db.prepare('SELECT document, version FROM schema_document WHERE document IS NOT NULL'),
      writeSchemas: db.prepare('UPDATE schema_document SET document = ?, version = version + 1 RETURNING version').pluck(),
      entity: db.prepare('SELECT document FROM entities WHERE uri = ?').pluck(),
      entityPage: db.prepare('SELECT document FROM entities ORDER BY position LIMIT ? OFFSET ?').pluck(),
      entityCount: db.prepare('SELECT count(*) FROM entities').pluck(),
      // uri's UNIQUE index holds the range; TEXT compares by its UTF-8 bytes.
      entitiesUnder: db.prepare('SELECT document FROM entities WHERE uri >= ? AND uri < ? AND uri > ? ORDER BY uri LIMIT ?').pluck(),
      entitiesAfter: db.prepare('SELECT document FROM entities WHERE uri > ? ORDER BY uri LIMIT ?').pluck(),
      insertEntity: db.prepare('INSERT INTO entities (uri, document) VALUES (?, ?)'),
      updateEntity: db.prepare('UPDATE entities SET document = ? WHERE uri = ?'),
      deleteEntity: db.prepare('DELETE FROM entities WHERE uri = ?'),
      logChange: db.prepare('INSERT INTO changes (collection, key, committed_at) VALUES (?, ?, ?)'),
      trimChanges: db.prepare('DELETE FROM changes WHERE sequence <= last_insert_rowid() - ?'),
      changesAfter: db.prepare('SELECT sequence, collection, key, committed_at FROM changes WHERE sequence > ? ORDER BY sequence'),
      lastChange: db.prepare('SELECT coalesce(max(sequence), 0) FROM changes').pluck(),
      dataVersion: db.prepare('PRAGMA data_version').pluck(),
      nextPolicyVersion: db
        .prepare('INSERT INTO policy_versions (name, version) VALUES (?, 1) ON CONFLICT (name) DO UPDATE SET version = version + 1 RETURNING version')
        .pluck(),
      insertAudit: db.prepare('INSERT INTO audit (time_ms, target, actor, policy_version, record) VALUES (?, ?, ?, ?, ?)'),
      policyVersion: db.prepare('SELECT id, record FROM audit WHERE target = ? AND policy_version = ?'),
      newestPrunable: db.prepare('SELECT id FROM audit ORDER BY id DESC LIMIT 1 OFFSET ?').pluck(),
      pruneThrough: db.prepare('DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE id <= ? ORDER BY id LIMIT ?)'),
      pruneOlderThan: db.prepare('DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE time_ms < ? ORDER BY id LIMIT ?)'),
    };
  }

  loadPolicies(): Promise<LoadedPolicies>;
  loadPolicies(since: number): Promise<LoadedPolicyChanges>;
  async loadPolicies(since?: number): Promise<LoadedPolicyChanges> {
    return this.db.transaction((): LoadedPolicyChanges => {
      const revision = this.statements.policyRevision.get() as number;
      if (since !== undefined && since <= revision) {
        // Complete only when every revision since has its row: the log is trimmed, and revisions before migration 5 have none.
        if ((this.statements.policyChangesCount.get(since) as number) === revision - since) {
          const names = this.statements.policyChangesAfter.all(since) as string[];
          // A schema document written since changes what every policy is held to: the whole set is loaded, with it.
          if (!names.includes(SCHEMAS_CHANGE)) return { revision, changes: names.map((name) => ({ name, now: this.storedPolicy(name) ?? null })) };
        }
      }
      const rows = this.statements.allPolicies.all() as StoredPolicyRow[];
      const schemas = this.readSchemas();
      return {
        revision,
        ...(schemas && { schemas }),
        policies: rows.map((row) => JSON.parse(row.document) as Policy),
        positions: rows.map((row) => row.position),
        feedPosition: feedPosition(this.statements.lastChange.get() as number),
      };
    })();
  }

  private storedPolicy(name: string): { policy: Policy; position: number } | undefined {
    const row = this.statements.storedPolicy.get(name) as StoredPolicyRow | undefined;
    return row === undefined ? undefined : { policy: JSON.parse(row.document) as Policy, position: row.position };
  }

  async policyRevision(): Promise<number> {
    return this.statements.policyRevision.get() as number;
  }

  async getPolicy(name: string): Promise<Policy | undefined> {
    return this.readPolicy(name);
  }

  async createPolicy(policy: Policy, by: Writer, checked?: CheckedAgainst): Promise<void> {
    this.write(() => {
      try {
        this.statements.insertPolicy.run(policy.name, JSON.stringify(policy));
      } catch (error) {
        if (isUniqueViolation(error)) throw new DuplicateKeyError(`Policy '${policy.name}' already exists`);
        throw error;
      }
      this.recordPolicyWrite(by, { operation: 'policy.create', name: policy.name, before: null, after: policy });
    }, checked);
  }

  async replacePolicy(policy: Policy, by: Writer, checked?: CheckedAgainst): Promise<boolean> {
    return this.write(() => {
      const before = this.readPolicy(policy.name);
      if (before === undefined) return false;
      this.statements.updatePolicy.run(JSON.stringify(policy), policy.name);
      this.recordPolicyWrite(by, { operation: 'policy.replace', name: policy.name, before, after: policy });
      return true;
    }, checked);
  }

  async deletePolicy(name: string, by: Writer): Promise<boolean> {
    return this.write(() => {
      const before = this.readPolicy(name);
      if (before === undefined) return false;
      this.statements.deletePolicy.run(name);
      this.recordPolicyWrite(by, { operation: 'policy.delete', name, before, after: null });
      return true;
    });
  }

  async promotePolicy(promoted: Policy, shadowName: string, shadowAsRead: Policy, by: Writer, checked?: CheckedAgainst): Promise<PromoteOutcome> {
    return this.write((): PromoteOutcome => {
      const [before, shadow] = [this.readPolicy(promoted.name), this.readPolicy(shadowName)];
      if (before === undefined || shadow === undefined) return 'gone';
      if (!jsonEqual(shadow, shadowAsRead)) return 'changed';
      this.statements.updatePolicy.run(JSON.stringify(promoted), promoted.name);
      this.recordPolicyWrite(by, { operation: 'policy.replace', name: promoted.name, before, after: promoted });
      if (shadowName === promoted.name) return 'promoted';
      this.statements.deletePolicy.run(shadowName);
      this.recordPolicyWrite(by, { operation: 'policy.delete', name: shadowName, before: shadow, after: null });
      return 'promoted';
    }, checked);
  }

  async restorePolicy(policy: Policy, version: number, by: Writer, checked?: CheckedAgainst): Promise<void> {
    this.write(() => {
      const before = this.readPolicy(policy.name);
      if (before === undefined) this.statements.insertPolicy.run(policy.name, JSON.stringify(policy));
      else this.statements.updatePolicy.run(JSON.stringify(policy), policy.name);
      this.recordPolicyWrite(by, { operation: 'policy.restore', name: policy.name, before: before ?? null, after: policy, restoredFrom: version });
    }, checked);
  }

  async writeSchemas(document: SchemaDocument, by: Writer, restoredFrom?: number): Promise<number> {
    return this.write(() => this.recordSchemasWrite(by, { operation: restoredFrom === undefined ? 'schemas.replace' : 'schemas.restore', after: document, restoredFrom }));
  }

  async deleteSchemas(by: Writer): Promise<number | false> {
    return this.write(() => (this.readSchemas() === undefined ? false : this.recordSchemasWrite(by, { operation: 'schemas.delete', after: null })));
  }

  async schemasVersion(version: number): Promise<AuditRecord | undefined> {
    return this.recordOfVersion(SCHEMAS_TARGET, version);
  }

  /** Within a write: the document, its version, the policy revision it moves and its audit record. */
  private recordSchemasWrite(by: Writer, change: Omit<SchemasChange, 'before'>): number {
    const before = this.readSchemas()?.document ?? null;
    const version = this.statements.writeSchemas.get(change.after === null ? null : JSON.stringify(change.after)) as number;
    this.recordChange('policies', SCHEMAS_CHANGE);
    this.recordAudit(schemasRecord(by, this.clock(), { ...change, before, version }), version);
    return version;
  }

  private readSchemas(): StoredSchemas | undefined {
    const row = this.statements.schemas.get() as { document: string; version: number } | undefined;
    return row === undefined ? undefined : { document: JSON.parse(row.document) as SchemaDocument, version: row.version };
  }

  private readPolicy(name: string): Policy | undefined {
    const document = this.statements.policy.get(name) as string | undefined;
    return document === undefined ? undefined : (JSON.parse(document) as Policy);
  }

  /** Within a write: the revision, the change log, the policy's next version and its audit record. */
  private recordPolicyWrite(by: Writer, change: PolicyChange): void {
    this.recordChange('policies', change.name);
    const version = this.statements.nextPolicyVersion.get(change.name) as number;
    this.recordAudit(policyRecord(by, this.clock(), { ...change, version }), version);
  }

  async getEntity(uri: string): Promise<Entity | undefined> {
    return this.readEntity(uri);
  }

  async listEntities(offset: number, limit: number): Promise<Entity[]> {
    // SQLite takes only 64-bit integers here; a larger offset (say 1e20) means "past the end" all the same.
    const page = [limit, offset].map((n) => Math.min(n, Number.MAX_SAFE_INTEGER));
    return (this.statements.entityPage.all(...page) as string[]).map((document) => JSON.parse(document) as Entity);
  }

  async countEntities(): Promise<number> {
    return this.statements.entityCount.get() as number;
  }

  async listEntitiesAfter(after: string, limit: number): Promise<Entity[]> {
    const documents = this.statements.entitiesAfter.all(after, Math.min(limit, Number.MAX_SAFE_INTEGER)) as string[];
    return documents.map((document) => JSON.parse(document) as Entity);
  }

  async listEntitiesUnder(prefix: string, after: string, limit: number): Promise<Entity[]> {
    const { from, to } = uriRange(prefix);
    const documents = this.statements.entitiesUnder.all(from, to, after, Math.min(limit, Number.MAX_SAFE_INTEGER)) as string[];
    return documents.map((document) => JSON.parse(document) as Entity);
  }

  async createEntity(entity: Entity, by: Writer, checked?: CheckedAgainst): Promise<void> {
    this.write(() => this.insertEntity(entity, by), checked);
  }

  async createEntities(entities: readonly Entity[], by: Writer, checked?: CheckedAgainst): Promise<void> {
    this.write(() => {
      for (const entity of entities) this.insertEntity(entity, by);
    }, checked);
  }

  /** Within a write: the new entity, its change and its audit record. */
  private insertEntity(entity: Entity, by: Writer): void {
    try {
      this.statements.insertEntity.run(entity.uri, JSON.stringify(entity));
    } catch (error) {
      if (isUniqueViolation(error)) throw new DuplicateKeyError(`Entity '${entity.uri}' already exists`, entity.uri);
      throw error;
    }
    this.recordEntityWrite(by, { operation: 'entity.create', uri: entity.uri, before: undefined, after: entity });
  }

  async updateEntity(uri: string, change: (entity: Entity) => Entity, by: Writer, checked?: CheckedAgainst): Promise<Entity | undefined> {
    return this.write(() => {
      const before = this.readEntity(uri);
      if (before === undefined) return undefined;
      const updated = change(before);
      this.statements.updateEntity.run(JSON.stringify(updated), uri);
      this.recordEntityWrite(by, { operation: 'entity.update', uri, before, after: updated });
      return updated;
    }, checked);
  }

  async deleteEntity(uri: string, by: Writer): Promise<boolean> {
    return this.write(() => {
      const before = this.readEntity(uri);
      if (before === undefined) return false;
      this.statements.deleteEntity.run(uri);
      this.recordEntityWrite(by, { operation: 'entity.delete', uri, before, after: undefined });
      return true;
    });
  }

  private readEntity(uri: string): Entity | undefined {
    const document = this.statements.entity.get(uri) as string | undefined;
    return document === undefined ? undefined : (JSON.parse(document) as Entity);
  }

  private recordEntityWrite(by: Writer, change: Omit<Parameters<typeof entityRecord>[2], 'withValues'>): void {
    this.recordChange('entities', change.uri);
    this.recordAudit(entityRecord(by, this.clock(), { ...change, withValues: this.options.auditValues ?? false }), null);
  }

  async listAudit(query: AuditQuery): Promise<AuditRecord[]> {
    const conditions: string[] = [];
    const parameters: unknown[] = [];
    const where = (condition: string, ...values: unknown[]) => {
      conditions.push(condition);
      parameters.push(...values);
    };
    if (query.before !== undefined) where('id < ?', query.before);
    if (query.since !== undefined) where('time_ms >= ?', query.since);
    if (query.until !== undefined) where('time_ms < ?', query.until);
    if (query.target !== undefined) {
      if (query.targetPrefix) where('target >= ? AND substr(target, 1, length(?)) = ?', query.target, query.target, query.target);
      else where('target = ?', query.target);
    }
    if (query.actor !== undefined) where('actor = ?', query.actor);
    const sql = `SELECT id, record FROM audit${conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`;
    let statement = this.auditQueries.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.auditQueries.set(sql, statement);
    }
    return (statement.all(...parameters, query.limit) as AuditRow[]).map(auditRecordOf);
  }

  async policyVersion(name: string, version: number): Promise<AuditRecord | undefined> {
    return this.recordOfVersion(policyTarget(name), version);
  }

  /** The record of the write that made version `version` of a versioned target (a policy, the schema document). */
  private recordOfVersion(target: string, version: number): AuditRecord | undefined {
    const row = this.statements.policyVersion.get(target, version) as AuditRow | undefined;
    return row === undefined ? undefined : auditRecordOf(row);
  }

  async pruneAudit(retention: AuditRetention, batch: number): Promise<number> {
    return this.db
      .transaction(() => {
        let pruned = 0;
        if (retention.maxCount !== undefined) {
          const newestPrunable = this.statements.newestPrunable.get(retention.maxCount) as number | undefined;
          if (newestPrunable !== undefined) pruned += this.statements.pruneThrough.run(newestPrunable, batch).changes;
        }
        if (retention.maxAgeMs !== undefined && pruned < batch) {
          pruned += this.statements.pruneOlderThan.run(this.clock() - retention.maxAgeMs, batch - pruned).changes;
        }
        return pruned;
      })
      .immediate();
  }

  /** What this connection's durability rests on, as SQLite reports it (read by tests; pragmas are per connection). */
  durability(): { journalMode: string; synchronous: number } {
    return {
      journalMode: this.db.pragma('journal_mode', { simple: true }) as string,
      synchronous: this.db.pragma('synchronous', { simple: true }) as number,
    };
  }

  async close(): Promise<void> {
    for (const timer of this.stopWatching) clearInterval(timer);
    this.db.close();
  }

  /**
   * Runs `work` in one immediate transaction: the write, its change-log entry and its audit record
   * commit together or not at all, if the stored schemas are those `checked` names. The observer hears
   * of the records once they are committed.
   */
  private write<T>(work: () => T, checked?: CheckedAgainst): T {
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

  /** Operations recorded by the write in progress (see write()). */
  private recorded: AuditDraft['operation'][] = [];

  private recordAudit(draft: AuditDraft, policyVersion: number | null): void {
    this.statements.insertAudit.run(Date.parse(draft.time), draft.target, draft.actor, policyVersion, JSON.stringify(draft));
    this.recorded.push(draft.operation);
  }

  private recordChange(collection: Collection, key: string): void {
    const revision = this.statements.bumpRevision.get(collection) as number;
    if (collection === 'policies') {
      this.statements.logPolicyChange.run(revision, key);
      this.statements.trimPolicyChanges.run(revision - this.changesKept);
    }
    this.statements.logChange.run(collection, key, Date.now());
    this.statements.trimChanges.run(this.changesKept);
  }

  watch(listener: StoreChangeListener, from?: FeedPosition): () => void {
    let lastSequence = from === undefined ? (this.statements.lastChange.get() as number) : sequenceAt(from);
    // From an earlier position, the first poll reads the log whatever data_version says: others may have committed since.
    let lastDataVersion = from === undefined ? (this.statements.dataVersion.get() as number) : undefined;
    const poll = () => {
      // data_version moves only when another connection commits: the usual poll reads one pragma.
      const dataVersion = this.statements.dataVersion.get() as number;
      if (dataVersion === lastDataVersion) return;
      lastDataVersion = dataVersion;
      const rows = this.statements.changesAfter.all(lastSequence) as ChangeRow[];
      if (rows.length === 0) return;
      if (rows[0]!.sequence > lastSequence + 1) {
        listener({ kind: 'everything' });
      } else {
        let firstPolicyChange: ChangeRow | undefined;
        for (const row of rows) {
          if (row.collection === 'policies') firstPolicyChange ??= row;
          else listener({ kind: 'entity', uri: row.key, committedAt: row.committed_at ?? undefined });
        }
        if (firstPolicyChange) listener({ kind: 'policies', committedAt: firstPolicyChange.committed_at ?? undefined });
      }
      lastSequence = rows[rows.length - 1]!.sequence;
    };
    let interrupted = false;
    const pollSafely = () => {
      try {
        poll();
        if (interrupted) listener({ kind: 'resumed' });
        interrupted = false;
      } catch (error) {
        if (!interrupted) listener({ kind: 'interrupted', reason: (error as Error).message });
        interrupted = true;
      }
    };
    const timer = setInterval(pollSafely, CHANGE_POLL_MILLIS);
    timer.unref();
    this.stopWatching.add(timer);
    return () => {
      clearInterval(timer);
      this.stopWatching.delete(timer);
    };
  }
}
