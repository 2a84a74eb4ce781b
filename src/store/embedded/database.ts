import Database from 'better-sqlite3';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { PRIVATE_DIRECTORY, PRIVATE_FILE } from '../../private-files.js';

// The embedded store's SQLite file: where it is, how it is opened, and its layout's migrations.

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

/**
 * Opens (making it first when there is none) the database file in `dataDirectory`, in WAL mode with
 * `synchronous=FULL`, so that a write has reached the disk when its call returns, and migrated.
 */
export function openDatabase(dataDirectory: string): Database.Database {
  // Policies, entities and the audit trail: the user's alone. SQLite would make its file 0644 (less the
  // umask), and its journal files take the database file's mode, so the file is made here first.
  mkdirSync(dataDirectory, { recursive: true, mode: PRIVATE_DIRECTORY });
  const databaseFile = join(dataDirectory, DATABASE_FILE);
  closeSync(openSync(databaseFile, 'a', PRIVATE_FILE));
  const db = new Database(databaseFile);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
}

export const isUniqueViolation = (error: unknown) => error instanceof Database.SqliteError && error.code === 'SQLITE_CONSTRAINT_UNIQUE';
