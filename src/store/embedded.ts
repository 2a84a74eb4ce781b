import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Policy } from '../schemas/policy.js';
import type { Entity } from '../schemas/entity.js';
import { DuplicateKeyError, type FeedPosition, type LoadedPolicies, type Store, type StoreChangeListener } from './store.js';

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
];

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

  constructor(
    dataDirectory: string,
    private readonly changesKept = DEFAULT_CHANGES_KEPT,
  ) {
    mkdirSync(dataDirectory, { recursive: true });
    this.db = new Database(join(dataDirectory, DATABASE_FILE));
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.pragma('busy_timeout = 5000');
    migrate(this.db);
    const db = this.db;
    this.statements = {
      policyRevision: db.prepare(`SELECT revision FROM revisions WHERE collection = 'policies'`).pluck(),
      bumpRevision: db.prepare(`UPDATE revisions SET revision = revision + 1 WHERE collection = ?`),
      allPolicies: db.prepare('SELECT document FROM policies ORDER BY position').pluck(),
      policy: db.prepare('SELECT document FROM policies WHERE name = ?').pluck(),
      insertPolicy: db.prepare('INSERT INTO policies (name, document) VALUES (?, ?)'),
      updatePolicy: db.prepare('UPDATE policies SET document = ? WHERE name = ?'),
      deletePolicy: db.prepare('DELETE FROM policies WHERE name = ?'),
      entity: db.prepare('SELECT document FROM entities WHERE uri = ?').pluck(),
      entityPage: db.prepare('SELECT document FROM entities ORDER BY position LIMIT ? OFFSET ?').pluck(),
      entityCount: db.prepare('SELECT count(*) FROM entities').pluck(),
      insertEntity: db.prepare('INSERT INTO entities (uri, document) VALUES (?, ?)'),
      updateEntity: db.prepare('UPDATE entities SET document = ? WHERE uri = ?'),
      deleteEntity: db.prepare('DELETE FROM entities WHERE uri = ?'),
      logChange: db.prepare('INSERT INTO changes (collection, key, committed_at) VALUES (?, ?, ?)'),
      trimChanges: db.prepare('DELETE FROM changes WHERE sequence <= last_insert_rowid() - ?'),
      changesAfter: db.prepare('SELECT sequence, collection, key, committed_at FROM changes WHERE sequence > ? ORDER BY sequence'),
      lastChange: db.prepare('SELECT coalesce(max(sequence), 0) FROM changes').pluck(),
      dataVersion: db.prepare('PRAGMA data_version').pluck(),
    };
  }

  async loadPolicies(): Promise<LoadedPolicies> {
    return this.db.transaction(() => ({
      revision: this.statements.policyRevision.get() as number,
      policies: (this.statements.allPolicies.all() as string[]).map((document) => JSON.parse(document) as Policy),
      feedPosition: feedPosition(this.statements.lastChange.get() as number),
    }))();
  }

  async policyRevision(): Promise<number> {
    return this.statements.policyRevision.get() as number;
  }

  async getPolicy(name: string): Promise<Policy | undefined> {
    const document = this.statements.policy.get(name) as string | undefined;
    return document === undefined ? undefined : (JSON.parse(document) as Policy);
  }

  async createPolicy(policy: Policy): Promise<void> {
    try {
      this.writeRows('policies', policy.name, () => this.statements.insertPolicy.run(policy.name, JSON.stringify(policy)).changes);
    } catch (error) {
      if (isUniqueViolation(error)) throw new DuplicateKeyError(`Policy '${policy.name}' already exists`);
      throw error;
    }
  }

  async replacePolicy(policy: Policy): Promise<boolean> {
    return this.writeRows('policies', policy.name, () => this.statements.updatePolicy.run(JSON.stringify(policy), policy.name).changes);
  }

  async deletePolicy(name: string): Promise<boolean> {
    return this.writeRows('policies', name, () => this.statements.deletePolicy.run(name).changes);
  }

  async getEntity(uri: string): Promise<Entity | undefined> {
    const document = this.statements.entity.get(uri) as string | undefined;
    return document === undefined ? undefined : (JSON.parse(document) as Entity);
  }

  async listEntities(offset: number, limit: number): Promise<Entity[]> {
    // SQLite takes only 64-bit integers here; a larger offset (say 1e20) means "past the end" all the same.
    const page = [limit, offset].map((n) => Math.min(n, Number.MAX_SAFE_INTEGER));
    return (this.statements.entityPage.all(...page) as string[]).map((document) => JSON.parse(document) as Entity);
  }

  async countEntities(): Promise<number> {
    return this.statements.entityCount.get() as number;
  }

  async createEntity(entity: Entity): Promise<void> {
    try {
      this.writeRows('entities', entity.uri, () => this.statements.insertEntity.run(entity.uri, JSON.stringify(entity)).changes);
    } catch (error) {
      if (isUniqueViolation(error)) throw new DuplicateKeyError(`Entity '${entity.uri}' already exists`);
      throw error;
    }
  }

  async updateEntity(uri: string, change: (entity: Entity) => Entity): Promise<Entity | undefined> {
    return this.db
      .transaction(() => {
        const document = this.statements.entity.get(uri) as string | undefined;
        if (document === undefined) return undefined;
        const updated = change(JSON.parse(document) as Entity);
        this.statements.updateEntity.run(JSON.stringify(updated), uri);
        this.recordChange('entities', uri);
        return updated;
      })
      .immediate();
  }

  async deleteEntity(uri: string): Promise<boolean> {
    return this.writeRows('entities', uri, () => this.statements.deleteEntity.run(uri).changes);
  }

  async close(): Promise<void> {
    for (const timer of this.stopWatching) clearInterval(timer);
    this.db.close();
  }

  /** Runs a write in one transaction that, when a row changed, also advances the revision and logs the change. */
  private writeRows(collection: Collection, key: string, write: () => number): boolean {
    return this.db
      .transaction(() => {
        const changed = write() > 0;
        if (changed) this.recordChange(collection, key);
        return changed;
      })
      .immediate();
  }

  private recordChange(collection: Collection, key: string): void {
    this.statements.bumpRevision.run(collection);
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
