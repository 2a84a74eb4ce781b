import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';

export const CLI = fileURLToPath(new URL('../../src/cli.js', import.meta.url));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

export interface CliServer {
  url: string;
  child: ChildProcess;
  /** Resolves when the process has gone, however it ended. */
  exited: Promise<void>;
}

/** `verdict start` as a child process on a free port, resolved once GET /health answers 200. */
export async function startCli(args: string[], timeoutMs = 30_000): Promise<CliServer> {
  const port = await freePort();
  const child = spawn(process.execPath, [CLI, 'start', '--port', String(port), '--log-level', 'warn', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`verdict exited with ${child.exitCode}: ${stderr}`);
    try {
      const response = await request(`${url}/health`);
      await response.body.dump();
      if (response.statusCode === 200) return { url, child, exited };
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`verdict did not answer at ${url}: ${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
