import t, { type Test } from 'tap';
import { realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ask, outputMatches, runVerdict, startVerdict } from '../helpers/child.js';
import { codeBlocks, readDocument, section } from '../helpers/markdown.js';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EunomiaDatabaseFile } from '../helpers/eunomia-database.js';
import { freePort, waitFor } from '../helpers/child.js';
import { scratchDir, startServer, type TestServer } from '../helpers/server.js';
import { pythonPolicyProblems } from '../helpers/eunomia-models.js';
import { loadConfig, type Config } from '../../src/config/config.js';

// docs/migrating-from-eunomia.md: each difference it lists, checked on a real server to behave as
// written; the guide's headings and the tests below must name the same differences.

const GUIDE = readDocument('docs/migrating-from-eunomia.md');
const ENTITIES = '/admin/fetchers/registry/entities';
const STORE = ['--store', 'embedded', '--data-dir', 'data'];

async function server(t: Test, overrides: Partial<Config> = {}): Promise<TestServer> {
  const started = await startServer(overrides);
  t.teardown(started.close);
  return started;
}

/** The configuration `env` gives `verdict start`, on a data directory of the test's own. */
function configFrom(env: NodeJS.ProcessEnv): Partial<Config> {
  const { dataDir: _default, ...config } = loadConfig(['--port', '0', '--log-level', 'silent'], env);
  return config;
}

const condition = (path: string, operator: string, value: unknown) => ({ path, operator, value });
const policy = (name: string, rules: unknown[], defaultEffect = 'deny') => ({ name, rules, default_effect: defaultEffect });
const allowRule = (name: string, principalConditions: unknown[], actions = ['read']) => ({ name, effect: 'allow', principal_conditions: principalConditions, actions });

async function create(t: Test, target: TestServer, body: unknown): Promise<void> {
  const answer = await target.call('POST', '/admin/policies', body);
  t.equal(answer.status, 200, `policy written: ${JSON.stringify(answer.body)}`);
}

const check = async (target: TestServer, principal: Record<string, unknown>, action = 'read') =>
  (await target.call('POST', '/check', { principal: { attributes: principal }, resource: { attributes: { kind: 'document' } }, action })).body;

/** A working directory holding `dotenv` as its `.env`. */
function withDotenv(t: Test, dotenv: string): string {
  const dir = realpathSync(scratchDir(t));
  writeFileSync(join(dir, '.env'), dotenv);
  return dir;
}

const DIFFERENCES: Record<string, (t: Test) => Promise<void>> = {
  "Eunomia's Python SDK needs the eunomia operator style": async (t) => {
    const simple = { principal: { attributes: { department: 'it' } }, resource: { attributes: { kind: 'laptop' } }, action: 'administer' };
    const spec = await server(t);
    const specPolicy = (await spec.call('POST', '/admin/policies/simple?name=laptops', simple)).body;
    t.equal(specPolicy.rules[0].principal_conditions[0].operator, '==');
    t.not(pythonPolicyProblems(specPolicy).length, 0, 'by default, a policy the Python SDK cannot parse');
    const eunomia = await server(t, { operatorStyle: 'eunomia' });
    const eunomiaPolicy = (await eunomia.call('POST', '/admin/policies/simple?name=laptops', simple)).body;
    t.equal(eunomiaPolicy.rules[0].principal_conditions[0].operator, 'equals');
    await create(t, eunomia, policy('adults', [allowRule('adults', [condition('attributes.age', '>', 17)])]));
    const listed = (await eunomia.call('GET', '/admin/policies')).body;
    t.same(listed.flatMap((stored: unknown) => pythonPolicyProblems(stored)), [], 'with the eunomia style, every policy parses');
    t.equal(listed[1].rules[0].principal_conditions[0].operator, 'gt', "'>' answered as 'gt'");
  },

  '.env fills in only what flags and the environment do not set': async (t) => {
    const dir = withDotenv(t, 'ADMIN_AUTHN_REQUIRED=true\nADMIN_API_KEY=from-the-file\n');
    const verdict = await startVerdict(t, STORE, { cwd: dir, env: { ADMIN_AUTHN_REQUIRED: 'false' } });
    t.equal((await ask(verdict.url, 'GET', '/admin/policies')).status, 200, 'the environment said false: open, whatever the file says');
    // Logged before it answers, but read here only as the pipe delivers it.
    await outputMatches(verdict, /"msg":"settings read from [^"]*: ADMIN_API_KEY; set by a flag or the environment instead: ADMIN_AUTHN_REQUIRED"/);
    t.pass('the log says which settings came from the file, and which the environment overrode');
    t.notMatch(verdict.output().stdout, 'from-the-file', 'no value is logged');
  },

  'Eunomia-only settings are ignored': async (t) => {
    const dir = withDotenv(
      t,
      [
        'ENGINE_SQL_DATABASE=true',
        'ENGINE_SQL_DATABASE_URL=sqlite:///./nowhere/eunomia_db.sqlite',
        'FETCHERS={"registry": {"sql_database_url": "sqlite:///./nowhere/eunomia_db.sqlite"}}',
        'BULK_CHECK_BATCH_SIZE=5',
        'PROJECT_NAME=Eunomia Server',
        'DEBUG=true',
        '',
      ].join('\n'),
    );
    const verdict = await startVerdict(t, STORE, { cwd: dir, env: { ENGINE_SQL_DATABASE: 'false' } });
    t.equal((await ask(verdict.url, 'GET', '/ready')).status, 200, 'it starts and serves, on its own store');
    await outputMatches(verdict, /"ignored":\["ENGINE_SQL_DATABASE","ENGINE_SQL_DATABASE_URL","FETCHERS","BULK_CHECK_BATCH_SIZE","PROJECT_NAME","DEBUG"\]/);
    t.pass('the log lists the Eunomia-only settings it ignored');
  },

  'Setting ADMIN_API_KEY turns admin authentication on': async (t) => {
    const keyOnly = await server(t, configFrom({ ADMIN_API_KEY: 'the-key' }));
    t.equal((await keyOnly.call('GET', '/admin/policies')).status, 401, 'a key set, no ADMIN_AUTHN_REQUIRED: protected');
    t.equal((await keyOnly.call('GET', '/admin/policies', undefined, { 'way-api-key': 'the-key' })).status, 200);
    const saidFalse = await server(t, configFrom({ ADMIN_API_KEY: 'the-key', ADMIN_AUTHN_REQUIRED: 'false' }));
    t.equal((await saidFalse.call('GET', '/admin/policies')).status, 200, 'ADMIN_AUTHN_REQUIRED=false said explicitly: open');
  },

  'Open admin routes only where nobody else reaches them': async (t) => {
    const refused = await runVerdict(t, ['start', ...STORE, '--host', '0.0.0.0'], {}, scratchDir(t)).exited;
    t.equal(refused.code, 2, 'no start on every interface with open admin routes');
    t.match(refused.stderr, '--allow-open-admin');
    const open = await server(t);
    const foreignHost = await open.call('GET', '/admin/policies', undefined, { host: 'attacker.example' });
    t.equal(foreignHost.status, 421);
    const noContentType = await open.send('POST', '/admin/policies', JSON.stringify(policy('p', [allowRule('r', [])])));
    t.equal(noContentType.status, 400, 'a write without Content-Type: application/json');
    t.equal((await open.call('DELETE', '/admin/policies/p', undefined, {})).status, 404, "a DELETE needs none (Eunomia's SDKs send none)");
  },

  'Duplicates are 409': async (t) => {
    const target = await server(t);
    await create(t, target, policy('twice', [allowRule('r', [])]));
    const policyAgain = await target.call('POST', '/admin/policies', policy('twice', [allowRule('r', [])]));
    t.same([policyAgain.status, policyAgain.body], [409, { detail: "Policy 'twice' already exists" }]);
    const entity = { uri: 'user:twice', type: 'principal', attributes: { a: 1 } };
    t.equal((await target.call('POST', ENTITIES, entity)).status, 200);
    const again = await target.call('POST', ENTITIES, entity);
    t.same([again.status, again.body], [409, { detail: "Entity 'user:twice' already exists" }]);
  },

  'An unknown entity on update or delete is 404': async (t) => {
    const target = await server(t);
    const update = await target.call('PUT', `${ENTITIES}/user%3Anobody`, { uri: 'user:nobody', attributes: { a: 1 } });
    t.same([update.status, update.body], [404, { detail: 'Entity not found' }]);
    const deletion = await target.call('DELETE', `${ENTITIES}/user%3Anobody`);
    t.same([deletion.status, deletion.body], [404, { detail: 'Entity not found' }]);
  },

  'Deleting an unknown policy is 404': async (t) => {
    const target = await server(t);
    const deletion = await target.call('DELETE', '/admin/policies/nothing-here');
    t.same([deletion.status, deletion.body], [404, { detail: 'Policy not found' }]);
  },

  'gt, gte, lt and lte read naturally': async (t) => {
    const target = await server(t);
    await create(t, target, policy('adults', [allowRule('older-than-18', [condition('attributes.age', 'gt', 18)])]));
    t.equal((await check(target, { age: 19 })).allowed, true, '19 gt 18');
    t.equal((await check(target, { age: 17 })).allowed, false, '17 is not gt 18 (Eunomia allowed it)');
    await create(t, target, policy('minors', [allowRule('under-18', [condition('attributes.age', 'lt', 18)], ['play'])]));
    t.equal((await check(target, { age: 17 }, 'play')).allowed, true, '17 lt 18');
  },

  'default_effect allow takes effect': async (t) => {
    const target = await server(t);
    await create(t, target, policy('open-by-default', [allowRule('writers', [condition('attributes.role', 'equals', 'writer')], ['write'])], 'allow'));
    t.same(await check(target, { role: 'reader' }), { allowed: true, reason: 'Action allowed by default effect' });
  },

  'contains and not_contains work on lists': async (t) => {
    const target = await server(t);
    await create(t, target, policy('groups', [allowRule('admins', [condition('attributes.groups', 'contains', 'admins')]), allowRule('not-contractors', [condition('attributes.groups', 'not_contains', 'contractors')], ['browse'])]));
    t.equal((await check(target, { groups: ['staff', 'admins'] })).allowed, true, 'contains: an item of the list');
    t.equal((await check(target, { groups: ['staff'] })).allowed, false);
    t.equal((await check(target, { groups: ['staff'] }, 'browse')).allowed, true, 'not_contains: no such item');
    t.equal((await check(target, { groups: ['staff', 'contractors'] }, 'browse')).allowed, false);
  },

  'Equality and comparisons go by JSON type': async (t) => {
    const target = await server(t);
    await create(t, target, policy('types', [allowRule('level-one', [condition('attributes.level', 'equals', 1)]), allowRule('positive', [condition('attributes.level', 'gt', 0)], ['count'])]));
    t.equal((await check(target, { level: 1 })).allowed, true);
    t.equal((await check(target, { level: true })).allowed, false, 'true is not 1');
    t.equal((await check(target, { level: '1' })).allowed, false, '"1" is not 1');
    t.equal((await check(target, { level: true }, 'count')).allowed, false, 'a boolean is not a number');
  },

  'The reason names the first matching policy': async (t) => {
    const target = await server(t);
    await create(t, target, policy('first', [allowRule('everyone', [])]));
    await create(t, target, policy('second', [allowRule('everyone-too', [])]));
    t.same(await check(target, { any: 1 }), { allowed: true, reason: 'Rule everyone allowed the action in policy first' });
  },

  'Simple policies pin the uris the request names': async (t) => {
    const target = await server(t);
    for (const uri of ['user:1', 'user:2']) t.equal((await target.call('POST', ENTITIES, { uri, type: 'principal', attributes: { team: 'a' } })).status, 200);
    const made = (await target.call('POST', '/admin/policies/simple?name=only-user-1', { principal: { uri: 'user:1' }, resource: { attributes: { kind: 'document' } }, action: 'read' })).body;
    t.same(made.rules[0].principal_conditions, [{ path: 'uri', operator: '==', value: 'user:1' }]);
    const asUser = async (uri: string) => (await target.call('POST', '/check', { principal: { uri }, resource: { attributes: { kind: 'document' } }, action: 'read' })).body.allowed;
    t.equal(await asUser('user:1'), true);
    t.equal(await asUser('user:2'), false, 'another principal is not allowed (Eunomia allowed every principal)');
  },

  'Bulk checks up to 1000 by default': async (t) => {
    const one = { principal: { attributes: { a: 1 } }, resource: { attributes: { kind: 'document' } }, action: 'read' };
    const target = await server(t);
    t.equal((await target.call('POST', '/check/bulk', Array(1000).fill(one))).status, 200, '1000 checks');
    t.equal((await target.call('POST', '/check/bulk', Array(1001).fill(one))).status, 400, '1001 checks');
    const eunomiaLimit = await server(t, configFrom({ BULK_CHECK_MAX_REQUESTS: '100' }));
    t.equal((await eunomiaLimit.call('POST', '/check/bulk', Array(101).fill(one))).status, 400, "BULK_CHECK_MAX_REQUESTS=100: Eunomia's limit");
  },

  'Times carry a zone': async (t) => {
    const target = await server(t);
    const entity = (await target.call('POST', ENTITIES, { uri: 'user:timed', type: 'principal', attributes: { a: 1 } })).body;
    t.match(entity.registered_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    t.match(entity.attributes[0].updated_at, /Z$/);
  },

  'Strings are never re-read as JSON': async (t) => {
    const target = await server(t);
    const entity = (await target.call('POST', ENTITIES, { uri: 'user:s', type: 'principal', attributes: { code: '42', flag: 'true' } })).body;
    t.same(entity.attributes.map((attribute: { value: unknown }) => attribute.value), ['42', 'true']);
    await create(t, target, policy('eighteen', [allowRule('exactly-18', [condition('attributes.age', 'equals', '18')])]));
    t.equal((await check(target, { age: 18 })).allowed, false, 'the string "18" is not the number 18');
    t.equal((await check(target, { age: '18' })).allowed, true);
    const ordering = await target.call('POST', '/admin/policies', policy('older', [allowRule('older', [condition('attributes.age', 'gt', '18')])]));
    t.equal(ordering.status, 422, 'gt with a string is refused');
  },

  'Size limits are 413 and 422': async (t) => {
    const target = await server(t);
    const huge = await target.call('POST', '/check', { principal: { attributes: { blob: 'x'.repeat(1024 * 1024) } }, resource: { attributes: { kind: 'document' } }, action: 'read' });
    t.equal(huge.status, 413, 'a body over 1 MiB');
    const long = await target.call('POST', '/check', { principal: { attributes: { blob: 'x'.repeat(65_537) } }, resource: { attributes: { kind: 'document' } }, action: 'read' });
    t.equal(long.status, 422, 'a string over --max-string-length');
    t.ok(Array.isArray(long.body.detail) && long.body.detail.length > 0, 'naming the field');
  },

  'A 422 names each problem as loc, msg and type': async (t) => {
    const target = await server(t);
    const empty = await target.call('POST', '/check', { principal: { attributes: {} }, resource: { attributes: { kind: 'document' } } });
    t.same([empty.status, empty.body], [422, { detail: [{ loc: ['body', 'principal'], msg: "Either 'uri' or non-empty 'attributes' must be provided", type: 'value_error' }] }]);
    const missing = await target.call('POST', '/check', { resource: { attributes: { kind: 'document' } } });
    t.same(missing.body, { detail: [{ loc: ['body', 'principal'], msg: 'Field required', type: 'missing' }] });
  },

  'Unknown fields are 422': async (t) => {
    const target = await server(t);
    const misspelt = await target.call('POST', '/check', { principal: { attributes: { a: 1 } }, resource: { attributes: { kind: 'document' } }, resouce: {}, action: 'read' });
    t.same([misspelt.status, misspelt.body.detail], [422, [{ loc: ['body', 'resouce'], msg: 'Extra inputs are not permitted', type: 'extra_forbidden' }]]);
  },

  'A conflicting attribute denies its bulk item, not the bulk': async (t) => {
    const target = await server(t);
    await create(t, target, policy('everyone', [allowRule('everyone', [])], 'deny'));
    t.equal((await target.call('POST', ENTITIES, { uri: 'user:a', type: 'principal', attributes: { role: 'staff' } })).status, 200);
    const resource = { attributes: { kind: 'document' } };
    const answer = await target.call('POST', '/check/bulk', [{ principal: { uri: 'user:a', attributes: { role: 'admin' } }, resource, action: 'read' }, { principal: { uri: 'user:a' }, resource, action: 'read' }]);
    t.equal(answer.status, 200);
    t.same(answer.body, [
      { allowed: false, reason: "For entity 'user:a', attribute 'role' has more than one value" },
      { allowed: true, reason: 'Rule everyone allowed the action in policy everyone' },
    ]);
  },

  "`*` in a rule's actions is every action": async (t) => {
    const target = await server(t);
    await create(t, target, { ...policy('suspended', [{ name: 'suspended', effect: 'deny', principal_conditions: [condition('attributes.suspended', '==', true)], actions: ['*'] }], 'allow') });
    t.same(await check(target, { suspended: true }, 'export'), { allowed: false, reason: 'Rule suspended denied the action in policy suspended' });
    t.equal((await target.call('POST', '/check', { principal: { attributes: { suspended: false } }, resource: { attributes: { kind: 'document' } }, action: '*' })).status, 400);
  },

  'With admin authentication on, a conflicting attribute is not told': async (t) => {
    const key = 'a-key-for-the-migration-guide';
    const guarded = await server(t, { adminAuthRequired: true, adminApiKey: key });
    const admin = { 'way-api-key': key };
    t.equal((await guarded.call('POST', '/admin/policies', policy('everyone', [allowRule('staff', [condition('attributes.role', '==', 'staff')])]), admin)).status, 200);
    t.equal((await guarded.call('POST', ENTITIES, { uri: 'user:a', type: 'principal', attributes: { role: 'staff' } }, admin)).status, 200);
    const answer = await guarded.call('POST', '/check', { principal: { uri: 'user:a', attributes: { role: 'admin' } }, resource: { attributes: { kind: 'document' } }, action: 'read' });
    t.same([answer.status, answer.body], [200, { allowed: true, reason: 'Rule staff allowed the action in policy everyone' }], 'the registered role decides');
  },

  '/health also names the revision': async (t) => {
    const target = await server(t);
    t.same((await target.call('GET', '/health')).body, { status: 'ok', revision: 0 });
    await create(t, target, policy('one', [allowRule('one', [])]));
    t.same((await target.call('GET', '/health')).body, { status: 'ok', revision: 1 });
  },

  'A name with nothing to slugify is 422': async (t) => {
    const target = await server(t);
    const answer = await target.call('POST', '/admin/policies', policy('???', []));
    t.equal(answer.status, 422);
    t.match(answer.body.detail, [{ loc: ['body', 'name'], msg: "name '???' has no letters or digits to make a slug from" }]);
  },

  'Malformed JSON is 400': async (t) => {
    const target = await server(t);
    const answer = await target.send('POST', '/check', '{"principal":', { 'content-type': 'application/json' });
    t.equal(answer.status, 400);
    t.match(answer.body.detail, /^Malformed JSON body: /);
  },

  'Entity answers give type before attributes': async (t) => {
    const target = await server(t);
    const written = await target.send('POST', ENTITIES, JSON.stringify({ uri: 'user:o', type: 'principal', attributes: { a: 1 } }), { 'content-type': 'application/json' });
    t.same(Object.keys(written.body), ['uri', 'type', 'attributes', 'registered_at'], 'as written');
    t.same(Object.keys((await target.call('GET', `${ENTITIES}/user:o`)).body), ['uri', 'type', 'attributes', 'registered_at'], 'as read');
  },

  'The OpenAPI document at /openapi.json': async (t) => {
    const target = await server(t);
    const document = await target.call('GET', '/openapi.json');
    t.equal(document.status, 200);
    t.equal(document.body.openapi, '3.1.0');
    t.ok(document.body.paths['/check'], 'it describes /check');
    t.same(document.body, (await target.call('GET', '/docs/json')).body, 'the same document as /docs/json');
  },
};

t.test("moving a server over: the guide's commands, run as written from Eunomia's directory outside the checkout", async (t) => {
  const [block] = codeBlocks(section(GUIDE, 'Moving a server over')).filter((each) => each.lang === 'sh');
  const lines = block!.text.split('\n').map((line) => line.replace(/\s+#.*$/, '').trim()).filter((line) => line !== '');
  t.notMatch(block!.text, /\bnpx\b/, 'no command asks the npm registry for a package');
  t.match(lines[0], /^VERDICT=/, 'the first line names the checkout');
  const checkout = fileURLToPath(new URL('../../../', import.meta.url));
  const eunomia = realpathSync(scratchDir(t));
  t.notOk(eunomia.startsWith(realpathSync(checkout)), 'the directory is outside the checkout');
  mkdirSync(join(eunomia, '.db'));
  const database = new EunomiaDatabaseFile(join(eunomia, '.db', 'eunomia_db.sqlite'));
  database.addPolicy({ name: 'laptops', rules: [{ name: 'it', effect: 'allow', actions: ['administer'], principal_conditions: [{ path: 'attributes.department', operator: 'equals', value: 'it' }] }] });
  database.close();
  writeFileSync(join(eunomia, '.env'), 'ADMIN_AUTHN_REQUIRED=false\n');
  // The shell runs each line as the reader would, with the checkout where the first line says it is.
  const shell = (line: string) => `VERDICT=${JSON.stringify(checkout)}\n${line}`;
  const env = { PATH: process.env.PATH, HOME: eunomia };
  const imported = spawnSync('bash', ['-c', shell(lines[1]!)], { cwd: eunomia, env, encoding: 'utf8' });
  t.equal(imported.status, 0, `${lines[1]}: ${imported.stdout}${imported.stderr}`);
  t.match(imported.stdout, /imported policy 'laptops'/);
  const port = await freePort();
  // A process group of its own: the shell and the server it starts are stopped together.
  const server = spawn('bash', ['-c', shell(lines[2]!)], { cwd: eunomia, env: { ...env, PORT: String(port) }, stdio: 'ignore', detached: true });
  t.teardown(() => process.kill(-server.pid!, 'SIGKILL'));
  await waitFor(`http://127.0.0.1:${port}`, '/health', 200, 60_000);
  const policies = await ask(`http://127.0.0.1:${port}`, 'GET', '/admin/policies');
  t.same(policies.body.map((each: { name: string }) => each.name), ['laptops'], 'the server serves what the import wrote');
  t.equal(policies.body[0].rules[0].principal_conditions[0].operator, 'equals', "in Eunomia's operator style");
});

t.test('the guide lists exactly the differences tested here', async (t) => {
  const headings = section(GUIDE, 'Differences')
    .split('\n')
    .filter((line) => line.startsWith('### '))
    .map((line) => line.slice(4));
  t.same(headings, Object.keys(DIFFERENCES));
  for (const heading of headings) {
    const body = GUIDE.slice(GUIDE.indexOf(`### ${heading}\n`)).split('\n### ')[0]!;
    t.match(body, /\n- \*\*Eunomia:\*\* [^]*\n- \*\*Verdict:\*\* [^]*\n- \*\*Why:\*\* /, `${heading}: what Eunomia did, what Verdict does, and why`);
  }
});

t.test("the README's compatibility paragraph says first which setting Eunomia's clients need", async (t) => {
  const readme = readDocument('README.md');
  const paragraph = readme.slice(readme.indexOf('**Eunomia compatibility.**') + '**Eunomia compatibility.**'.length);
  const firstSentence = paragraph.slice(0, paragraph.search(/[.:]\s/) + 1);
  t.match(firstSentence, /--operator-style eunomia/);
  t.match(paragraph.split('\n\n')[0], '(docs/migrating-from-eunomia.md)', 'and points at the guide');
});

for (const [heading, difference] of Object.entries(DIFFERENCES)) t.test(heading, difference);
