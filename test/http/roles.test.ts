import t, { type Test } from 'tap';
import { operationsOf } from '../helpers/openapi.js';
import { writeFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { startServer, temporaryDataDir, type TestServer } from '../helpers/server.js';
import { ADMIN_WRITES, writeRoutesOf } from '../helpers/admin-writes.js';
import { CLI } from '../helpers/child.js';
import { KeyRing, keyDigest } from '../../src/admin-keys.js';
import { until as waitFor } from '../helpers/until.js';
import { ConfigError, loadConfig } from '../../src/config/config.js';

const DEFAULT = 'the-default-key';
const ALICE = 'alice-key-0123456789';
const AUDITOR = 'auditor-key-0123456789';
const line = (name: string, role: string, key: string) => `${name} ${role} ${keyDigest(key).toString('hex')}`;
const as = (key: string) => ({ 'WAY-API-KEY': key });

/** A directory with a keys file; replaced the way editors and secret mounts do (write aside, rename over). */
function keysFile(t: { teardown(fn: () => void): void }, lines: string[]) {
  const directory = temporaryDataDir();
  t.teardown(() => rmSync(directory, { recursive: true, force: true }));
  const path = join(directory, 'admin-keys');
  const write = (next: string[]) => {
    writeFileSync(`${path}.new`, `# name role sha256\n${next.join('\n')}\n`);
    renameSync(`${path}.new`, path);
  };
  write(lines);
  return { path, write };
}

async function withKeys(t: Test, lines: string[]) {
  const file = keysFile(t, lines);
  const server = await startServer({ adminAuthRequired: true, adminApiKey: DEFAULT, adminKeysFile: file.path, adminAuthFailuresPerMinute: 100_000 });
  t.teardown(server.close);
  return { server, file };
}

/** Polls until `key` gets `status` on a read (the reload is asynchronous); bounded. */
async function until(server: TestServer, key: string, status: number): Promise<number> {
  let seen = 0;
  for (let attempt = 0; attempt < 400; attempt++) {
    seen = (await server.call('GET', '/admin/whoami', undefined, as(key))).status;
    if (seen === status) return seen;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return seen;
}

t.test('a read key reads everything and gets 403 with a detail on every write route', async (t) => {
  const { server } = await withKeys(t, [line('alice', 'admin', ALICE), line('auditor', 'read', AUDITOR)]);
  const openapi = (await server.call('GET', '/docs/json', undefined, as(ALICE))).body;
  const writeRoutes = [...new Set(writeRoutesOf(openapi))].sort();
  t.same([...new Set(ADMIN_WRITES.map(({ method, route }) => `${method} ${route}`))].sort(), writeRoutes, 'every write route the server documents');
  // Everything a write route needs to succeed exists, so that only the role refuses.
  for (const write of ADMIN_WRITES) {
    const refused = await server.call(write.method, write.path, write.body, as(AUDITOR));
    t.equal(refused.status, 403, `${write.method} ${write.route}: 403 for a read key`);
    t.match(refused.body.detail, /'auditor' has the read role/, `${write.method} ${write.route}: the detail says why`);
    const done = await server.call(write.method, write.path, write.body, as(ALICE));
    t.equal(done.status, 200, `${write.method} ${write.route}: 200 for an admin key`);
  }
  const records = (await server.call('GET', '/admin/audit?limit=1000', undefined, as(AUDITOR))).body.records;
  t.equal(records.length, ADMIN_WRITES.length, 'the read key reads the trail, which holds only the admin writes');
  t.ok(records.every((record: any) => record.actor === 'alice'), 'each names the key that wrote it');

  const paths = operationsOf(openapi)
    .filter(({ method, route }) => method === 'GET' && route.startsWith('/admin/') && !route.includes('{'))
    .map(({ route }) => route);
  t.ok(paths.length >= 5, 'admin reads to try');
  const validated = await server.call('POST', '/admin/policies/validate', { name: 'p9', rules: [] }, as(AUDITOR));
  t.same([validated.status, validated.body.valid], [200, true], 'a read key validates a policy: that changes nothing');
  for (const path of [...paths, '/admin/policies/p1', '/admin/policies/p1/history', '/admin/policies/p1/history/1']) {
    t.equal((await server.call('GET', path, undefined, as(AUDITOR))).status, 200, `GET ${path} with a read key`);
  }
});

t.test('ADMIN_API_KEY is an admin key named default; whoami says who and what', async (t) => {
  const { server } = await withKeys(t, [line('auditor', 'read', AUDITOR)]);
  t.same((await server.call('GET', '/admin/whoami', undefined, as(DEFAULT))).body, { actor: 'default', role: 'admin', operator_style: 'spec', policy_files: null });
  t.same((await server.call('GET', '/admin/whoami', undefined, as(AUDITOR))).body, { actor: 'auditor', role: 'read', operator_style: 'spec', policy_files: null });
  t.equal((await server.call('GET', '/admin/whoami', undefined, as('wrong'))).status, 401);
  t.equal((await server.call('POST', '/admin/policies', { name: 'p', rules: [] }, as(DEFAULT))).status, 200);
  t.match((await server.call('GET', '/admin/audit', undefined, as(DEFAULT))).body.records, [{ actor: 'default' }]);

  const open = await startServer();
  t.teardown(open.close);
  t.same((await open.call('GET', '/admin/whoami')).body, { actor: 'anonymous', role: 'admin', operator_style: 'spec', policy_files: null }, 'authentication off');
});

t.test('the keys file is reloaded when it changes; a broken one leaves the keys as they were', async (t) => {
  const { server, file } = await withKeys(t, [line('alice', 'admin', ALICE)]);
  t.equal((await server.call('GET', '/admin/whoami', undefined, as(ALICE))).status, 200);
  t.equal((await server.call('GET', '/admin/whoami', undefined, as(AUDITOR))).status, 401);

  file.write([line('alice', 'read', ALICE), line('auditor', 'read', AUDITOR)]);
  t.equal(await until(server, AUDITOR, 200), 200, 'a key added to the file works');
  t.same((await server.call('GET', '/admin/whoami', undefined, as(ALICE))).body, { actor: 'alice', role: 'read', operator_style: 'spec', policy_files: null }, 'a changed role applies');
  t.equal((await server.call('DELETE', '/admin/policies/p', undefined, as(ALICE))).status, 403);

  file.write([line('auditor', 'read', AUDITOR), 'bob superuser 00']);
  file.write([line('auditor', 'read', AUDITOR)]);
  t.equal(await until(server, ALICE, 401), 401, 'a key removed from the file is refused');

  file.write(['this line is not a key']);
  // The broken file is read and refused; a later good one still applies.
  file.write([line('alice', 'admin', ALICE), 'broken']);
  t.equal((await server.call('GET', '/admin/whoami', undefined, as(AUDITOR))).status, 200, 'keys stay as they were while the file is broken');
  file.write([line('alice', 'admin', ALICE)]);
  t.equal(await until(server, ALICE, 200), 200, 'the next good file applies');
  t.equal(await until(server, AUDITOR, 401), 401);
});

t.test('a removed keys file removes its keys; ADMIN_API_KEY stays, and the file is read again when it is back', async (t) => {
  const { server, file } = await withKeys(t, [line('alice', 'admin', ALICE), line('auditor', 'read', AUDITOR)]);
  t.equal((await server.call('GET', '/admin/whoami', undefined, as(ALICE))).status, 200);
  rmSync(file.path);
  t.equal(await until(server, ALICE, 401), 401, "the file's keys are refused once it is gone");
  t.equal((await server.call('GET', '/admin/whoami', undefined, as(AUDITOR))).status, 401, 'every one of them');
  t.equal((await server.call('GET', '/admin/whoami', undefined, as(DEFAULT))).status, 200, 'ADMIN_API_KEY still works');
  t.same((await server.call('GET', '/ready')).body.degraded, false, 'no file is no broken file: the server does what the files say');
  file.write([line('auditor', 'read', AUDITOR)]);
  t.equal(await until(server, AUDITOR, 200), 200, 'a new file applies');
  t.equal((await server.call('GET', '/admin/whoami', undefined, as(ALICE))).status, 401);
});

t.test('a keys file that no longer parses: the last good keys stay, /ready says degraded and why, a metric says so', async (t) => {
  const { server, file } = await withKeys(t, [line('auditor', 'read', AUDITOR)]);
  const metric = async (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec((await server.call('GET', '/metrics')).body)?.[1]);
  t.same([await metric('verdict_admin_keys_file_in_force'), await metric('verdict_admin_keys_file_rejected_total')], [1, 0]);
  file.write([line('alice', 'admin', ALICE), 'broken']);
  let ready = (await server.call('GET', '/ready')).body;
  for (let attempt = 0; attempt < 400 && !ready.degraded; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    ready = (await server.call('GET', '/ready')).body;
  }
  t.equal(ready.status, 'ready', 'still ready: the last good keys serve');
  t.equal(ready.degraded, true, 'but degraded');
  t.match(ready.checks.adminKeys, new RegExp(`${file.path}.*line 3: expected 'name role sha256-digest'.*the keys it held before stay in force`), 'naming the file, the line and what happens');
  t.same([await metric('verdict_admin_keys_file_in_force'), await metric('verdict_admin_keys_file_rejected_total')], [0, 1]);
  t.equal((await server.call('GET', '/admin/whoami', undefined, as(AUDITOR))).status, 200, 'the last good keys still work');
  t.equal((await server.call('GET', '/admin/whoami', undefined, as(ALICE))).status, 401, 'the broken file adds none');

  file.write([line('alice', 'admin', ALICE)]);
  t.equal(await until(server, ALICE, 200), 200, 'a good file applies');
  const recovered = (await server.call('GET', '/ready')).body;
  t.same([recovered.degraded, recovered.checks.adminKeys], [false, 'ok']);
  t.same([await metric('verdict_admin_keys_file_in_force'), await metric('verdict_admin_keys_file_rejected_total')], [1, 1]);
});

t.test('a keys file that no longer parses, or breaks a rule, is refused on reload: every key stays as it was (KeyRing on a real file)', async (t) => {
  const file = keysFile(t, [line('alice', 'admin', ALICE), line('auditor', 'read', AUDITOR)]);
  const ring = new KeyRing({ defaultKey: '', file: file.path });
  t.teardown(() => ring.close());
  const reloads: ({ keys: number } | { error: Error })[] = [];
  ring.on('reloaded', (keys) => reloads.push({ keys }));
  ring.on('rejected', ({ error }) => reloads.push({ error }));
  const NEWCOMER = 'newcomer-key-0123456789';
  // Each file adds a good key before the line at fault: taking the good lines alone would change the keys.
  const cases: [string, string[], RegExp][] = [
    ['a line of two fields', [line('carol', 'admin', NEWCOMER), 'alice admin'], /line 3: expected 'name role sha256-digest', got 2 field\(s\)/],
    ['a line of free text', [line('carol', 'admin', NEWCOMER), 'this line is not a key'], /line 3: expected 'name role sha256-digest', got 6 field\(s\)/],
    ['a line of control characters', [line('carol', 'admin', NEWCOMER), '\u0000\u0001'], /line 3: expected 'name role sha256-digest', got 1 field\(s\)/],
    ['a role that does not exist', [line('carol', 'admin', NEWCOMER), `alice root ${keyDigest(ALICE).toString('hex')}`], /line 3: role 'root' is not one of admin, read/],
    ['a digest that is not one', [line('carol', 'admin', NEWCOMER), 'alice admin not-a-digest'], /line 3: the digest must be 64 hexadecimal digits/],
  ];
  for (const [label, lines, problem] of cases) {
    const from = reloads.length;
    // The refusal of this file, or any file taken (which would be wrong).
    const outcome = () => reloads.slice(from).find((result) => !('error' in result) || problem.test(result.error.message));
    file.write(lines);
    await waitFor(() => outcome() !== undefined, `the reload of a file with ${label}`);
    t.match(outcome(), { error: { message: problem } }, `${label}: refused, naming the line`);
    t.same([ring.find(ALICE), ring.find(AUDITOR), ring.find(NEWCOMER)], [{ name: 'alice', role: 'admin' }, { name: 'auditor', role: 'read' }, undefined], `${label}: the keys as they were`);
  }
  file.write([line('carol', 'admin', NEWCOMER)]);
  await waitFor(() => ring.find(NEWCOMER) !== undefined, 'the next good file');
  t.same([ring.find(ALICE), ring.size], [undefined, 1], 'the next good file is taken whole');
});

t.test('keys configuration that cannot work stops the start, saying why', async (t) => {
  const env = { ADMIN_AUTHN_REQUIRED: 'true' };
  t.equal(loadConfig(['--admin-keys-file', '/x'], {}).adminAuthRequired, true, 'a keys file turns authentication on');
  t.throws(() => loadConfig([], env), /ADMIN_API_KEY is empty and no --admin-keys-file/, 'authentication with no key at all');
  t.equal(loadConfig(['--admin-keys-file', '/x'], env).adminKeysFile, '/x', 'a keys file alone is enough');
  const cases: [string, string[], RegExp][] = [
    ['a missing field', ['alice admin'], /line 2: expected 'name role sha256-digest'/],
    ['an unknown role', [`alice root ${'a'.repeat(64)}`], /line 2: role 'root'/],
    ['a short digest', ['alice admin abc'], /line 2: the digest must be 64 hexadecimal digits/],
    ['a name twice', [line('a', 'admin', 'k1'), line('a', 'read', 'k2')], /line 3: the name 'a' appears twice/],
    ['a key twice', [line('a', 'admin', 'k1'), line('b', 'read', 'k1')], /line 3: the same key is listed twice/],
    ["ADMIN_API_KEY's name", [line('default', 'read', 'k1')], /line 2: the name 'default' is ADMIN_API_KEY's/],
  ];
  for (const [label, lines, message] of cases) {
    const file = keysFile(t, lines);
    await t.rejects(startServer({ adminAuthRequired: true, adminApiKey: DEFAULT, adminKeysFile: file.path }), { constructor: ConfigError, message }, label);
  }
  await t.rejects(startServer({ adminAuthRequired: true, adminApiKey: DEFAULT, adminKeysFile: '/no/such/file' }), { message: /cannot read the admin keys file/ });
});

t.test('verdict key --name prints a new key and its line; the line makes it work', async (t) => {
  const run = spawnSync(process.execPath, [CLI, 'key', '--name', 'ops-bot', '--role', 'read'], { encoding: 'utf8' });
  t.equal(run.status, 0, run.stderr);
  const [key, entry] = run.stdout.split('\n').filter((text) => text !== '' && !text.startsWith('#'));
  t.match(key, /^[A-Za-z0-9_-]{43}$/, 'a random key of 256 bits');
  t.equal(entry, line('ops-bot', 'read', key!), 'the line names it, with its role and digest, never the key');
  t.notOk(entry!.includes(key!));
  const again = spawnSync(process.execPath, [CLI, 'key', '--name', 'ops-bot'], { encoding: 'utf8' });
  t.not(again.stdout.split('\n')[1], key, 'every key is new');
  t.match(again.stdout, /ops-bot admin [0-9a-f]{64}/, 'admin by default');

  const { server } = await withKeys(t, [entry!]);
  t.same((await server.call('GET', '/admin/whoami', undefined, as(key!))).body, { actor: 'ops-bot', role: 'read', operator_style: 'spec', policy_files: null });
  for (const [args, message] of [[['key'], /needs --name/], [['key', '--name', 'a b'], /key name/], [['key', '--name', 'x', '--role', 'root'], /--role must be/]] as const) {
    const refused = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
    t.equal(refused.status, 2, `${args.join(' ')}: exit 2`);
    t.match(refused.stderr, message);
  }
});
