import t, { type Test } from 'tap';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import { startServer, type TestServer } from '../helpers/server.js';
import { ConfigError } from '../../src/config/config.js';
import { ask, outputMatches, runVerdict, startVerdict } from '../helpers/child.js';
import { ADMIN_WRITES, writeRoutesOf } from '../helpers/admin-writes.js';

// --policies <dir> on a real server: the files are the policy set, changes are applied without a
// restart, a broken change leaves the last good set serving and says so (/ready 200, degraded: the
// process still decides), writes are refused. Files not valid at start stop the start: never ready.

const itDesk = (department: string, operator = '==') => ({
  name: 'IT desk',
  rules: [
    {
      name: 'IT admins',
      effect: 'allow',
      principal_conditions: [{ path: 'attributes.department', operator, value: department }],
      resource_conditions: [{ path: 'attributes.kind', operator: '==', value: 'laptop' }],
      actions: ['administer'],
    },
  ],
});

const CHECK = { principal: { attributes: { department: 'it' } }, resource: { attributes: { kind: 'laptop' } }, action: 'administer' };

function policyDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-policies-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Asks until `done` holds for the answer (the server applies file changes on its own schedule), at most 15 s. */
async function until(server: TestServer, method: string, path: string, body: unknown, done: (answer: Awaited<ReturnType<TestServer['call']>>) => boolean) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const answer = await server.call(method, path, body);
    if (done(answer)) return answer;
    if (Date.now() > deadline) throw new Error(`${method} ${path} still answers ${answer.status} ${JSON.stringify(answer.body)}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const allowed = (server: TestServer) => server.call('POST', '/check', CHECK).then((answer) => answer.body.allowed as boolean);

t.test('the files are the policy set: edited, broken (ready, degraded), fixed, without a restart', async (t) => {
  const dir = policyDir(t);
  const file = join(dir, 'it-desk.yaml');
  writeFileSync(file, YAML.stringify(itDesk('it')));
  writeFileSync(join(dir, 'README.md'), 'not a policy file');
  const server = await startServer({ policiesDir: dir });
  t.teardown(server.close);
  t.same((await server.call('POST', '/check', CHECK)).body, { allowed: true, reason: 'Rule it-admins allowed the action in policy it-desk' });
  t.same((await server.call('GET', '/admin/policies')).body.map((policy: { name: string }) => policy.name), ['it-desk']);
  t.equal((await server.call('GET', '/admin/policies/it-desk')).body.rules[0].name, 'it-admins');
  const ready = await server.call('GET', '/ready');
  t.same([ready.status, ready.body.degraded, ready.body.checks.policyFiles], [200, false, 'ok']);
  const revision = Number((await server.call('GET', '/health')).body.revision);

  writeFileSync(file, YAML.stringify(itDesk('hr')));
  await until(server, 'POST', '/check', CHECK, (answer) => answer.body.allowed === false);
  t.ok((await server.call('GET', '/health')).body.revision > revision, 'a new revision');

  writeFileSync(file, YAML.stringify(itDesk('it', 'gt')));
  const degraded = await until(server, 'GET', '/ready', undefined, (answer) => answer.body.degraded === true);
  t.equal(degraded.status, 200, 'still ready: the last good set decides');
  t.equal(degraded.body.status, 'ready');
  t.match(degraded.body.detail, /^Ready, degraded: policyFiles \(changed files not applied/);
  t.match(degraded.body.checks.policyFiles, /^changed files not applied since \S+, serving revision \d+: .*it-desk\.yaml: rules\.0\.principal_conditions\.0\.value: operator 'gt' needs a number value$/);
  t.equal(await allowed(server), false, 'the last good set still decides');
  const metrics = (await server.call('GET', '/metrics')).body as string;
  t.match(metrics, /^verdict_policy_files_in_force 0$/m);
  t.match(metrics, /^verdict_policy_files_rejected_total 1$/m);

  writeFileSync(file, YAML.stringify(itDesk('it')));
  const fixed = await until(server, 'GET', '/ready', undefined, (answer) => answer.body.degraded === false);
  t.same([fixed.status, fixed.body.checks.policyFiles], [200, 'ok']);
  t.equal(await allowed(server), true, 'the fixed file is in force');
  t.match((await server.call('GET', '/metrics')).body, /^verdict_policy_files_in_force 1$/m);

  writeFileSync(join(dir, 'second.json'), JSON.stringify([{ ...itDesk('it'), name: 'copy' }, { ...itDesk('it'), name: 'IT desk' }]));
  const duplicate = await until(server, 'GET', '/ready', undefined, (answer) => answer.body.degraded === true);
  t.equal(duplicate.status, 200);
  t.match(duplicate.body.checks.policyFiles, /second\.json: 1: name: policy 'it-desk' is already defined earlier/);
  rmSync(join(dir, 'second.json'));
  await until(server, 'GET', '/ready', undefined, (answer) => answer.body.degraded === false);
});

t.test('a file that no longer parses is not left out: the last good set, its deny included, keeps deciding, and /ready names the file', async (t) => {
  const dir = policyDir(t);
  const freeze = {
    name: 'laptop freeze',
    rules: [{ name: 'nobody administers laptops', effect: 'deny', resource_conditions: [{ path: 'attributes.kind', operator: '==', value: 'laptop' }], actions: ['administer'] }],
  };
  const files = { 'freeze.json': JSON.stringify(freeze), 'it-desk.yaml': YAML.stringify(itDesk('it')) };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const server = await startServer({ policiesDir: dir });
  t.teardown(server.close);
  const frozen = { allowed: false, reason: 'Rule nobody-administers-laptops denied the action in policy laptop-freeze' };
  t.same((await server.call('POST', '/check', CHECK)).body, frozen, 'the deny decides');
  const broken: [string, keyof typeof files, string, RegExp][] = [
    ['truncated JSON', 'freeze.json', files['freeze.json'].slice(0, 40), /freeze\.json: .*JSON/],
    ['an unclosed YAML flow sequence', 'it-desk.yaml', 'name: IT desk\nrules: [\n', /it-desk\.yaml: /],
    ['an empty file', 'freeze.json', '', /freeze\.json: .*JSON/],
  ];
  for (const [label, name, text, problem] of broken) {
    const revision = (await server.call('GET', '/health')).body.revision;
    writeFileSync(join(dir, name), text);
    // Refused, or (wrongly) taken as a new set: either ends the wait.
    const read = await until(server, 'GET', '/ready', undefined, (answer) => answer.body.degraded === true || answer.headers['verdict-revision'] !== String(revision));
    t.same([read.status, read.body.degraded, read.headers['verdict-revision']], [200, true, String(revision)], `${label}: still ready, degraded, at the same revision`);
    t.match(read.body.checks.policyFiles, problem, `${label}: /ready names the file`);
    t.same((await server.call('POST', '/check', CHECK)).body, frozen, `${label}: the last good set decides, its deny included`);
    t.same((await server.call('GET', '/admin/policies')).body.map((policy: { name: string }) => policy.name), ['laptop-freeze', 'it-desk'], `${label}: and is what the server lists`);
    writeFileSync(join(dir, name), files[name]);
    await until(server, 'GET', '/ready', undefined, (answer) => answer.body.degraded === false);
  }
});

t.test('policy writes answer 409; reads, validation and the registry still work', async (t) => {
  const dir = policyDir(t);
  writeFileSync(join(dir, 'it-desk.json'), JSON.stringify(itDesk('it')));
  const server = await startServer({ policiesDir: dir });
  t.teardown(server.close);
  // Every policy write route the server documents, on the policy in force and on one that is not.
  const policyRoutes = writeRoutesOf((await server.call('GET', '/docs/json')).body).filter((route) => /polic/.test(route));
  t.ok(policyRoutes.length >= 6, `${policyRoutes.length} policy write routes`);
  const writes = policyRoutes.flatMap((route) => {
    const write = ADMIN_WRITES.find((known) => `${known.method} ${known.route}` === route);
    if (write === undefined) {
      t.fail(`${route}: no example call in test/helpers/admin-writes.ts`);
      return [];
    }
    const onThePolicyInForce = write.path.replace(/\/(p1|s1)\b/, '/it-desk');
    return onThePolicyInForce === write.path ? [write] : [write, { ...write, path: onThePolicyInForce }];
  });
  for (const { method, path, body } of writes) {
    const answer = await server.call(method, path, body);
    t.equal(answer.status, 409, `${method} ${path}`);
    t.match(answer.body.detail, /^Policies are managed from files in .* \(--policies\): change the files there instead/);
  }
  t.equal(await allowed(server), true, 'nothing changed');
  t.equal((await server.call('POST', '/admin/policies/validate', itDesk('hr'))).status, 200);
  t.equal((await server.call('GET', '/admin/policies/none')).status, 404);
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:alice', attributes: { department: 'it' } })).status, 200);
  t.same((await server.call('POST', '/check', { ...CHECK, principal: { uri: 'user:alice' } })).body.allowed, true);
});

t.test('a Kubernetes ConfigMap update: the ..data symlink swapped to a new directory', async (t) => {
  const dir = policyDir(t);
  const version = (name: string, department: string) => {
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, 'it-desk.yaml'), YAML.stringify(itDesk(department)));
  };
  version('..2026_01_01_00_00_00.1', 'it');
  symlinkSync('..2026_01_01_00_00_00.1', join(dir, '..data'));
  symlinkSync('..data/it-desk.yaml', join(dir, 'it-desk.yaml'));
  const server = await startServer({ policiesDir: dir });
  t.teardown(server.close);
  t.equal(await allowed(server), true);
  // What the kubelet does: write the new version beside the old, point ..data_tmp at it, rename over ..data.
  version('..2026_01_01_00_05_00.2', 'hr');
  symlinkSync('..2026_01_01_00_05_00.2', join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  rmSync(join(dir, '..2026_01_01_00_00_00.1'), { recursive: true });
  await until(server, 'POST', '/check', CHECK, (answer) => answer.body.allowed === false);
  t.same((await server.call('GET', '/admin/policies')).body[0].rules[0].principal_conditions[0].value, 'hr');
  t.same((await server.call('GET', '/ready')).body.checks.policyFiles, 'ok');
});

t.test('files that are not valid at start: the start stops with the file and field, exit code 2', async (t) => {
  const dir = policyDir(t);
  writeFileSync(join(dir, 'broken.yaml'), YAML.stringify(itDesk('it', 'startswith')).replace('value: it', 'value: 3'));
  const exit = await runVerdict(t, ['start', '--store', 'embedded', '--port', '0', '--data-dir', join(dir, '.data'), '--policies', dir]).exited;
  t.equal(exit.code, 2);
  t.match(exit.stderr, /--policies \(POLICIES_DIR\) .*broken\.yaml: rules\.0\.principal_conditions\.0\.value: operator 'startswith' needs a string value/);
  // The same refusal (a ConfigError: exit code 2, as above) for a file that does not parse; in this process, to save a start.
  writeFileSync(join(dir, 'broken.yaml'), YAML.stringify(itDesk('it')));
  writeFileSync(join(dir, 'truncated.json'), JSON.stringify(itDesk('it')).slice(0, 30));
  await t.rejects(startServer({ policiesDir: dir, dataDir: join(dir, '.data') }), { constructor: ConfigError, message: /^--policies \(POLICIES_DIR\) .*truncated\.json: .*JSON/ }, 'a file that does not parse stops it too');
  const missing = await runVerdict(t, ['start', '--store', 'embedded', '--port', '0', '--data-dir', join(dir, '.data'), '--policies', join(dir, 'nowhere')]).exited;
  t.equal(missing.code, 2);
  t.match(missing.stderr, /nowhere: ENOENT/);
});

/** Principals have a string department; a laptop's kind is one of two. */
const SCHEMAS = {
  principal: { attributes: { type: 'object', properties: { department: { type: 'string' } } } },
  resource: { attributes: { type: 'object', properties: { kind: { enum: ['laptop', 'phone'] } } } },
};
/** IT desk, with a condition the schemas contradict: a kind that is not in the enumeration. */
const desktopsToo = () => {
  const policy = itDesk('it');
  policy.rules[0]!.resource_conditions[0]!.value = 'desktop';
  return policy;
};
const DESKTOP_PROBLEM =
  "desk.yaml: policy 'it-desk': rules.0.resource_conditions.0.value: rule 'it-admins': \"desktop\" is not one of the values resource attribute 'kind' may take: \"laptop\", \"phone\"";

t.test('attribute schemas, warn: policy files they contradict are served, each problem logged at start and on change with file, policy, rule and problem', async (t) => {
  const dir = policyDir(t);
  writeFileSync(join(dir, 'schemas.json'), JSON.stringify(SCHEMAS));
  writeFileSync(join(dir, 'desk.yaml'), YAML.stringify(desktopsToo()));
  const verdict = await startVerdict(t, ['--store', 'embedded', '--data-dir', join(dir, '.data'), '--policies', dir]);
  const logged = () =>
    verdict
      .output()
      .stdout.split('\n')
      .filter((line) => line.includes('contradict the attribute schemas'))
      .map((line) => JSON.parse(line) as { level: number; dir: string; problems: string[] });
  await outputMatches(verdict, /contradict the attribute schemas/);
  const [atStart] = logged();
  t.equal(atStart!.level, 40, 'a warning');
  t.same(atStart!.problems, [join(dir, DESKTOP_PROBLEM)]);
  t.equal((await ask(verdict.url, 'GET', '/ready')).body.degraded, false, 'the set is in force');

  // A change that adds a problem is applied, and its problems are logged again.
  const undeclared = desktopsToo();
  undeclared.rules[0]!.principal_conditions[0]!.path = 'attributes.departement';
  writeFileSync(join(dir, 'desk.yaml'), YAML.stringify(undeclared));
  await outputMatches(verdict, /contradict the attribute schemas[\s\S]*contradict the attribute schemas/);
  t.same(logged()[1]!.problems, [
    join(dir, "desk.yaml: policy 'it-desk': rules.0.principal_conditions.0.path: rule 'it-admins': principal attribute 'departement' is not declared by the principal schemas"),
    join(dir, DESKTOP_PROBLEM),
  ]);
  t.equal((await ask(verdict.url, 'GET', '/admin/policies')).body[0].rules[0].principal_conditions[0].path, 'attributes.departement', 'the change is in force');
});

t.test('attribute schemas, reject: policy files they contradict stop the start, and a change to such files is not applied', async (t) => {
  const dir = policyDir(t);
  writeFileSync(join(dir, 'schemas.json'), JSON.stringify(SCHEMAS));
  writeFileSync(join(dir, 'desk.yaml'), YAML.stringify(desktopsToo()));
  const args = ['start', '--store', 'embedded', '--port', '0', '--data-dir', join(dir, '.data'), '--policies', dir, '--schema-enforcement', 'reject'];
  const exit = await runVerdict(t, args).exited;
  t.equal(exit.code, 2);
  t.match(exit.stderr, `--policies (POLICIES_DIR) ${dir}: ${join(dir, DESKTOP_PROBLEM)}`);

  writeFileSync(join(dir, 'desk.yaml'), YAML.stringify(itDesk('it')));
  const server = await startServer({ policiesDir: dir, schemaEnforcement: 'reject' });
  t.teardown(server.close);
  t.equal(await allowed(server), true);
  writeFileSync(join(dir, 'desk.yaml'), YAML.stringify(desktopsToo()));
  const degraded = await until(server, 'GET', '/ready', undefined, (answer) => answer.body.degraded === true);
  t.equal(degraded.status, 200, 'the last good set keeps deciding');
  t.match(degraded.body.checks.policyFiles, DESKTOP_PROBLEM);
  t.equal(await allowed(server), true, 'a laptop is still administered by the set in force');
  t.equal((await server.call('GET', '/admin/policies')).body[0].rules[0].resource_conditions[0].value, 'laptop');
});

t.test('attribute schemas beside the policy files follow their changes as the policies do: applied without a restart, the last good ones kept while a change is not valid', async (t) => {
  const dir = policyDir(t);
  writeFileSync(join(dir, 'desk.yaml'), YAML.stringify(itDesk('it')));
  const server = await startServer({ policiesDir: dir, schemaEnforcement: 'reject' });
  t.teardown(server.close);
  const rejects = (server: TestServer) => server.call('POST', '/check', { ...CHECK, principal: { attributes: { department: 7 } } }).then((answer) => answer.status === 400);
  t.equal(await rejects(server), false, 'no schemas: a numeric department is decided');

  // A ConfigMap's new version: the schemas arrive beside the policies.
  const departmentsAreText = { principal: { attributes: { type: 'object', properties: { department: { type: 'string' } } } } };
  writeFileSync(join(dir, 'schemas.json'), JSON.stringify(departmentsAreText));
  await until(server, 'POST', '/check', { ...CHECK, principal: { attributes: { department: 7 } } }, (answer) => answer.status === 400);
  t.same((await server.call('GET', '/admin/schemas')).body.document, departmentsAreText, 'the schemas in force are the file\'s');

  // A change that is not a schema document: the last good schemas stay, and /ready says why.
  writeFileSync(join(dir, 'schemas.json'), '{"principal": {"attributes": {"type": "text"}}}');
  const degraded = await until(server, 'GET', '/ready', undefined, (answer) => answer.body.degraded === true);
  t.match(degraded.body.checks.policyFiles, 'schemas.json');
  t.equal(await rejects(server), true, 'the last good schemas still hold checks');

  // Fixed, then gone: each applied as the policies would be.
  writeFileSync(join(dir, 'schemas.json'), JSON.stringify({ principal: { attributes: { type: 'object' } } }));
  await until(server, 'GET', '/ready', undefined, (answer) => answer.body.degraded === false);
  t.equal(await rejects(server), false, 'the fixed schemas are in force');
  rmSync(join(dir, 'schemas.json'));
  await until(server, 'GET', '/admin/schemas', undefined, (answer) => answer.status === 404);
  t.equal(await allowed(server), true);
});
