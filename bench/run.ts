/**
 * `npm run bench`: Verdict against a bare Fastify baseline, in one run, on loopback, with wrk.
 * Every figure is printed with its ratio to the baseline measured in the same run; each is the
 * median of BENCH_RUNS runs (default 3) of BENCH_SECONDS seconds (default 5). Results are saved
 * under bench/results/.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { EmbeddedStore } from '../src/store/embedded.js';
import { engineDecisionsPerSecond, enginePlansPerSecond, keyedPolicies } from './engine.js';
import { loadWithWrk, wrkAvailable, type LoadResult } from './wrk.js';
import { freePort, waitForHealth } from './server.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = 64;
const POLICIES = 10;
const REGISTRY_SIZE = 100_000;
const VERDICT_ARGS = (process.env.BENCH_VERDICT_ARGS ?? '').split(' ').filter(Boolean);
/** When set, a second Verdict with these flags runs beside the first, interleaved, as "Verdict+". */
const COMPARE_ARGS = process.env.BENCH_COMPARE_ARGS?.split(' ').filter(Boolean);
/** Only the HTTP scenarios whose name contains this text, and no engine figures (for focused work). */
const ONLY = process.env.BENCH_ONLY;

const compiledRoot = fileURLToPath(new URL('..', import.meta.url));
const repositoryRoot = join(compiledRoot, '..');

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const SEED_WRITER = { actor: 'bench', client: '', requestId: '', route: 'seed' };

function seed(dataDir: string): void {
  const store = new EmbeddedStore(dataDir);
  for (const policy of keyedPolicies(POLICIES)) void store.createPolicy(policy, SEED_WRITER);
  const now = new Date().toISOString();
  for (let index = 0; index < REGISTRY_SIZE; index++) {
    void store.createEntity({
      uri: `user:${index}`,
      type: 'principal',
      attributes: [
        { key: 'role', value: 'reader', updated_at: now, registered_at: now },
        { key: 'department', value: 'it', updated_at: now, registered_at: now },
      ],
      registered_at: now,
    }, SEED_WRITER);
  }
  void store.close();
}

async function startVerdict(args: string[]): Promise<{ url: string; child: ChildProcess; dataDir: string }> {
  // tmpfs when there is one: seeding 100k entities should not wait on 100k disk flushes.
  const dataDir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'verdict-bench-'));
  seed(dataDir);
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [join(compiledRoot, 'src/cli.js'), 'start', '--port', String(port), '--data-dir', dataDir, '--log-level', 'silent', ...args],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitForHealth(url);
  return { url, child, dataDir };
}

async function startBaseline(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [join(compiledRoot, 'bench/baseline-server.js')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve) => child.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())));
  return { url: `http://127.0.0.1:${port}`, child };
}

const attributeCheck = (index: number) =>
  JSON.stringify({
    principal: { attributes: { role: 'reader', department: 'it' } },
    resource: { attributes: { id: `doc-${index % POLICIES}`, kind: 'report' } },
    action: 'read',
  });
const uriCheck = (index: number) =>
  JSON.stringify({ principal: { uri: `user:${index}` }, resource: { attributes: { id: `doc-${index % POLICIES}` } }, action: 'read' });
const bulk = (size: number, offset: number) => `[${Array.from({ length: size }, (_, i) => attributeCheck(offset + i)).join(',')}]`;

interface Scenario {
  name: string;
  path: string;
  bodies: string[];
  /** Decisions per request. */
  items: number;
}

const scenarios: Scenario[] = [
  { name: 'check, attributes', path: '/check', bodies: Array.from({ length: 100 }, (_, i) => attributeCheck(i)), items: 1 },
  {
    name: `check, principal uri from ${REGISTRY_SIZE / 1000}k registry`,
    path: '/check',
    bodies: Array.from({ length: REGISTRY_SIZE }, (_, i) => uriCheck((i * 7919) % REGISTRY_SIZE)),
    items: 1,
  },
  { name: 'bulk, 100 items', path: '/check/bulk', bodies: Array.from({ length: 20 }, (_, i) => bulk(100, i)), items: 100 },
  { name: 'bulk, 1000 items', path: '/check/bulk', bodies: Array.from({ length: 5 }, (_, i) => bulk(1000, i)), items: 1000 },
];

async function expectAllowed(url: string, scenario: Scenario): Promise<void> {
  const response = await request(url + scenario.path, {
    method: 'POST',
    body: scenario.bodies[0],
    headers: { 'content-type': 'application/json' },
  });
  const answer = (await response.body.json()) as { allowed: boolean } | { allowed: boolean }[];
  const allowed = [answer].flat().every((decision) => decision.allowed);
  if (response.statusCode !== 200 || !allowed) throw new Error(`${scenario.name}: Verdict answered ${JSON.stringify(answer).slice(0, 200)}`);
}

function rssMegabytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((text) => text.startsWith('VmRSS:'))!;
  return Number(line.replace(/\D+/g, '')) / 1024;
}

const ratio = (value: number, base: number) => `${(value / base).toFixed(2)}×`;
const thousands = (value: number) => `${(value / 1000).toFixed(1)}k`;

/** The engine alone at growing policy counts, printed as it goes, each with its ratio to 10 policies. */
function engineFigures(): Record<number, number> {
  const engine: Record<number, number> = {};
  for (const count of [10, 1_000, 10_000, 100_000]) {
    engine[count] = engineDecisionsPerSecond(count);
    console.log(
      `engine alone, ${String(count).padStart(6)} policies: ${(engine[count]! / 1e6).toFixed(2)}M decisions/s (${ratio(engine[count]!, engine[10]!)} of 10 policies)`,
    );
  }
  return engine;
}

/** Plans (with their MongoDB filter) per second, engine alone, each with its ratio to decisions per second at the same count. */
function planFigures(decisions: Record<number, number>): Record<number, number> {
  const plans: Record<number, number> = {};
  for (const count of [10, 10_000]) {
    plans[count] = enginePlansPerSecond(count);
    console.log(
      `plans, engine alone, ${String(count).padStart(6)} policies: ${thousands(plans[count]!)} plans/s, each naming ${count} documents (${ratio(plans[count]!, decisions[count]!)} of decisions/s)`,
    );
  }
  return plans;
}

async function main(): Promise<void> {
  if (!(await wrkAvailable())) {
    console.error('bench: wrk is not installed; install Debian\'s package: apt-get install wrk');
    process.exit(2);
  }
  console.log(`Verdict benchmark: ${RUNS} runs × ${SECONDS}s per figure, ${CONNECTIONS} connections, medians; Verdict args: ${VERDICT_ARGS.join(' ') || '(defaults)'}`);
  if (COMPARE_ARGS !== undefined) console.log(`Verdict+ (compared in the same runs) args: ${[...VERDICT_ARGS, ...COMPARE_ARGS].join(' ')}`);
  const baseline = await startBaseline();
  const verdict = await startVerdict(VERDICT_ARGS);
  const compared = COMPARE_ARGS === undefined ? undefined : await startVerdict([...VERDICT_ARGS, ...COMPARE_ARGS]);
  const results: Record<string, unknown>[] = [];
  try {
    const chosen = scenarios.filter((scenario) => ONLY === undefined || scenario.name.includes(ONLY));
    for (const scenario of chosen) await expectAllowed(verdict.url, scenario);
    for (const scenario of chosen) {
      const base: LoadResult[] = [];
      const ours: LoadResult[] = [];
      const theirs: LoadResult[] = [];
      for (let run = 0; run < RUNS; run++) {
        base.push(await loadWithWrk(baseline.url + scenario.path, scenario.bodies, SECONDS, CONNECTIONS));
        ours.push(await loadWithWrk(verdict.url + scenario.path, scenario.bodies, SECONDS, CONNECTIONS));
        if (compared !== undefined) theirs.push(await loadWithWrk(compared.url + scenario.path, scenario.bodies, SECONDS, CONNECTIONS));
      }
      const figure = (runs: LoadResult[]) => ({
        requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
        decisionsPerSecond: median(runs.map((r) => r.requestsPerSecond)) * scenario.items,
        p99Millis: median(runs.map((r) => r.p99Millis)),
        errors: runs.reduce((sum, r) => sum + r.errors, 0),
      });
      const baseFigure = figure(base);
      const ourFigure = figure(ours);
      const comparedFigure = compared === undefined ? undefined : figure(theirs);
      results.push({ scenario: scenario.name, baseline: baseFigure, verdict: ourFigure, compared: comparedFigure });
      const versus = (label: string, ours: ReturnType<typeof figure>) =>
        `${label} ${thousands(ours.decisionsPerSecond).padStart(8)} dec/s (${ratio(ours.decisionsPerSecond, baseFigure.decisionsPerSecond)}) ` +
        `p99 ${ours.p99Millis.toFixed(1)}ms (${ratio(ours.p99Millis, baseFigure.p99Millis)}) errors ${ours.errors}`;
      console.log(
        `${scenario.name.padEnd(44)} baseline ${thousands(baseFigure.decisionsPerSecond).padStart(8)} dec/s p99 ${baseFigure.p99Millis.toFixed(1)}ms | ` +
          versus('Verdict', ourFigure) +
          (comparedFigure === undefined ? '' : ` | ${versus('Verdict+', comparedFigure)}`),
      );
    }
    const rss = rssMegabytes(verdict.child.pid!);
    console.log(`Verdict RSS after the run: ${rss.toFixed(0)} MB`);
    const engine = ONLY === undefined ? engineFigures() : {};
    const plans = ONLY === undefined ? planFigures(engine) : {};
    const resultsDir = join(repositoryRoot, 'bench/results');
    mkdirSync(resultsDir, { recursive: true });
    const file = join(resultsDir, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, JSON.stringify({ runs: RUNS, seconds: SECONDS, connections: CONNECTIONS, args: VERDICT_ARGS, compareArgs: COMPARE_ARGS, http: results, engine, plans, rssMegabytes: rss }, null, 2));
    console.log(`saved ${file}`);
  } finally {
    baseline.child.kill();
    for (const server of [verdict, compared]) {
      if (server === undefined) continue;
      server.child.kill();
      rmSync(server.dataDir, { recursive: true, force: true });
    }
  }
}

await main();
