// The worker threads a pod gets, and the memory they take, under bulk load (npm run bench:pod-threads):
// Verdict started inside a cgroup with the CPU quota of one core, as `--workers 16 --evaluation pool`
// with no memory limit, the same within a 256 MiB limit, and `--workers auto`; each then given 8 s of
// bulk-100 at 64 connections from this process. Printed for each: the worker threads it ran, its peak RSS,
// and bulks answered a second. Needs a cgroup it can make (as root); says so where it cannot.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { Pool, request } from 'undici';
import { podGroup, type PodLimits } from './cgroups.js';
import { benchDirectory } from './seed.js';
import { freePort, waitForHealth } from './server.js';
import { rssMegabytes } from './process-stats.js';

const CLI = new URL('../src/cli.js', import.meta.url).pathname;
const SECONDS = 8;
const CONNECTIONS = 64;
const MIB = 2 ** 20;

const CASES: { name: string; limits: PodLimits; args: string[] }[] = [
  { name: '--workers 16, one core, no memory limit', limits: { cpu: 1 }, args: ['--workers', '16', '--evaluation', 'pool'] },
  { name: '--workers 16, one core, 256 MiB', limits: { cpu: 1, memoryBytes: 256 * MIB }, args: ['--workers', '16', '--evaluation', 'pool'] },
  { name: '--workers auto, one core, 256 MiB', limits: { cpu: 1, memoryBytes: 256 * MIB }, args: ['--evaluation', 'pool'] },
];

const check = (index: number) => ({ principal: { attributes: { role: 'reader' } }, resource: { attributes: { id: `doc-${index % 100}` } }, action: 'read' });
const BULK = JSON.stringify(Array.from({ length: 100 }, (_, index) => check(index)));

async function measure(name: string, limits: PodLimits, args: string[]): Promise<void> {
  const group = podGroup(limits, `verdict-pod-threads-${process.pid}`);
  if (typeof group === 'string') {
    console.log(`${name}: not measured, no cgroup could be made here (${group})`);
    return;
  }
  const dataDir = benchDirectory();
  const port = await freePort();
  const [command, ...rest] = group.wrap([process.execPath, CLI, 'start', '--port', String(port), '--data-dir', dataDir, '--log-level', 'warn', ...args]);
  const child = spawn(command!, rest, { stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForHealth(url);
    const pool = new Pool(url, { connections: CONNECTIONS });
    let peak = rssMegabytes(child.pid!);
    const sampler = setInterval(() => (peak = Math.max(peak, child.exitCode === null ? rssMegabytes(child.pid!) : 0)), 50);
    const until = performance.now() + SECONDS * 1000;
    let answered = 0;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (performance.now() < until && child.exitCode === null) {
          const response = await pool.request({ method: 'POST', path: '/check/bulk', headers: { 'content-type': 'application/json' }, body: BULK });
          await response.body.dump();
          answered++;
        }
      }),
    );
    clearInterval(sampler);
    const metrics = await (await request(`${url}/metrics`)).body.text();
    const threads = /^verdict_worker_pool_threads (\d+)/m.exec(metrics)?.[1];
    console.log(`${name}: worker threads ${threads}, peak RSS ${peak.toFixed(0)} MiB, ${(answered / SECONDS).toFixed(0)} bulks a second`);
    await pool.close();
  } catch (error) {
    console.log(`${name}: failed (${(error as Error).message}; the server ${child.exitCode === null ? 'runs' : `exited: ${child.exitCode ?? child.signalCode}`})`);
  } finally {
    child.kill();
    await new Promise((resolve) => (child.exitCode === null && child.signalCode === null ? child.once('exit', resolve) : resolve(undefined)));
    group.remove();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

console.log(`Pod threads benchmark: ${SECONDS} s of bulk-100 at ${CONNECTIONS} connections each; load average ${loadavg()[0]!.toFixed(1)}`);
for (const { name, limits, args } of CASES) await measure(name, limits, args);
