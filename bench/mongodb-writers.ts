/**
 * What admin writes cost when two Verdict processes make them at once on one MongoDB: every write
 * advances the same counter documents (`audit-sequence`; `entity-position` for registrations,
 * `policy-revision` for policies), so transactions that overlap conflict and take turns (see
 * docs/internals.md). Needs a replica set:
 * `MONGODB_URI='mongodb://host:27017/?replicaSet=rs0' npm run build && node dist/bench/mongodb-writers.js`.
 *
 * Each run, on fresh databases: `verdict import entities` of MONGODB_BENCH_ENTITIES (default
 * 20,000, batches of 1000) through one process, then as many in two imports through two processes
 * at once; then MONGODB_BENCH_POLICIES (default 200) policy creations one by one through one process,
 * then as many split over two processes at once. BENCH_RUNS (default 3) runs; medians.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { startVerdict, stop, type RunningServer } from './server.js';
import { policyWritesPerSecond } from './policy-writes.js';

const URI = process.env.MONGODB_URI;
const ENTITIES = Number(process.env.MONGODB_BENCH_ENTITIES ?? 20_000);
const POLICIES = Number(process.env.MONGODB_BENCH_POLICIES ?? 200);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** `count` entities as an import file, their uris starting with `prefix`. */
function entityFile(directory: string, prefix: string, count: number): string {
  const file = join(directory, `${prefix}.jsonl`);
  const line = (index: number) => JSON.stringify({ uri: `user:${prefix}-${index}`, type: 'principal', attributes: { level: index % 10, team: ['it', 'hr'][index % 2] } });
  writeFileSync(file, Array.from({ length: count }, (_, index) => `${line(index)}\n`).join(''));
  return file;
}

function imported(server: RunningServer, file: string): Promise<void> {
  const child = spawn(process.execPath, [CLI, 'import', 'entities', file, '--port', new URL(server.url).port], { stdio: ['ignore', 'ignore', 'inherit'] });
  return new Promise((resolve, reject) => child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`verdict import entities exited ${code}`)))));
}

/** `processes` Verdict processes on one fresh database for the length of `use`, which is given them. */
async function onFreshDatabase<T>(uri: string, processes: number, use: (servers: RunningServer[]) => Promise<T>): Promise<T> {
  const database = `verdict-bench-${process.pid}-${Date.now()}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'verdict-bench-mongodb-'));
  const servers: RunningServer[] = [];
  try {
    for (let index = 0; index < processes; index++) {
      servers.push(await startVerdict(dataDir, ['--store', 'mongodb', '--mongodb-uri', uri, '--mongodb-db', database, '--workers', '1']));
    }
    return await use(servers);
  } finally {
    await Promise.all(servers.map(stop));
    const client = await MongoClient.connect(uri);
    await client.db(database).dropDatabase();
    await client.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Entities per second, all imports together, for imports of `files` each through its own process, all at once. */
async function importRate(uri: string, files: string[]): Promise<number> {
  return onFreshDatabase(uri, files.length, async (servers) => {
    const started = performance.now();
    await Promise.all(files.map((file, index) => imported(servers[index]!, file)));
    return ENTITIES / ((performance.now() - started) / 1000);
  });
}

/** Policy writes per second, all processes together, `POLICIES` split over `processes` writing at once. */
async function policyRate(uri: string, processes: number): Promise<number> {
  return onFreshDatabase(uri, processes, async (servers) => {
    const started = performance.now();
    await Promise.all(servers.map((server, index) => policyWritesPerSecond(server.url, POLICIES / processes, `writer-${index}`)));
    return POLICIES / ((performance.now() - started) / 1000);
  });
}

async function main(uri: string): Promise<void> {
  const directory = mkdtempSync(join(tmpdir(), 'verdict-bench-mongodb-files-'));
  const whole = [entityFile(directory, 'one', ENTITIES)];
  const halves = [entityFile(directory, 'a', ENTITIES / 2), entityFile(directory, 'b', ENTITIES / 2)];
  const figures = { oneImport: [] as number[], twoImports: [] as number[], oneWriter: [] as number[], twoWriters: [] as number[] };
  try {
    for (let run = 1; run <= RUNS; run++) {
      figures.oneImport.push(await importRate(uri, whole));
      figures.twoImports.push(await importRate(uri, halves));
      figures.oneWriter.push(await policyRate(uri, 1));
      figures.twoWriters.push(await policyRate(uri, 2));
      const last = (values: number[]) => Math.round(values.at(-1)!);
      console.log(
        `run ${run}: import ${last(figures.oneImport)}/s alone, ${last(figures.twoImports)}/s from two processes; ` +
          `policy writes ${last(figures.oneWriter)}/s alone, ${last(figures.twoWriters)}/s from two processes`,
      );
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  const rate = (values: number[]) => Math.round(median(values));
  console.log(`Admin writes on one MongoDB, medians of ${RUNS} runs (all processes together):`);
  console.log(`  verdict import entities, ${ENTITIES} in batches of 1000: one process ${rate(figures.oneImport)}/s, two at once ${rate(figures.twoImports)}/s`);
  console.log(`  policy creations one by one, ${POLICIES}: one process ${rate(figures.oneWriter)}/s, two at once ${rate(figures.twoWriters)}/s`);
  // Two writers contend for the audit-sequence counter: together they should not write much less than one alone.
  const contended = median(figures.twoWriters) / median(figures.oneWriter);
  console.log(`  two policy writers against one: ${contended.toFixed(2)}x (the shared counter's cost; MIN_CONTENDED_RATIO=${MIN_CONTENDED_RATIO ?? 'unset'})`);
  if (MIN_CONTENDED_RATIO !== undefined && contended < MIN_CONTENDED_RATIO) {
    console.error(`two writers at once wrote ${contended.toFixed(2)}x what one did, below MIN_CONTENDED_RATIO ${MIN_CONTENDED_RATIO}`);
    process.exitCode = 1;
  }
}

/** When set, the run fails (exit 1) when two policy writers at once reach less than this share of one writer's rate. */
const MIN_CONTENDED_RATIO = process.env.MIN_CONTENDED_RATIO === undefined ? undefined : Number(process.env.MIN_CONTENDED_RATIO);

if (!URI) {
  console.error('MONGODB_URI is not set: this benchmark needs a MongoDB replica set (see the comment at the top of bench/mongodb-writers.ts)');
  process.exit(2);
}
await main(URI);
