import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { keyDigest } from '../../src/admin-keys.js';
import { ask, freePort, outputMatches, runVerdict, startVerdict, type Child } from '../helpers/child.js';
import { scratchDir } from '../helpers/server.js';

// `verdict start` as a child process: whether admin authentication is on, what the start says about
// it, and a start that would open the admin interface to the network without a key is refused.

const KEY = 'a-key-this-test-made-0123456789';

function startArgs(t: Test, ...extra: string[]): string[] {
  return ['--store', 'embedded', '--data-dir', join(scratchDir(t), 'data'), '--workers', '1', ...extra];
}

/** The JSON line the server logs once it is ready. */
function readyLine(child: Child): Record<string, unknown> {
  const line = child
    .output()
    .stdout.split('\n')
    .find((text) => text.includes('"Verdict is ready"'));
  if (line === undefined) throw new Error(`no ready line in ${child.output().stdout}`);
  return JSON.parse(line) as Record<string, unknown>;
}

async function readyServer(t: Test, args: string[], env: NodeJS.ProcessEnv, url?: string) {
  const server = await startVerdict(t, args, { env: { LOG_LEVEL: 'info', ...env }, url });
  await outputMatches(server, /"Verdict is ready"/);
  return server;
}

t.test('ADMIN_API_KEY alone turns admin authentication on; the ready line says so and why, never the key', async (t) => {
  const server = await readyServer(t, startArgs(t), { ADMIN_API_KEY: KEY });
  t.equal((await ask(server.url, 'GET', '/admin/policies')).status, 401, 'no key: 401');
  t.equal((await ask(server.url, 'POST', '/admin/policies', { name: 'p', rules: [] })).status, 401, 'no anonymous write');
  t.equal((await ask(server.url, 'GET', '/admin/policies', undefined, { 'way-api-key': KEY })).status, 200, 'the key: 200');
  const ready = readyLine(server);
  t.equal(ready.adminAuthRequired, true);
  t.match(ready.adminAuth, /^on: ADMIN_API_KEY is set/, 'the line says why');
  t.notMatch(server.output().stdout + server.output().stderr, KEY, 'the key is never printed');
});

t.test('a keys file alone turns admin authentication on', async (t) => {
  const dir = scratchDir(t);
  const keys = join(dir, 'admin-keys');
  writeFileSync(keys, `alice admin ${keyDigest(KEY).toString('hex')}\n`);
  const server = await readyServer(t, startArgs(t, '--admin-keys-file', keys), {});
  t.equal((await ask(server.url, 'GET', '/admin/policies')).status, 401);
  t.equal((await ask(server.url, 'GET', '/admin/policies', undefined, { 'way-api-key': KEY })).status, 200);
  t.match(readyLine(server).adminAuth, /^on: --admin-keys-file is set/);
});

t.test('ADMIN_AUTHN_REQUIRED=false said explicitly keeps admin open; the ready line says the key is ignored', async (t) => {
  for (const [label, args, env] of [
    ['the variable', [], { ADMIN_AUTHN_REQUIRED: 'false', ADMIN_API_KEY: KEY }],
    ['the flag', ['--no-admin-authn-required'], { ADMIN_API_KEY: KEY }],
  ] as const) {
    const server = await readyServer(t, startArgs(t, ...args), env);
    t.equal((await ask(server.url, 'GET', '/admin/policies')).status, 200, `${label}: open`);
    const ready = readyLine(server);
    t.equal(ready.adminAuthRequired, false, label);
    t.match(ready.adminAuth, /^off: .*false.*ADMIN_API_KEY is ignored/, `${label}: the line says the key is ignored`);
    t.notMatch(server.output().stdout, KEY);
    server.process.kill('SIGTERM');
    await server.exited;
  }
  // An empty variable is no explicit setting: the key still turns authentication on.
  const empty = await readyServer(t, startArgs(t), { ADMIN_AUTHN_REQUIRED: '', ADMIN_API_KEY: KEY });
  t.equal((await ask(empty.url, 'GET', '/admin/policies')).status, 401, 'ADMIN_AUTHN_REQUIRED empty: the key decides');
});

t.test('without a key on loopback, admin stays open and the ready line says why', async (t) => {
  const server = await readyServer(t, startArgs(t), {});
  t.equal((await ask(server.url, 'GET', '/admin/policies')).status, 200);
  t.match(readyLine(server).adminAuth, /^off: no admin key is set/);
});

t.test('an address beyond loopback with admin authentication off: the start is refused, naming the flag', async (t) => {
  const port = await freePort();
  for (const [label, extra] of [
    ['--host 0.0.0.0', ['--host', '0.0.0.0']],
    ['--host ::', ['--host', '::']],
    ['--processes 2 (refused before any process starts)', ['--host', '0.0.0.0', '--processes', '2']],
    ['with a Unix socket too', ['--host', '0.0.0.0', '--socket', join(scratchDir(t), 'verdict.sock')]],
    ['ADMIN_AUTHN_REQUIRED=false with a key', ['--host', '0.0.0.0', '--no-admin-authn-required']],
  ] as const) {
    const exit = await runVerdict(t, ['start', ...startArgs(t, '--port', String(port), ...extra)], { ADMIN_API_KEY: label.includes('with a key') ? KEY : '' }).exited;
    t.equal(exit.code, 2, `${label}: exit code 2`);
    const lines = exit.stderr.split('\n').filter((line) => line !== '');
    t.equal(lines.length, 1, `${label}: one line (${exit.stderr})`);
    t.match(lines[0], /^verdict: admin authentication is off and --host \S+ is not a loopback address/, `${label}: says what is wrong`);
    t.match(lines[0], /--allow-open-admin/, `${label}: names the flag that allows it`);
    t.match(lines[0], /ADMIN_API_KEY/, `${label}: and how to turn authentication on`);
    t.equal(exit.stdout, '', `${label}: nothing started`);
  }
  await t.rejects(ask(`http://127.0.0.1:${port}`, 'GET', '/health'), { code: 'ECONNREFUSED' }, 'nothing listens on the port');
});

t.test('beyond loopback: a key, or --allow-open-admin (ALLOW_OPEN_ADMIN), lets it start', async (t) => {
  const keyed = await readyServer(t, startArgs(t, '--host', '0.0.0.0'), { ADMIN_API_KEY: KEY });
  t.equal((await ask(keyed.url, 'GET', '/admin/policies')).status, 401, 'listening beyond loopback, the key required');

  for (const [label, args, env] of [
    ['the flag', ['--allow-open-admin'], {}],
    ['the variable', [], { ALLOW_OPEN_ADMIN: 'true' }],
  ] as const) {
    const open = await readyServer(t, startArgs(t, '--host', '0.0.0.0', ...args), env);
    t.equal((await ask(open.url, 'GET', '/admin/policies')).status, 200, `${label}: open, as asked`);
    t.match(readyLine(open).adminAuth, /^off: /, label);
    t.match(open.output().stdout, /"level":40,.*admin interface is open to every client that reaches 0\.0\.0\.0/, `${label}: a warning says so`);
    open.process.kill('SIGTERM');
    await open.exited;
  }
});

t.test('loopback names and a metrics port beyond loopback need no key: the metrics port serves no admin route', async (t) => {
  const [port, metricsPort] = [await freePort(), await freePort()];
  const args = startArgs(t, '--host', 'localhost', '--port', String(port), '--metrics-port', String(metricsPort), '--metrics-host', '0.0.0.0');
  const server = await readyServer(t, args, {}, `http://localhost:${port}`);
  const metrics = `http://127.0.0.1:${metricsPort}`;
  t.equal((await ask(metrics, 'GET', '/ready')).status, 200);
  t.equal((await ask(metrics, 'GET', '/admin/policies')).status, 404, 'no admin route on the metrics port');
  t.equal((await ask(server.url, 'GET', '/admin/policies')).status, 200);
});
