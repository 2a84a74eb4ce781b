import { spawn, type ChildProcess } from 'node:child_process';
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

/**
 * Starts `verdict start` on `dataDir` with `args` and resolves once GET /ready has answered 200
 * `readyAnswers` times in a row, each on a new connection (with `--processes N`, ask for 2N so
 * that every process is seen ready), with the milliseconds from spawn to the first 200. `cli` runs
 * another build's `dist/src/cli.js` instead of this one's.
 */
export async function startVerdict(
  dataDir: string,
  args: string[],
  options: { readyAnswers?: number; nodeOptions?: string[]; cli?: string } = {},
): Promise<RunningServer & StartCost> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [...(options.nodeOptions ?? []), options.cli ?? CLI, 'start', '--port', String(port), '--data-dir', dataDir, '--log-level', 'silent', ...args],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const url = `http://127.0.0.1:${port}`;
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

/** The bare Fastify baseline (see baseline-server.ts), with the milliseconds from spawn to listening. */
export async function startBaseline(): Promise<RunningServer & StartCost> {
  const started = performance.now();
  const child = spawn(process.execPath, [BASELINE], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve) => child.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())));
  const startMillis = performance.now() - started;
  return { url: `http://127.0.0.1:${port}`, child, startMillis, startCpuMillis: cpuSeconds(child.pid!) * 1000 };
}
