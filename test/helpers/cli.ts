import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'undici';

export { CLI, freePort } from './child.js';
import { CLI, freePort } from './child.js';

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
