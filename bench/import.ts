/**
 * Bulk registration against one-by-one registration, in the same run, each on a fresh Verdict
 * (embedded store): `npm run build && node dist/bench/import.js`. One-by-one registers
 * IMPORT_ONE_BY_ONE entities (default 10,000) with sequential requests on one keep-alive
 * connection; the import runs `verdict import entities` on a file of IMPORT_ENTITIES (default
 * 100,000), timed from the command's start to its exit. BENCH_RUNS (default 3) runs; medians.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { freePort, waitForHealth } from './server.js';

const ENTITIES = Number(process.env.IMPORT_ENTITIES ?? 100_000);
const ONE_BY_ONE = Number(process.env.IMPORT_ONE_BY_ONE ?? 10_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));

const entity = (index: number) => ({
  uri: `user:${index}`,
  type: 'principal',
  attributes: { department: ['it', 'hr', 'sales', 'ops'][index % 4], level: index % 10, email: `user${index}@example.com` },
});

/** A Verdict on a fresh data directory for the length of `use`. */
async function withVerdict<T>(use: (port: number) => Promise<T>): Promise<T> {
  const dataDir = mkdtempSync(join(tmpdir(), 'verdict-bench-import-'));
  const port = await freePort();
  const child = spawn(process.execPath, [CLI, 'start', '--port', String(port), '--data-dir', dataDir, '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    await waitForHealth(`http://127.0.0.1:${port}`);
    return await use(port);
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function oneByOne(port: number): Promise<number> {
  const dispatcher = new Agent({ connections: 1 });
  const started = performance.now();
  for (let index = 0; index < ONE_BY_ONE; index++) {
    const response = await request(`http://127.0.0.1:${port}/admin/fetchers/registry/entities`, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(entity(index)),
    });
    await response.body.dump();
    if (response.statusCode !== 200) throw new Error(`registration answered ${response.statusCode}`);
  }
  const rate = ONE_BY_ONE / ((performance.now() - started) / 1000);
  await dispatcher.close();
  return rate;
}

async function imported(port: number, file: string): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, 'import', 'entities', file, '--port', String(port)], { stdio: ['ignore', 'ignore', 'inherit'] });
  const code = await new Promise((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`verdict import entities exited ${code}`);
  return ENTITIES / ((performance.now() - started) / 1000);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const directory = mkdtempSync(join(tmpdir(), 'verdict-bench-import-file-'));
  const file = join(directory, 'entities.jsonl');
  writeFileSync(file, Array.from({ length: ENTITIES }, (_, index) => `${JSON.stringify(entity(index))}\n`).join(''));
  const single: number[] = [];
  const bulk: number[] = [];
  try {
    for (let run = 1; run <= RUNS; run++) {
      single.push(await withVerdict(oneByOne));
      bulk.push(await withVerdict((port) => imported(port, file)));
      console.log(`run ${run}: one by one ${Math.round(single.at(-1)!)}/s, import ${Math.round(bulk.at(-1)!)}/s`);
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  console.log(`Entity registration, embedded store, medians of ${RUNS} runs:`);
  console.log(`  one by one (${ONE_BY_ONE} sequential POSTs): ${Math.round(median(single))} entities/s`);
  console.log(`  verdict import entities (${ENTITIES}, batches of 1000): ${Math.round(median(bulk))} entities/s (${(median(bulk) / median(single)).toFixed(1)}x)`);
}

await main();
