import t from 'tap';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { EmbeddedStore } from '../../src/store/embedded/store.js';
import { DATABASE_FILE } from '../../src/store/embedded/database.js';
import { openStore } from '../../src/store/open.js';
import { scratchDir, startServer } from '../helpers/server.js';
import { runVerdict } from '../helpers/child.js';
import { TEST_WRITER } from '../helpers/writer.js';

// What the embedded store promises beyond the store contract: durable writes, and data directories
// of other releases upgraded or refused.

/** SQLite's `PRAGMA synchronous` values. */
const SYNCHRONOUS = { OFF: 0, NORMAL: 1, FULL: 2, EXTRA: 3 };

/** Opens the database file of `dir`, which must exist (a missing one would be created empty). */
function openDatabase(dir: string): Database.Database {
  return new Database(join(dir, DATABASE_FILE), { fileMustExist: true });
}

function schemaVersion(dir: string): number {
  const db = openDatabase(dir);
  try {
    return db.pragma('user_version', { simple: true }) as number;
  } finally {
    db.close();
  }
}

t.test('every connection the server opens writes through to disk: WAL, synchronous=FULL', async (t) => {
  const dir = scratchDir(t);
  for (const opening of ['a new data directory', 'an existing one']) {
    const store = await openStore({ ...DEFAULT_CONFIG, store: 'embedded', dataDir: dir }, { auditValues: false });
    try {
      if (!(store instanceof EmbeddedStore)) throw new Error('the embedded store was not opened');
      // Pragmas are per connection: a SIGKILL cannot tell NORMAL from FULL, only a power cut can.
      t.same(store.durability(), { journalMode: 'wal', synchronous: SYNCHRONOUS.FULL }, opening);
    } finally {
      await store.close();
    }
  }
});

/** The layout the first release wrote (schema 1), as a fixture: later migrations must carry it forward. */
const FIRST_SCHEMA = `
  CREATE TABLE policies (position INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE, document TEXT NOT NULL);
  CREATE TABLE entities (position INTEGER PRIMARY KEY AUTOINCREMENT, uri TEXT NOT NULL UNIQUE, document TEXT NOT NULL);
  CREATE TABLE revisions (collection TEXT PRIMARY KEY, revision INTEGER NOT NULL);
  INSERT INTO revisions (collection, revision) VALUES ('policies', 1), ('entities', 1);
  PRAGMA user_version = 1;`;

const OLD_POLICY = {
  version: '1.0',
  name: 'laptops',
  description: 'written by the first release',
  rules: [{ name: 'it-uses-laptops', effect: 'allow', principal_conditions: [{ path: 'attributes.team', operator: '==', value: 'it' }], resource_conditions: [], actions: ['use'] }],
  default_effect: 'deny',
};
const OLD_ENTITY = {
  uri: 'user:kim',
  type: 'principal',
  attributes: [{ key: 'team', value: 'it', updated_at: '2025-01-01T00:00:00.000Z', registered_at: '2025-01-01T00:00:00.000Z' }],
  registered_at: '2025-01-01T00:00:00.000Z',
};

t.test('a data directory written by the first schema is upgraded in place at start, its data kept', async (t) => {
  const dir = scratchDir(t);
  const db = new Database(join(dir, DATABASE_FILE));
  db.exec(FIRST_SCHEMA);
  db.prepare('INSERT INTO policies (name, document) VALUES (?, ?)').run(OLD_POLICY.name, JSON.stringify(OLD_POLICY));
  db.prepare('INSERT INTO entities (uri, document) VALUES (?, ?)').run(OLD_ENTITY.uri, JSON.stringify(OLD_ENTITY));
  db.close();

  const server = await startServer({ dataDir: dir });
  const policies = (await server.call('GET', '/admin/policies')).body;
  t.equal(policies.length, 1);
  t.has(policies[0], OLD_POLICY, 'the old policy is served');
  t.same((await server.call('GET', '/admin/fetchers/registry/entities/user%3Akim')).body, OLD_ENTITY, 'the old entity is served');
  const check = { principal: { uri: 'user:kim' }, resource: { attributes: { kind: 'laptop' } }, action: 'use' };
  t.same((await server.call('POST', '/check', check)).body, { allowed: true, reason: 'Rule it-uses-laptops allowed the action in policy laptops' }, 'and decides');
  const written = await server.call('POST', '/admin/policies', { name: 'phones', rules: [] });
  t.equal(written.status, 200, 'writes work on the upgraded layout');
  t.equal(written.headers['verdict-revision'], '2', 'the revision goes on from the old one');
  await server.close();

  const fresh = scratchDir(t);
  await new EmbeddedStore(fresh).close();
  t.equal(schemaVersion(dir), schemaVersion(fresh), 'the upgraded directory is at the schema a new one starts with');
});

t.test('a data directory written by a newer schema is refused with one line, and left as it was', async (t) => {
  const dir = scratchDir(t);
  const store = new EmbeddedStore(dir);
  await store.createPolicy({ ...OLD_POLICY, default_effect: 'deny', rules: [] }, TEST_WRITER);
  await store.close();
  const known = schemaVersion(dir);
  const db = openDatabase(dir);
  db.pragma(`user_version = ${known + 1}`);
  db.close();

  const run = await runVerdict(t, ['start', '--store', 'embedded', '--data-dir', dir, '--port', '0', '--log-level', 'warn']).exited;
  t.equal(run.code, 1, 'exit 1');
  t.equal(
    run.stderr,
    `verdict: the data directory was written by a newer Verdict (schema ${known + 1}, this release knows ${known}); upgrade Verdict\n`,
    'one line saying why',
  );
  t.equal(schemaVersion(dir), known + 1, 'the schema version is untouched');
  const untouched = openDatabase(dir);
  t.same(untouched.prepare('SELECT name FROM policies').pluck().all(), ['laptops'], 'and so is the data');
  untouched.close();
});
