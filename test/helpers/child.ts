import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';

export const CLI = fileURLToPath(new URL('../../src/cli.js', import.meta.url));

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface Child {
  process: ChildProcess;
  output(): { stdout: string; stderr: string };
  exited: Promise<Exit>;
}

/**
 * What a child starts with: nothing of the test's environment (no MONGODB_URI, STORE or any other
 * setting of Verdict's leaks in), only PATH and `extra`.
 */
export function childEnvironment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, ...extra };
}

/**
 * Runs the CLI with `args` in a clean environment plus `env`; killed at the end of the test if
 * still running. A `start` must name its store (`--store` or STORE), so that no test depends on a default.
 */
export function runVerdict(t: Test, args: string[], env: NodeJS.ProcessEnv = {}, cwd?: string): Child {
  const namesStore = args.some((arg) => /^--(store|mongodb-uri)\b/.test(arg)) || env.STORE !== undefined || env.MONGODB_URI !== undefined;
  if (args[0] === 'start' && !namesStore) {
    throw new Error(`name the store of a server a test starts: ${args.join(' ')}`);
  }
  return tracked(t, spawn(process.execPath, [CLI, ...args], { env: childEnvironment(env), cwd, stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** Children still running, killed should the test process exit first (one listener for them all). */
const running = new Set<() => void>();
process.once('exit', () => {
  for (const kill of running) kill();
});

/** A child process whose output is kept, killed at the end of the test if still running. */
export function tracked(t: Test, child: ChildProcess): Child {
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<Exit>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  t.teardown(kill);
  // A test file cut off by its timeout runs no teardown: its children must not outlive it.
  running.add(kill);
  void exited.then(() => running.delete(kill));
  return { process: child, output: () => ({ stdout, stderr }), exited };
}

export interface RunningVerdict extends Child {
  url: string;
}

/**
 * `verdict start` with `args` (which name the store), resolved once GET /health answers 200. Without
 * `url` it listens on a free loopback port; with one, `args` or `env` must say where.
 */
export async function startVerdict(t: Test, args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string; url?: string } = {}): Promise<RunningVerdict> {
  let url = options.url;
  if (url === undefined) {
    const port = await freePort();
    args = ['--port', String(port), ...args];
    url = `http://127.0.0.1:${port}`;
  }
  const child = runVerdict(t, ['start', ...args], options.env, options.cwd);
  await waitFor(url, '/health', 200, child);
  return { ...child, url };
}

/** Resolves once the child's standard output matches `pattern`, checked as output arrives; rejects if it ends first. */
export function outputMatches(child: Child, pattern: RegExp): Promise<void> {
  return new Promise((resolve, reject) => {
    const stdout = child.process.stdout!;
    const check = () => {
      if (!pattern.test(child.output().stdout)) return;
      stdout.off('data', check);
      resolve();
    };
    stdout.on('data', check);
    void child.exited.then(({ stdout: all }) => (pattern.test(all) ? resolve() : reject(new Error(`the output never matched ${pattern}: ${all}`))));
    check();
  });
}

export interface Answer {
  status: number;
  headers: NodeJS.Dict<string | string[]>;
  body: any;
}

/**
 * One request on a fresh connection (closed after it), over TCP (`http://host:port`) or a Unix socket
 * (`unix:/path`); with `idleTimeoutMs`, it fails when the connection stays silent that long.
 */
export function ask(address: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}, idleTimeoutMs?: number): Promise<Answer> {
  const target = address.startsWith('unix:')
    ? { socketPath: address.slice('unix:'.length) }
    : { host: new URL(address).hostname, port: Number(new URL(address).port) };
  const text = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        ...target,
        method,
        path,
        agent: false,
        // A write says it is JSON also with no body, as clients must while admin authentication is off.
        headers: text === undefined && (method === 'GET' || method === 'HEAD') ? headers : { 'content-type': 'application/json', ...headers },
      },
      (response) => {
        let raw = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (raw += chunk));
        response.on('end', () => {
          let parsed: unknown = raw;
          try {
            parsed = JSON.parse(raw);
          } catch {
            // not JSON
          }
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: parsed });
        });
        response.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    if (idleTimeoutMs !== undefined) outgoing.setTimeout(idleTimeoutMs, () => outgoing.destroy(new Error(`no answer within ${idleTimeoutMs} ms`)));
    outgoing.end(text);
  });
}

/**
 * Polls GET `path` until it answers `status` (connection errors count as not yet): for at most
 * `limit` ms, or, given the server's child process, for as long as it runs (failing with its stderr
 * when it exits first), so that a slow start on a busy machine is waited for.
 */
export async function waitFor(address: string, path: string, status: number, limit: number | Child): Promise<Answer> {
  const deadline = typeof limit === 'number' ? Date.now() + limit : Infinity;
  let exited = false;
  if (typeof limit !== 'number') void limit.exited.then(() => (exited = true));
  for (;;) {
    try {
      const answer = await ask(address, 'GET', path);
      if (answer.status === status) return answer;
    } catch {
      // not listening yet
    }
    if (exited) {
      const { stdout, stderr } = (limit as Child).output();
      throw new Error(`the server exited before ${address}${path} answered ${status}: ${stderr}${stdout}`);
    }
    if (Date.now() > deadline) throw new Error(`${address}${path} did not answer ${status} within ${limit as number} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Ports handed to children are drawn below the kernel's ephemeral range (32768 and up on Linux), so
 * that no server listening on port 0 and no outgoing connection in a parallel test file can take one
 * between the probe and the child's listen; draws are random so parallel files rarely collide.
 */
const CHILD_PORTS = { first: 20000, count: 12000 };

/** A TCP port nothing listens on right now, on `host`, outside the range the kernel assigns by itself. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (;;) {
    const port = CHILD_PORTS.first + Math.floor(Math.random() * CHILD_PORTS.count);
    if (await listensFreely(port, host)) return port;
  }
}

function listensFreely(port: number, host: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.on('error', (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' ? resolve(false) : reject(error)));
    probe.listen(port, host, () => probe.close(() => resolve(true)));
  });
}
