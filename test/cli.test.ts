import t, { type Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { ConfigError, DEFAULT_CONFIG, loadConfig } from '../src/config.js';
import { CLI, freePort } from './helpers/child.js';

const PACKAGE_JSON = new URL('../../package.json', import.meta.url);

// Some thirty child processes, each a whole Node start: minutes on a busy machine, past tap's 120 s per file.
t.setTimeout(600_000);
const CONFIG_VARIABLES = ['HOST', 'PORT', 'DATA_DIR', 'ADMIN_AUTHN_REQUIRED', 'ADMIN_API_KEY', 'BULK_CHECK_MAX_REQUESTS', 'REGISTRY_ENABLED', 'LOG_LEVEL', 'STORE', 'MONGODB_URI', 'MONGODB_DB', 'PROCESSES', 'WORKERS', 'EVALUATION', 'ENTITY_CACHE_SIZE'];

/**
 * The parent's environment without any of Verdict's variables, plus `extra`; without NODE_OPTIONS too,
 * through which tap would load its process tracker into every child (seconds each on a busy machine).
 */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of [...CONFIG_VARIABLES, 'NODE_OPTIONS']) delete env[name];
  return { ...env, ...extra };
}

function scratchDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-cli-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI to completion (killed after `timeoutMs`, a guard against a hang). */
function runCli(args: string[], env: NodeJS.ProcessEnv, cwd: string, timeoutMs = 60_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}


/** Starts `verdict start` and resolves once GET /health answers 200 at `url` (however long a busy machine takes; the test's timeout guards a hang). */
async function startCli(
  t: Test,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  url: string,
): Promise<{ child: ChildProcess; stop: () => Promise<Run> }> {
  const child = spawn(process.execPath, [CLI, 'start', ...args], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
  const closed = new Promise<Run>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  for (;;) {
    if (child.exitCode !== null) throw new Error(`verdict exited with ${child.exitCode}: ${stderr}`);
    try {
      const response = await request(`${url}/health`);
      await response.body.text();
      if (response.statusCode === 200) break;
    } catch {
      // not yet listening
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    child,
    stop: async () => {
      child.kill('SIGTERM');
      return closed;
    },
  };
}

t.test('version prints the package.json version', async (t) => {
  const cwd = scratchDir(t);
  const { version } = JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string };
  for (const command of ['version', '--version']) {
    const run = await runCli([command], cleanEnv(), cwd);
    t.equal(run.code, 0, `${command}: exit 0`);
    t.equal(run.stdout, `${version}\n`, `${command}: prints ${version}`);
    t.equal(run.stderr, '');
  }
});

t.test('--help lists the flags of start and their variables', async (t) => {
  const cwd = scratchDir(t);
  for (const command of ['--help', 'help', '-h']) {
    const run = await runCli([command], cleanEnv(), cwd);
    t.equal(run.code, 0, `${command}: exit 0`);
    t.equal(run.stderr, '');
    for (const word of [
      'start',
      'version',
      '--host',
      '--port',
      '--data-dir',
      '--[no-]admin-authn-required',
      '--bulk-check-max-requests',
      'HOST',
      'PORT',
      'DATA_DIR',
      'ADMIN_AUTHN_REQUIRED',
      'ADMIN_API_KEY',
      'BULK_CHECK_MAX_REQUESTS',
      '127.0.0.1',
      '8421',
      './data',
      '1000',
    ]) {
      t.ok(run.stdout.includes(word), `${command}: help mentions ${word}`);
    }
    // each flag and its variable on one line
    for (const [flag, variable] of [
      ['--host', 'HOST'],
      ['--port', 'PORT'],
      ['--data-dir', 'DATA_DIR'],
      ['--[no-]admin-authn-required', 'ADMIN_AUTHN_REQUIRED'],
      ['--bulk-check-max-requests', 'BULK_CHECK_MAX_REQUESTS'],
    ]) {
      const line = run.stdout.split('\n').find((l) => l.trim().startsWith(`${flag} `));
      t.ok(line !== undefined && new RegExp(`\\b${variable}\\b`).test(line), `${flag} is listed with ${variable}`);
    }
  }
});

t.test('bad configuration stops with exit code 2 and one line on stderr', async (t) => {
  const cwd = scratchDir(t);
  const dataDir = join(cwd, 'data-should-not-be-created');
  const cases: [string, string[], Record<string, string>, RegExp][] = [
    ['--port abc', ['--port', 'abc'], {}, /port/i],
    ['--port 70000', ['--port', '70000'], {}, /port/i],
    ['--port -1', ['--port=-1'], {}, /port/i],
    ['--port 1.5', ['--port', '1.5'], {}, /port/i],
    ['PORT=abc', [], { PORT: 'abc' }, /PORT/],
    ['unknown flag', ['--no-such-flag', 'x'], {}, /no-such-flag/],
    ['stray positional', ['extra'], {}, /extra/],
    ['auth required, empty key', [], { ADMIN_AUTHN_REQUIRED: 'true', ADMIN_API_KEY: '' }, /ADMIN_API_KEY/],
    ['auth required, no key', [], { ADMIN_AUTHN_REQUIRED: 'true' }, /ADMIN_API_KEY/],
    ['auth required by flag, no key', ['--admin-authn-required', 'true'], {}, /ADMIN_API_KEY/],
    ['auth required, blank key', [], { ADMIN_AUTHN_REQUIRED: 'true', ADMIN_API_KEY: '   ' }, /ADMIN_API_KEY/],
    ['ADMIN_AUTHN_REQUIRED=maybe', [], { ADMIN_AUTHN_REQUIRED: 'maybe' }, /ADMIN_AUTHN_REQUIRED/],
    ['BULK_CHECK_MAX_REQUESTS=0', [], { BULK_CHECK_MAX_REQUESTS: '0' }, /BULK_CHECK_MAX_REQUESTS/],
    ['BULK_CHECK_MAX_REQUESTS=abc', [], { BULK_CHECK_MAX_REQUESTS: 'abc' }, /BULK_CHECK_MAX_REQUESTS/],
    ['--bulk-check-max-requests -5', ['--bulk-check-max-requests=-5'], {}, /bulk-check-max-requests/],
    ['empty --data-dir', ['--data-dir', ''], {}, /data-dir/],
  ];
  const runs = await Promise.all(cases.map(([, args, env]) => runCli(['start', '--data-dir', dataDir, ...args], cleanEnv(env), cwd)));
  for (const [index, [label, , , names]] of cases.entries()) {
    const run = runs[index]!;
    t.equal(run.code, 2, `${label}: exit code 2`);
    const lines = run.stderr.split('\n').filter((line) => line !== '');
    t.equal(lines.length, 1, `${label}: one line on stderr (${JSON.stringify(run.stderr)})`);
    t.ok(run.stderr.endsWith('\n'), `${label}: the line ends`);
    t.match(lines[0] ?? '', /^verdict: /, `${label}: starts with "verdict: "`);
    t.match(lines[0] ?? '', names, `${label}: names what to fix`);
    t.notMatch(run.stderr, /\n\s+at /, `${label}: no stack trace`);
    t.equal(run.stdout, '', `${label}: nothing on stdout`);
  }
  t.notOk(existsSync(dataDir), 'no data directory was created by a refused start');
  t.notOk(existsSync(join(cwd, 'data')), 'nor ./data');

  const unknownCommand = await runCli(['serve'], cleanEnv(), cwd);
  t.equal(unknownCommand.code, 2, 'unknown command: exit code 2');
  t.match(unknownCommand.stderr, /^verdict: .*serve.*\n$/);
});

t.test('flags win over variables', async (t) => {
  const cwd = scratchDir(t);
  const port = await freePort();
  const dataDir = join(cwd, 'from-flag');
  const server = await startCli(
    t,
    ['--port', String(port), '--data-dir', dataDir, '--log-level', 'warn'],
    cleanEnv({ PORT: '1', DATA_DIR: join(cwd, 'from-variable'), LOG_LEVEL: 'nonsense' }),
    cwd,
    `http://127.0.0.1:${port}`,
  );
  t.pass(`serving on the flag's port ${port}, not PORT=1`);
  const check = await request(`http://127.0.0.1:${port}/check`, {
    method: 'POST',
    body: JSON.stringify({ principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } } }),
    headers: { 'content-type': 'application/json' },
  });
  t.same(await check.body.json(), { allowed: false, reason: 'Action denied by default because there are no policies' });
  t.ok(existsSync(join(dataDir, 'verdict.db')), 'store in --data-dir');
  t.notOk(existsSync(join(cwd, 'from-variable')), 'DATA_DIR ignored');
  const run = await server.stop();
  t.equal(run.code, 0);
  t.equal(run.stderr, '');
});

t.test('a flag overriding a bad variable: --bulk-check-max-requests wins over BULK_CHECK_MAX_REQUESTS=0', async (t) => {
  const cwd = scratchDir(t);
  const port = await freePort();
  const server = await startCli(
    t,
    ['--port', String(port), '--bulk-check-max-requests', '2', '--data-dir', join(cwd, 'd')],
    cleanEnv({ BULK_CHECK_MAX_REQUESTS: '0', LOG_LEVEL: 'warn' }),
    cwd,
    `http://127.0.0.1:${port}`,
  );
  const item = { principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } } };
  const bulk = await request(`http://127.0.0.1:${port}/check/bulk`, {
    method: 'POST',
    body: JSON.stringify([item, item, item]),
    headers: { 'content-type': 'application/json' },
  });
  t.equal(bulk.statusCode, 400);
  t.same(await bulk.body.json(), { detail: 'Too many requests. Maximum allowed: 2' });
  t.equal((await server.stop()).code, 0);
});

t.test('HOST, PORT and DATA_DIR variables work', async (t) => {
  const cwd = scratchDir(t);
  const host = '127.0.0.2';
  let port: number;
  try {
    port = await freePort(host);
  } catch {
    t.comment(`${host} is not available here; skipped`);
    return;
  }
  const dataDir = join(cwd, 'from-variable');
  const server = await startCli(t, [], cleanEnv({ HOST: host, PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: 'info' }), cwd, `http://${host}:${port}`);
  t.ok(existsSync(join(dataDir, 'verdict.db')), 'store in DATA_DIR');
  t.notOk(existsSync(join(cwd, 'data')), 'not in ./data');
  const run = await server.stop();
  t.equal(run.code, 0);
  t.match(run.stdout, `${host}:${port}`, 'the log names the address from HOST and PORT');
});

t.test('DATA_DIR defaults to ./data', async (t) => {
  const cwd = scratchDir(t);
  const port = await freePort();
  const server = await startCli(t, ['--port', String(port)], cleanEnv({ LOG_LEVEL: 'warn' }), cwd, `http://127.0.0.1:${port}`);
  t.ok(existsSync(join(cwd, 'data', 'verdict.db')), 'store in ./data');
  t.equal((await server.stop()).code, 0);
});

t.test('loadConfig', async (t) => {
  t.strictSame(loadConfig([], {}), DEFAULT_CONFIG, 'defaults');
  t.equal(DEFAULT_CONFIG.host, '127.0.0.1');
  t.equal(DEFAULT_CONFIG.port, 8421);
  t.equal(DEFAULT_CONFIG.dataDir, './data');
  t.equal(DEFAULT_CONFIG.bulkCheckMaxRequests, 1000);
  t.equal(DEFAULT_CONFIG.registryEnabled, true);
  t.equal(DEFAULT_CONFIG.adminAuthRequired, false);

  t.strictSame(
    loadConfig([], { HOST: '0.0.0.0', PORT: '9000', DATA_DIR: '/var/lib/verdict' }),
    { ...DEFAULT_CONFIG, host: '0.0.0.0', port: 9000, dataDir: '/var/lib/verdict' },
    'HOST, PORT, DATA_DIR',
  );
  t.strictSame(
    loadConfig(['--host', '::1', '--port', '9001', '--data-dir', 'here'], { HOST: '0.0.0.0', PORT: '1', DATA_DIR: 'there' }),
    { ...DEFAULT_CONFIG, host: '::1', port: 9001, dataDir: 'here' },
    'flags win over variables',
  );
  t.equal(loadConfig(['--port=0'], {}).port, 0, 'port 0 allowed');
  t.equal(loadConfig(['--port', '65535'], {}).port, 65535);
  t.equal(loadConfig([], { BULK_CHECK_MAX_REQUESTS: '5' }).bulkCheckMaxRequests, 5);
  t.equal(loadConfig(['--bulk-check-max-requests', '7'], { BULK_CHECK_MAX_REQUESTS: '5' }).bulkCheckMaxRequests, 7);
  t.equal(loadConfig(['--bulk-check-max-requests', '7'], { BULK_CHECK_MAX_REQUESTS: '0' }).bulkCheckMaxRequests, 7, 'a flag hides a bad variable');

  const auth = loadConfig([], { ADMIN_AUTHN_REQUIRED: 'true', ADMIN_API_KEY: 's3cret' });
  t.equal(auth.adminAuthRequired, true);
  t.equal(auth.adminApiKey, 's3cret');
  t.equal(loadConfig([], { ADMIN_AUTHN_REQUIRED: 'false', ADMIN_API_KEY: '' }).adminAuthRequired, false);
  t.equal(loadConfig([], { ADMIN_AUTHN_REQUIRED: 'TRUE', ADMIN_API_KEY: 'k' }).adminAuthRequired, true, 'case-insensitive true');
  t.equal(loadConfig(['--admin-authn-required', 'false'], { ADMIN_AUTHN_REQUIRED: 'true' }).adminAuthRequired, false, 'flag wins, no key needed');
  t.equal(loadConfig(['--registry', 'false'], {}).registryEnabled, false, 'registry can be switched off');
  t.equal(loadConfig([], { REGISTRY_ENABLED: 'false' }).registryEnabled, false);

  const refused: [string, string[], NodeJS.ProcessEnv, RegExp][] = [
    ['--port abc', ['--port', 'abc'], {}, /port/],
    ['--port 70000', ['--port', '70000'], {}, /port/],
    ['--port 65536', ['--port', '65536'], {}, /port/],
    ['--port -1', ['--port=-1'], {}, /port/],
    ['--port 80.5', ['--port', '80.5'], {}, /port/],
    ['--port empty', ['--port', ''], {}, /port/],
    ['PORT=abc', [], { PORT: 'abc' }, /PORT/],
    ['PORT=70000', [], { PORT: '70000' }, /PORT/],
    ['unknown flag', ['--nope', '1'], {}, /nope/],
    ['flag without value', ['--port'], {}, /port/],
    ['positional', ['stray'], {}, /stray/],
    ['auth, empty key', [], { ADMIN_AUTHN_REQUIRED: 'true', ADMIN_API_KEY: '' }, /ADMIN_API_KEY/],
    ['auth, no key', [], { ADMIN_AUTHN_REQUIRED: 'true' }, /ADMIN_API_KEY/],
    ['auth by flag, no key', ['--admin-authn-required', 'true'], {}, /ADMIN_API_KEY/],
    ['auth value invalid', [], { ADMIN_AUTHN_REQUIRED: 'sometimes' }, /ADMIN_AUTHN_REQUIRED/],
    ['BULK_CHECK_MAX_REQUESTS=0', [], { BULK_CHECK_MAX_REQUESTS: '0' }, /BULK_CHECK_MAX_REQUESTS/],
    ['BULK_CHECK_MAX_REQUESTS=-1', [], { BULK_CHECK_MAX_REQUESTS: '-1' }, /BULK_CHECK_MAX_REQUESTS/],
    ['BULK_CHECK_MAX_REQUESTS=x', [], { BULK_CHECK_MAX_REQUESTS: 'x' }, /BULK_CHECK_MAX_REQUESTS/],
    ['empty HOST', [], { HOST: '' }, /host|HOST/],
    ['empty DATA_DIR', [], { DATA_DIR: '' }, /data-dir|DATA_DIR/],
    ['bad log level', ['--log-level', 'loud'], {}, /log-level/],
  ];
  for (const [label, args, env, names] of refused) {
    try {
      loadConfig(args, env);
      t.fail(`${label} → should throw`);
    } catch (error) {
      t.ok(error instanceof ConfigError, `${label} → ConfigError`);
      t.match((error as Error).message, names, `${label}: the message names it`);
      t.notMatch((error as Error).message, /\n/, `${label}: one line`);
    }
  }
  // the key is never part of an error message
  try {
    loadConfig(['--port', 'x'], { ADMIN_AUTHN_REQUIRED: 'true', ADMIN_API_KEY: 'topsecret' });
    t.fail('should throw');
  } catch (error) {
    t.notMatch((error as Error).message, /topsecret/);
  }
});

t.test('the mongodb store needs a connection string', async (t) => {
  const run = await runCli(['start', '--store', 'mongodb'], cleanEnv(), scratchDir(t));
  t.equal(run.code, 2);
  t.equal(run.stderr.trim(), 'verdict: the mongodb store needs a connection string: set --mongodb-uri or MONGODB_URI');
});

t.test('--processes 2 serves one port from two processes that stay in step', async (t) => {
  const cwd = scratchDir(t);
  const port = await freePort();
  const child = spawn(process.execPath, [CLI, 'start', '--port', String(port), '--processes', '2', '--workers', '1'], {
    env: cleanEnv({ LOG_LEVEL: 'warn' }),
    cwd,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  t.teardown(() => child.kill('SIGKILL'));
  const url = `http://127.0.0.1:${port}`;
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      if ((await request(`${url}/health`)).statusCode === 200) break;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const created = await request(`${url}/admin/policies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'p', rules: [] }),
  });
  t.equal(created.statusCode, 200);
  await created.body.dump();
  // The cluster hands new connections to its processes in turn: twenty answers in a row at the new
  // revision, each on a fresh connection, come from both processes.
  let inARow = 0;
  for (let attempt = 0; attempt < 500 && inARow < 20; attempt++) {
    const health = await request(`${url}/health`, { reset: true });
    const { revision } = (await health.body.json()) as { revision: number };
    inARow = revision === 1 ? inARow + 1 : 0;
    if (inARow === 0) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  t.equal(inARow, 20, 'every process serves the new revision');
  child.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM stops the supervisor and its processes cleanly');
});
