import t from 'tap';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { loadConfig } from '../../src/config/config.js';
import { freePort, startVerdict, type Exit, type RunningVerdict } from '../helpers/child.js';
import { scratchDir } from '../helpers/server.js';

// `verdict start` as a child process: where its settings come from.

/** Stops a running server with SIGTERM and says how it ended. */
function stop(server: RunningVerdict): Promise<Exit> {
  server.process.kill('SIGTERM');
  return server.exited;
}

t.test('flags win over variables', async (t) => {
  const cwd = scratchDir(t);
  const port = await freePort();
  const dataDir = join(cwd, 'from-flag');
  const server = await startVerdict(t, ['--store', 'embedded', '--port', String(port), '--data-dir', dataDir, '--log-level', 'warn'], {
    env: { PORT: '1', DATA_DIR: join(cwd, 'from-variable'), LOG_LEVEL: 'nonsense' },
    cwd,
    url: `http://127.0.0.1:${port}`,
  });
  t.pass(`serving on the flag's port ${port}, not PORT=1`);
  const check = await request(`http://127.0.0.1:${port}/check`, {
    method: 'POST',
    body: JSON.stringify({ principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } } }),
    headers: { 'content-type': 'application/json' },
  });
  t.same(await check.body.json(), { allowed: false, reason: 'Action denied by default because there are no policies' });
  t.ok(existsSync(join(dataDir, 'verdict.db')), 'store in --data-dir');
  t.notOk(existsSync(join(cwd, 'from-variable')), 'DATA_DIR ignored');
  const run = await stop(server);
  t.equal(run.code, 0);
  t.equal(run.stderr, '');
});

t.test('a flag overriding a bad variable: --bulk-check-max-requests wins over BULK_CHECK_MAX_REQUESTS=0', async (t) => {
  const cwd = scratchDir(t);
  const server = await startVerdict(t, ['--store', 'embedded', '--bulk-check-max-requests', '2', '--data-dir', join(cwd, 'd')], {
    env: { BULK_CHECK_MAX_REQUESTS: '0', LOG_LEVEL: 'warn' },
    cwd,
  });
  const item = { principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } } };
  const bulk = await request(`${server.url}/check/bulk`, {
    method: 'POST',
    body: JSON.stringify([item, item, item]),
    headers: { 'content-type': 'application/json' },
  });
  t.equal(bulk.statusCode, 400);
  t.same(await bulk.body.json(), { detail: 'Too many requests. Maximum allowed: 2' });
  t.equal((await stop(server)).code, 0);
});

const SECOND_LOOPBACK = '127.0.0.2';
const secondLoopbackMissing = await freePort(SECOND_LOOPBACK).then(
  () => false as const,
  () => `${SECOND_LOOPBACK} is not available on this machine`,
);

t.test('HOST, PORT and DATA_DIR variables work', { skip: secondLoopbackMissing }, async (t) => {
  const cwd = scratchDir(t);
  const port = await freePort(SECOND_LOOPBACK);
  const dataDir = join(cwd, 'from-variable');
  const server = await startVerdict(t, [], {
    env: { STORE: 'embedded', HOST: SECOND_LOOPBACK, PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: 'info' },
    cwd,
    url: `http://${SECOND_LOOPBACK}:${port}`,
  });
  t.ok(existsSync(join(dataDir, 'verdict.db')), 'store in DATA_DIR');
  t.notOk(existsSync(join(cwd, 'data')), 'not in ./data');
  const run = await stop(server);
  t.equal(run.code, 0);
  t.match(run.stdout, `${SECOND_LOOPBACK}:${port}`, 'the log names the address from HOST and PORT');
});

t.test('DATA_DIR defaults to ./data', async (t) => {
  const cwd = scratchDir(t);
  const server = await startVerdict(t, ['--store', 'embedded'], { env: { LOG_LEVEL: 'warn' }, cwd });
  t.ok(existsSync(join(cwd, 'data', 'verdict.db')), 'store in ./data');
  t.equal((await stop(server)).code, 0);
});

t.test('a start serving a policy directory leaves the repository it is run in as it was, and finds its registry again', async (t) => {
  const repository = scratchDir(t);
  t.teardown(() => rmSync(loadConfig(['--policies', repository], {}).dataDir, { recursive: true, force: true }));
  const registered = { uri: 'user:ada', attributes: { role: 'reader' } };
  const first = await startVerdict(t, ['--store', 'embedded', '--policies', '.'], { env: { LOG_LEVEL: 'warn' }, cwd: repository });
  const written = await request(`${first.url}/admin/fetchers/registry/entities`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(registered) });
  t.equal(written.statusCode, 200, await written.body.text());
  t.equal((await stop(first)).code, 0);
  t.notOk(existsSync(join(repository, 'data')), 'no ./data in the policy repository');
  const second = await startVerdict(t, ['--store', 'embedded', '--policies', '.'], { env: { LOG_LEVEL: 'warn' }, cwd: repository });
  const found = await request(`${second.url}/admin/fetchers/registry/entities/user:ada`);
  t.equal(found.statusCode, 200, 'the registry is where the last start left it');
  t.equal((await stop(second)).code, 0);
});
