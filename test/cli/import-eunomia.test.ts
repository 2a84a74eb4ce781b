import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runVerdict } from '../helpers/child.js';
import { scratchDir, startServer, type TestServer } from '../helpers/server.js';
import { EunomiaDatabaseFile } from '../helpers/eunomia-database.js';
import { EunomiaDatabase } from '../../src/cli/import-eunomia/database.js';
import { reachableMongo } from '../helpers/mongo.js';

// `verdict import eunomia`: the real CLI reading a real SQLite file laid out by Eunomia's DDL, into
// Verdict's stores, then a real server on the store it wrote.

const ENTITIES = '/admin/fetchers/registry/entities';

/** An Eunomia working directory: its database where Eunomia keeps it, filled by `fill`. */
function eunomiaDirectory(t: Test, fill: (database: EunomiaDatabaseFile) => void): { dir: string; file: string } {
  const dir = scratchDir(t);
  mkdirSync(join(dir, '.db'));
  const file = join(dir, '.db', 'eunomia_db.sqlite');
  const database = new EunomiaDatabaseFile(file);
  fill(database);
  database.close();
  return { dir, file };
}

const digest = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const importFrom = (t: Test, dir: string, args: string[] = ['--data-dir', 'data']) => runVerdict(t, ['import', 'eunomia', ...args], {}, dir).exited;
const check = async (server: TestServer, principal: string, action: string, resource: Record<string, unknown> = { kind: 'document' }) =>
  (await server.call('POST', '/check', { principal: { uri: principal }, resource: { attributes: resource }, action })).body;

function fillMixed(database: EunomiaDatabaseFile): void {
  database.addPolicy({
    name: 'laptops',
    description: 'IT administers laptops',
    rules: [{
      name: 'it-administers',
      effect: 'allow',
      actions: ['administer'],
      principal_conditions: [{ path: 'attributes.department', operator: 'equals', value: 'it' }],
      resource_conditions: [{ path: 'attributes.kind', operator: 'equals', value: 'laptop' }],
    }],
  });
  database.addPolicy({
    name: 'adults',
    rules: [{ name: 'adults-read', effect: 'allow', actions: ['read'], principal_conditions: [{ path: 'attributes.age', operator: 'gt', value: 17 }] }],
  });
  // Eunomia stored it; Verdict refuses an ordering on a string.
  database.addPolicy({
    name: 'string-ages',
    rules: [{ name: 'older', effect: 'allow', actions: ['read'], principal_conditions: [{ path: 'attributes.age', operator: 'gt', value: '18' }] }],
  });
  database.addPolicy({
    name: 'contractors',
    rules: [{ name: 'no-contractors', effect: 'deny', actions: ['administer'], principal_conditions: [{ path: 'attributes.employment', operator: 'in', value: ['contractor'] }] }],
  });
  database.addEntity('user:bob', 'principal', { department: 'hr', age: 30 }, '2025-03-01 10:20:30');
  database.addEntity('user:alice', 'principal', { department: 'it', age: 17, code: '0042', nickname: '"ali"' });
  // Updated in place, stored without json.dumps: Eunomia answered the number 42 from then on.
  database.updateAttribute('user:alice', 'code', '42');
  database.addEntity('doc:/reports/q1', 'resource', { kind: 'report', tags: ['finance', 'q1'] });
  database.addEntity('group:x', 'group', { members: 3 });
}

t.test('imports policies and entities in creation order, names what it could not, and a second run imports nothing new', async (t) => {
  const { dir, file } = eunomiaDirectory(t, fillMixed);
  const before = digest(file);

  const first = await importFrom(t, dir);
  t.equal(first.code, 1, `exit 1: something was not imported (${first.stderr})`);
  t.same(first.stdout.split('\n'), [
    'Importing the Eunomia database ./.db/eunomia_db.sqlite into the embedded store in data',
    "imported policy 'laptops' (1 rule)",
    "imported policy 'adults' (1 rule)",
    "  note: 'adults' uses gt, which Eunomia evaluated the other way round: Verdict's gt holds when the attribute is greater than the value",
    "policy 'string-ages' not imported: Verdict refuses it: rules.0.principal_conditions.0.value: operator 'gt' needs a number value",
    "imported policy 'contractors' (1 rule)",
    "entity 'group:x' not imported: type 'group' is not one Eunomia knows",
    '4 policies: 3 imported, 1 not imported (see above)',
    '4 entities: 3 imported, 1 not imported (see above)',
    "Eunomia's Python SDK reads policies only from a server started with --operator-style eunomia (OPERATOR_STYLE=eunomia)",
    '',
  ]);
  t.equal(digest(file), before, 'the Eunomia database is left as it was');

  const server = await startServer({ dataDir: join(dir, 'data') });
  t.teardown(server.close);
  t.same((await server.call('GET', '/admin/policies')).body.map((policy: { name: string }) => policy.name), ['laptops', 'adults', 'contractors'], 'policies in creation order');
  t.same((await server.call('GET', '/admin/policies/laptops')).body, {
    version: '1.0',
    name: 'laptops',
    description: 'IT administers laptops',
    rules: [{
      name: 'it-administers',
      description: null,
      effect: 'allow',
      principal_conditions: [{ path: 'attributes.department', operator: 'equals', value: 'it' }],
      resource_conditions: [{ path: 'attributes.kind', operator: 'equals', value: 'laptop' }],
      actions: ['administer'],
    }],
    default_effect: 'deny',
  });
  const entities = (await server.call('GET', `${ENTITIES}?limit=10`)).body;
  t.same(entities.map((entity: { uri: string }) => entity.uri), ['user:bob', 'user:alice', 'doc:/reports/q1'], 'entities in registration order');
  t.equal(entities[0].registered_at, '2025-03-01T10:20:30.000Z', "Eunomia's registration time, with its zone");
  const alice = (await server.call('GET', `${ENTITIES}/user%3Aalice`)).body;
  t.same(
    Object.fromEntries(alice.attributes.map((attribute: { key: string; value: unknown }) => [attribute.key, attribute.value])),
    { age: 17, code: 42, department: 'it', nickname: '"ali"' },
    'values as Eunomia answered them: a string updated in place re-read as JSON ("42" became 42), as Eunomia re-read it',
  );
  t.same((await server.call('GET', `${ENTITIES}/doc%3A%2Freports%2Fq1`)).body.attributes.map((attribute: { value: unknown }) => attribute.value), ['report', ['finance', 'q1']]);

  t.same(await check(server, 'user:alice', 'administer', { kind: 'laptop' }), { allowed: true, reason: 'Rule it-administers allowed the action in policy laptops' });
  t.same(await check(server, 'user:bob', 'administer', { kind: 'laptop' }), { allowed: false, reason: 'Action denied by default effect' });
  t.same(await check(server, 'user:bob', 'read'), { allowed: true, reason: 'Rule adults-read allowed the action in policy adults' }, 'gt read naturally: 30 > 17');
  t.same(await check(server, 'user:alice', 'read'), { allowed: false, reason: 'Action denied by default effect' }, 'gt read naturally: 17 is not > 17');

  const audit = (await server.call('GET', '/admin/audit?limit=100')).body;
  t.same(
    audit.records.map((record: { actor: string; target: string }) => [record.actor, record.target]).reverse(),
    [
      ['verdict import eunomia', 'policy:laptops'],
      ['verdict import eunomia', 'policy:adults'],
      ['verdict import eunomia', 'policy:contractors'],
      ['verdict import eunomia', 'entity:user:bob'],
      ['verdict import eunomia', 'entity:user:alice'],
      ['verdict import eunomia', 'entity:doc:/reports/q1'],
    ],
    'an audit record for every write, in creation order',
  );

  const second = await importFrom(t, dir);
  t.equal(second.code, 1, 'still exit 1: two items are still not imported');
  t.same(second.stdout.split('\n').slice(1), [
    "policy 'string-ages' not imported: Verdict refuses it: rules.0.principal_conditions.0.value: operator 'gt' needs a number value",
    "entity 'group:x' not imported: type 'group' is not one Eunomia knows",
    'Nothing new to import: 3 policies and 3 entities already in Verdict as in Eunomia; 2 not imported (see above)',
    '',
  ]);
  t.equal((await server.call('GET', '/admin/audit?limit=100')).body.records.length, 6, 'the second run wrote nothing');

  const changed = (await server.call('GET', '/admin/policies/laptops')).body;
  changed.rules[0].actions = ['administer', 'wipe'];
  t.equal((await server.call('PUT', '/admin/policies/laptops', changed)).status, 200);
  const third = await importFrom(t, dir);
  t.equal(third.code, 1);
  t.match(third.stdout, "policy 'laptops' not imported: Verdict has a different policy of that name, which was kept (to take Eunomia's, delete Verdict's and import again)\n");
  t.same((await server.call('GET', '/admin/policies/laptops')).body.rules[0].actions, ['administer', 'wipe'], "Verdict's policy is kept");
});

function fillValid(database: EunomiaDatabaseFile): void {
  database.addPolicy({
    name: 'reports',
    default_effect: 'deny',
    rules: [{ name: 'finance-reads', effect: 'allow', actions: ['read'], principal_conditions: [{ path: 'attributes.team', operator: 'equals', value: 'finance' }] }],
  });
  database.addEntity('user:carol', 'principal', { team: 'finance' });
}

async function importTwice(t: Test, args: string[], dir: string): Promise<void> {
  const first = await importFrom(t, dir, args);
  t.equal(first.code, 0, `exit 0 (${first.stderr})`);
  t.match(first.stdout, '1 policy: 1 imported\n1 entity: 1 imported\n');
  const second = await importFrom(t, dir, args);
  t.equal(second.code, 0, `exit 0 (${second.stderr})`);
  t.match(second.stdout, /\nNothing new to import: 1 policy and 1 entity already in Verdict as in Eunomia\n$/);
}

t.test('everything imported: exit 0, and the second run says there is nothing new (embedded store)', async (t) => {
  const { dir } = eunomiaDirectory(t, fillValid);
  await importTwice(t, ['--data-dir', 'data'], dir);
  const server = await startServer({ dataDir: join(dir, 'data') });
  t.teardown(server.close);
  t.same(await check(server, 'user:carol', 'read'), { allowed: true, reason: 'Rule finance-reads allowed the action in policy reports' });
});

t.test('into the MongoDB store', async (t) => {
  const mongo = await reachableMongo();
  if ('skipped' in mongo) {
    t.comment(`SKIPPED: ${mongo.skipped}`);
    return;
  }
  t.teardown(() => mongo.stop());
  const database = mongo.freshDatabase();
  t.teardown(() => mongo.dropDatabase(database));
  const { dir } = eunomiaDirectory(t, fillValid);
  await importTwice(t, ['--mongodb-uri', mongo.uri, '--mongodb-db', database], dir);
  const server = await startServer({ store: 'mongodb', mongodbUri: mongo.uri, mongodbDatabase: database });
  t.teardown(server.close);
  t.same(await check(server, 'user:carol', 'read'), { allowed: true, reason: 'Rule finance-reads allowed the action in policy reports' });
});

t.test('a policy of 100,000 rules (and a rule of 10,000 conditions) is read in one pass, keeping no more than a policy may hold', async (t) => {
  const { file } = eunomiaDirectory(t, (database) => {
    database.db.exec('BEGIN');
    database.addPolicy({ name: 'huge', rules: Array.from({ length: 100_000 }, (_, index) => ({ name: `r${index}`, effect: 'allow' as const, actions: ['read'] })) });
    database.addPolicy({
      name: 'wide',
      rules: [{ name: 'w', effect: 'allow', actions: ['read'], principal_conditions: Array.from({ length: 10_000 }, (_, index) => ({ path: `attributes.a${index}`, operator: 'equals', value: index })) }],
    });
    database.db.exec('COMMIT');
  });
  const database = new EunomiaDatabase(file);
  t.teardown(() => database.close());
  const limits = { maxRulesPerPolicy: 1000, maxConditionsPerRule: 50 };
  const [huge, wide] = database.policies(limits) as { rules: { principal_conditions: unknown[] }[] }[];
  t.equal(huge!.rules.length, limits.maxRulesPerPolicy + 1, 'one rule past the limit, enough for the refusal to say so');
  t.equal(wide!.rules[0]!.principal_conditions.length, limits.maxConditionsPerRule + 1, 'one condition past the limit');
});

t.test('a path given, a path missing, a file that is not a database, --help', async (t) => {
  const { dir, file } = eunomiaDirectory(t, fillValid);
  const elsewhere = scratchDir(t);
  const given = await importFrom(t, elsewhere, [file, '--data-dir', 'data']);
  t.equal(given.code, 0, given.stderr);
  t.match(given.stdout, `Importing the Eunomia database ${file} into the embedded store in data\n`);

  const missing = await importFrom(t, elsewhere);
  t.equal(missing.code, 2);
  t.equal(
    missing.stderr,
    'verdict: no Eunomia database at ./.db/eunomia_db.sqlite (where Eunomia keeps it, relative to the directory it runs in); give its path: verdict import eunomia <path>\n',
  );
  const text = join(dir, 'notes.txt');
  writeFileSync(text, 'not a database, but long enough to be read as one '.repeat(20));
  const notDatabase = await importFrom(t, dir, [text]);
  t.equal(notDatabase.code, 2);
  t.match(notDatabase.stderr, `verdict: cannot read ${text} as an SQLite database: file is not a database\n`);

  const help = await runVerdict(t, ['import', '--help']).exited;
  t.equal(help.code, 0);
  t.match(help.stdout, /verdict import eunomia \[path\]/);
});
