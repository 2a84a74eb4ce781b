import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { cpuSeconds } from './process-stats.js';

const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const BASELINE = fileURLToPath(new URL('baseline-server.js', import.meta.url));
/** How often start-up is polled: fine enough for figures in tenths of a second. */
const POLL_MILLIS = 10;

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function waitForHealth(url: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    try {
      const response = await request(`${url}/health`);
      await response.body.dump();
      if (response.statusCode === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not become healthy`);
}

/** A server process, listening at `url`. */
export interface RunningServer {
  url: string;
  child: ChildProcess;
}

/** How long a server took to start: wall-clock time, and the CPU time it used (which a busy machine inflates less). */
export interface StartCost {
  startMillis: number;
  startCpuMillis: number;
}

/** Stops a server (SIGTERM) and waits for it to exit. */
export async function stop(server: RunningServer): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  const exited = new Promise((resolve) => server.child.once('exit', resolve));
  server.child.kill('SIGTERM');
  await exited;
}

/** The line Verdict logs (at level info) once it serves its app. */
const READY_LOG_MESSAGE = 'Verdict is ready';

/** Resolves when `child` prints a line containing `text` on stdout; the rest of its output is read and dropped. */
function lineContaining(child: ChildProcess, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen = (seen + chunk.toString()).slice(-4 * text.length);
      if (!seen.includes(text)) return;
      child.off('exit', onExit);
      resolve();
    };
    const onExit = (code: number | null) => reject(new Error(`the server exited with ${code} before printing '${text}'`));
    child.stdout!.on('data', onData);
    child.once('exit', onExit);
  });
}

/** Spawns `command`, or the command line `wrap` makes of it (one that runs it in a cgroup, say). */
function spawnWrapped(command: string[], wrap: ((command: string[]) => string[]) | undefined, options: SpawnOptions): ChildProcess {
  const [program, ...programArgs] = wrap?.(command) ?? command;
  return spawn(program!, programArgs, options);
}

/**
 * Starts `verdict start` on `dataDir` with `args` and resolves once GET /ready has answered 200
 * `readyAnswers` times in a row, each on a new connection (with `--processes N`, ask for 2N so
 * that every process is seen ready), with the milliseconds from spawn to the first 200. `cli` runs
 * another build's `dist/src/cli.js` instead of this one's, `node` another Node (whose ABI that
 * build's native modules must match); `wrap` turns the command line into another that runs it (in a
 * cgroup, say). With `pollOnceLoggedReady`, Verdict logs
 * at level info and polling begins when it logs that it is ready: polls answered while it starts
 * (every 10 ms) would cost it CPU inside the very time being measured, which bare Fastify, not
 * listening until it is built, does not pay.
 */
export async function startVerdict(
  dataDir: string,
  args: string[],
  options: {
    readyAnswers?: number;
    nodeOptions?: string[];
    cli?: string;
    node?: string;
    env?: NodeJS.ProcessEnv;
    pollOnceLoggedReady?: boolean;
    wrap?: (command: string[]) => string[];
  } = {},
): Promise<RunningServer & StartCost> {
  const port = await freePort();
  const logLevel = options.pollOnceLoggedReady === true ? 'info' : 'silent';
  const started = performance.now();
  const command = [options.node ?? process.execPath, ...(options.nodeOptions ?? []), options.cli ?? CLI, 'start', '--port', String(port), '--data-dir', dataDir, '--log-level', logLevel, ...args];
  const child = spawnWrapped(command, options.wrap, { stdio: ['ignore', options.pollOnceLoggedReady === true ? 'pipe' : 'ignore', 'inherit'], env: options.env ?? process.env });
  const url = `http://127.0.0.1:${port}`;
  if (options.pollOnceLoggedReady === true) await lineContaining(child, READY_LOG_MESSAGE);
  let startMillis: number | undefined;
  let startCpuMillis: number | undefined;
  const fresh = new Agent({ pipelining: 0 });
  try {
    for (let inARow = 0; inARow < (options.readyAnswers ?? 1); ) {
      if (child.exitCode !== null) throw new Error(`Verdict exited with ${child.exitCode} before it was ready`);
      let status = 0;
      try {
        const response = await request(`${url}/ready`, { dispatcher: fresh, reset: true });
        await response.body.dump();
        status = response.statusCode;
      } catch {
        // not listening yet
      }
      if (status === 200) {
        startMillis ??= performance.now() - started;
        startCpuMillis ??= cpuSeconds(child.pid!) * 1000;
        inARow++;
      } else {
        inARow = 0;
        await new Promise((resolve) => setTimeout(resolve, POLL_MILLIS));
      }
    }
  } finally {
    await fresh.close();
  }
  return { url, child, startMillis: startMillis!, startCpuMillis: startCpuMillis! };
}

/**
 * The bare Fastify baseline (see baseline-server.ts), with the milliseconds from spawn to its first
 * answer (asked for once it prints that it listens: one request, as Verdict's first /ready 200 is).
 */
export async function startBaseline(node = process.execPath, wrap?: (command: string[]) => string[]): Promise<RunningServer & StartCost> {
  const started = performance.now();
  const child = spawnWrapped([node, BASELINE], wrap, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve) => child.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())));
  const url = `http://127.0.0.1:${port}`;
  const fresh = new Agent({ pipelining: 0 });
  try {
    const response = await request(url, { dispatcher: fresh, reset: true });
    await response.body.dump();
  } finally {
    await fresh.close();
  }
  const startMillis = performance.now() - started;
  return { url, child, startMillis, startCpuMillis: cpuSeconds(child.pid!) * 1000 };
}
