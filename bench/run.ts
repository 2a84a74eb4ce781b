/**
 * `npm run bench`: Verdict against a bare Fastify baseline, in one run, on loopback, with wrk. Every
 * throughput figure is the median of BENCH_RUNS runs (default 2) of BENCH_SECONDS seconds (default 5),
 * printed with its ratio to the baseline measured in the same runs, beside the server CPU time each
 * request cost (from the process's CPU time over the run, worker threads and child processes
 * included). Then start-up, memory and policy-write figures, and the engine alone. It ends with the
 * table of the figures the project tracks, and saves everything under bench/results/.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { engineDecisionsPerSecond, engineOperatorRates, enginePlansPerSecond, engineRelationRates, engineSchemaRates, engineShadowRates, proposedSetMillis } from './engine.js';
import { loadWithWrk, wrkAvailable, type LoadResult } from './wrk.js';
import { startBaseline, startVerdict, stop, type RunningServer, type StartCost } from './server.js';
import { benchDirectory, copyOf, seed } from './seed.js';
import { cpuSeconds, rssMegabytes } from './process-stats.js';
import { policyWritesPerSecond } from './policy-writes.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 2);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = 64;
/** Load before each scenario's measured runs, on every server. */
const WARM_UP_SECONDS = 2;
const POLICIES = 10;
const REGISTRY_SIZE = 100_000;
/** The policy set of the "loaded" start-up figure (with the registry above). */
const LOADED_POLICIES = 1_000;
/**
 * Policy writes per run at each set size: enough that the server's CPU time, which the kernel
 * counts in 10 ms ticks, is read to a few percent (a write costs about a millisecond).
 */
const WRITES = Number(process.env.BENCH_WRITES ?? 500);
const LARGE_POLICY_SET = 10_000;
/** Front processes of the `--processes N` figures; 1 leaves them out. */
const PROCESSES = Number(process.env.BENCH_PROCESSES ?? 2);
/**
 * Time a started server is left alone before its idle RSS is read: V8 gives back the heap a start
 * grew only after several seconds without work (about 20 s for Verdict).
 */
const IDLE_SETTLE_MILLIS = Number(process.env.BENCH_IDLE_SECONDS ?? 30) * 1000;
const VERDICT_ARGS = (process.env.BENCH_VERDICT_ARGS ?? '').split(' ').filter(Boolean);
/** When set, a second Verdict with these flags runs beside the first, interleaved, as "Verdict+". */
const COMPARE_ARGS = process.env.BENCH_COMPARE_ARGS?.split(' ').filter(Boolean);
/**
 * When set, "Verdict+" runs this other build's CLI (e.g. main's `dist/src/cli.js` in another
 * worktree), with the same arguments: a change measured against its base in the same runs.
 */
const COMPARE_CLI = process.env.BENCH_COMPARE_CLI;
/**
 * When set, "Verdict+" is given a shadow policy in place of `grant-0` (the same rules): every check
 * it answers is decided by the shadow set too, so Verdict+ minus Verdict is what a shadow costs.
 */
const COMPARE_SHADOW = process.env.BENCH_COMPARE_SHADOW !== undefined;
const COMPARING = COMPARE_ARGS !== undefined || COMPARE_CLI !== undefined || COMPARE_SHADOW;
/** The parts to run, comma-separated (default all): http, start, cache, writes, engine. */
const ALL_PARTS = ['http', 'start', 'cache', 'writes', 'engine'] as const;
const PARTS = new Set(process.env.BENCH_PARTS?.split(',').map((part) => part.trim()).filter(Boolean) ?? ALL_PARTS);
for (const part of PARTS) {
  if (!(ALL_PARTS as readonly string[]).includes(part)) throw new Error(`BENCH_PARTS: unknown part '${part}'; the parts are ${ALL_PARTS.join(', ')}`);
}
/** Only the HTTP scenarios whose name contains this text. */
const ONLY = process.env.BENCH_ONLY;
/**
 * When set, the single-process Verdict of the HTTP figures, and the one holding 10,000 policies of
 * the write figures, write a V8 CPU profile (node --cpu-prof) into this directory on exit.
 */
const CPU_PROFILE_DIR = process.env.BENCH_CPU_PROF;
const profiled = CPU_PROFILE_DIR === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', CPU_PROFILE_DIR];

const repositoryRoot = join(fileURLToPath(new URL('..', import.meta.url)), '..');
const execFileAsync = promisify(execFile);

/** The middle value; with an even count, the mean of the two middle ones. */
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle) ? (sorted[middle - 1]! + sorted[middle]!) / 2 : sorted[Math.floor(middle)]!;
};
const ratio = (value: number, base: number) => `${(value / base).toFixed(2)}×`;
const thousands = (value: number) => `${(value / 1000).toFixed(1)}k`;
const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis));

const attributeCheck = (index: number, action = 'read') =>
  JSON.stringify({
    principal: { attributes: { role: 'reader', department: 'it' } },
    resource: { attributes: { id: `doc-${index % POLICIES}`, kind: 'report' } },
    action,
  });
const uriCheck = (index: number) =>
  JSON.stringify({ principal: { uri: `user:${index}` }, resource: { attributes: { id: `doc-${index % POLICIES}` } }, action: 'read' });
const bulkOf = (check: (index: number) => string, size: number, offset: number) =>
  `[${Array.from({ length: size }, (_, i) => check(offset + i)).join(',')}]`;
/** The check an AuthZEN evaluation makes (uris `type:id`, properties as supplied attributes), asked of /check. */
const uriAndAttributeCheck = (index: number) =>
  JSON.stringify({
    principal: { uri: 'user:reader', attributes: { role: 'reader', department: 'it' } },
    resource: { uri: `doc:${index % POLICIES}`, attributes: { id: `doc-${index % POLICIES}`, kind: 'report' } },
    action: 'read',
  });
const authzenItem = (index: number) => ({ resource: { type: 'doc', id: String(index % POLICIES), properties: { id: `doc-${index % POLICIES}`, kind: 'report' } } });
const authzenDefaults = { subject: { type: 'user', id: 'reader', properties: { role: 'reader', department: 'it' } }, action: { name: 'read' } };
const authzenEvaluation = (index: number) => JSON.stringify({ ...authzenDefaults, ...authzenItem(index) });
const authzenEvaluations = (size: number, offset: number) =>
  JSON.stringify({ ...authzenDefaults, evaluations: Array.from({ length: size }, (_, i) => authzenItem(offset + i)) });

interface Scenario {
  name: string;
  path: string;
  bodies: string[];
  /** Decisions per request. */
  items: number;
  /** Every check is denied (by the default effect: no rule covers its action); otherwise every one is allowed. */
  denied?: boolean;
}

const URI_SCENARIO = `check, principal uri from ${REGISTRY_SIZE / 1000}k registry`;
const scenarios: Scenario[] = [
  { name: 'check, attributes', path: '/check', bodies: Array.from({ length: 100 }, (_, i) => attributeCheck(i)), items: 1 },
  { name: 'check, attributes, explained', path: '/check?explain=true', bodies: Array.from({ length: 100 }, (_, i) => attributeCheck(i)), items: 1 },
  // Denials cost a little more than allowed checks: the live view keeps the last ones.
  { name: 'check, attributes, denied', path: '/check', bodies: Array.from({ length: 100 }, (_, i) => attributeCheck(i, 'write')), items: 1, denied: true },
  { name: URI_SCENARIO, path: '/check', bodies: Array.from({ length: REGISTRY_SIZE }, (_, i) => uriCheck((i * 7919) % REGISTRY_SIZE)), items: 1 },
  { name: 'bulk, 100 items', path: '/check/bulk', bodies: Array.from({ length: 20 }, (_, i) => bulkOf(attributeCheck, 100, i)), items: 100 },
  { name: 'bulk, 1000 items', path: '/check/bulk', bodies: Array.from({ length: 5 }, (_, i) => bulkOf(attributeCheck, 1000, i)), items: 1000 },
  // AuthZEN beside the checks it makes: the same uris and attributes, asked of /check and of /access/v1.
  { name: 'check, uris', path: '/check', bodies: Array.from({ length: 100 }, (_, i) => uriAndAttributeCheck(i)), items: 1 },
  { name: 'authzen evaluation, uris', path: '/access/v1/evaluation', bodies: Array.from({ length: 100 }, (_, i) => authzenEvaluation(i)), items: 1 },
  { name: 'bulk, 100 items, uris', path: '/check/bulk', bodies: Array.from({ length: 20 }, (_, i) => bulkOf(uriAndAttributeCheck, 100, i)), items: 100 },
  { name: 'authzen evaluations, 100 items, uris', path: '/access/v1/evaluations', bodies: Array.from({ length: 20 }, (_, i) => authzenEvaluations(100, i)), items: 100 },
];

/** Writes a shadow in place of `grant-0`, with its rules: see COMPARE_SHADOW. */
async function writeShadowOfFirstPolicy(url: string): Promise<void> {
  const live = await request(`${url}/admin/policies/grant-0`);
  const policy = (await live.body.json()) as Record<string, unknown>;
  const { status, answer } = await post(`${url}/admin/policies`, JSON.stringify({ ...policy, name: 'grant-0-next', shadow: 'grant-0' }));
  if (status !== 200) throw new Error(`the shadow policy was refused: ${JSON.stringify(answer)}`);
}

async function post(url: string, body: string): Promise<{ status: number; answer: unknown }> {
  const response = await request(url, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  return { status: response.statusCode, answer: await response.body.json() };
}

async function expectOutcome(url: string, scenario: Scenario): Promise<void> {
  const { status, answer } = await post(url + scenario.path, scenario.bodies[0]!);
  // Verdict's answers say `allowed`, AuthZEN's `decision` (many of them under `evaluations`).
  type Answer = { allowed?: boolean; decision?: boolean; evaluations?: Answer[] };
  const decisions = [answer as Answer | Answer[]].flat().flatMap((one) => one.evaluations ?? [one]);
  const expected = decisions.every((decision) => (decision.allowed ?? decision.decision) === !(scenario.denied ?? false));
  if (status !== 200 || !expected) throw new Error(`${scenario.name}: Verdict answered ${JSON.stringify(answer).slice(0, 200)}`);
}

/**
 * Resolves once the server has used less than a tenth of a core for half a second (at most after a
 * minute): a server is ready before it has filled its entity cache, which it does beside the checks.
 */
async function untilIdle(server: RunningServer): Promise<void> {
  const windowMillis = 500;
  for (let waited = 0, cpu = cpuSeconds(server.child.pid!); waited < 60_000; waited += windowMillis) {
    await sleep(windowMillis);
    const now = cpuSeconds(server.child.pid!);
    if ((now - cpu) * 1000 < windowMillis / 10) return;
    cpu = now;
  }
}

/** Checks naming every registered entity once, in bulks of 1000, so that the entity cache holds them all. */
async function touchEveryEntity(url: string): Promise<void> {
  for (let offset = 0; offset < REGISTRY_SIZE; offset += 1000) {
    const { status } = await post(`${url}/check/bulk`, bulkOf(uriCheck, Math.min(1000, REGISTRY_SIZE - offset), offset));
    if (status !== 200) throw new Error(`a bulk of uri checks answered ${status}`);
  }
}

interface Measured extends LoadResult {
  cpuMicrosPerRequest: number;
}

async function measure(server: RunningServer, scenario: Scenario): Promise<Measured> {
  const cpuBefore = cpuSeconds(server.child.pid!);
  const load = await loadWithWrk(server.url + scenario.path, scenario.bodies, SECONDS, CONNECTIONS);
  const cpu = cpuSeconds(server.child.pid!) - cpuBefore;
  return { ...load, cpuMicrosPerRequest: (cpu * 1e6) / Math.max(1, load.requests) };
}

interface Figure {
  decisionsPerSecond: number;
  p99Millis: number;
  cpuMicrosPerRequest: number;
  errors: number;
}

const figureOf = (runs: Measured[], items: number): Figure => ({
  decisionsPerSecond: median(runs.map((run) => run.requestsPerSecond)) * items,
  p99Millis: median(runs.map((run) => run.p99Millis)),
  cpuMicrosPerRequest: median(runs.map((run) => run.cpuMicrosPerRequest)),
  errors: runs.reduce((sum, run) => sum + run.errors, 0),
});

/** Each scenario, run RUNS times on every server in turn; medians, with ratios to the first (the baseline). */
async function httpFigures(servers: { label: string; server: RunningServer }[]): Promise<Record<string, Record<string, Figure>>> {
  const chosen = scenarios.filter((scenario) => ONLY === undefined || scenario.name.includes(ONLY));
  for (const scenario of chosen) for (const { server } of servers.slice(1)) await expectOutcome(server.url, scenario);
  const figures: Record<string, Record<string, Figure>> = {};
  for (const scenario of chosen) {
    // Unmeasured: the JIT compiles each server's paths for this scenario first.
    for (const { server } of servers) await loadWithWrk(server.url + scenario.path, scenario.bodies, WARM_UP_SECONDS, CONNECTIONS);
    const runs = servers.map(() => [] as Measured[]);
    // Each run starts with another server: whichever goes second was measured faster (same build twice showed it).
    for (let run = 0; run < RUNS; run++) {
      for (let turn = 0; turn < servers.length; turn++) {
        const index = (run + turn) % servers.length;
        runs[index]!.push(await measure(servers[index]!.server, scenario));
      }
    }
    const byServer = Object.fromEntries(servers.map(({ label }, index) => [label, figureOf(runs[index]!, scenario.items)]));
    figures[scenario.name] = byServer;
    const base = byServer[servers[0]!.label]!;
    console.log(scenario.name);
    for (const { label } of servers) {
      const figure = byServer[label]!;
      const versus = figure === base ? (_: number, __: number) => '' : (value: number, of: number) => ` (${ratio(value, of)})`;
      console.log(
        `  ${label.padEnd(22)} ${thousands(figure.decisionsPerSecond).padStart(8)} dec/s${versus(figure.decisionsPerSecond, base.decisionsPerSecond).padEnd(9)}` +
          ` p99 ${figure.p99Millis.toFixed(1).padStart(6)} ms${versus(figure.p99Millis, base.p99Millis).padEnd(9)}` +
          ` CPU ${figure.cpuMicrosPerRequest.toFixed(0).padStart(6)} µs/request${versus(figure.cpuMicrosPerRequest, base.cpuMicrosPerRequest).padEnd(9)}` +
          ` errors ${figure.errors}`,
      );
    }
    const plus = servers.findIndex(({ label }) => label === 'Verdict+');
    if (plus !== -1) console.log(`  ${pairedCpuDifference(runs[plus]!, runs[1]!)}`);
  }
  return figures;
}

/**
 * Verdict+'s CPU per request minus Verdict's, as the median of the differences between runs measured
 * one after the other (the machine's load moves both of a pair alike), with each difference: whether
 * two servers differ run after run, or only by the noise. Two processes of the same build can differ
 * for as long as they run (BENCH_COMPARE_CLI set to this build shows how much; see docs/development.md).
 */
function pairedCpuDifference(plus: Measured[], verdict: Measured[]): string {
  const differences = plus.map((run, index) => run.cpuMicrosPerRequest - verdict[index]!.cpuMicrosPerRequest);
  const sign = (value: number) => `${value > 0 ? '+' : ''}${value.toFixed(1)}`;
  return `Verdict+ minus Verdict, paired runs: CPU ${sign(median(differences))} µs/request (median of ${differences.length}: ${differences.map(sign).join(' ')})`;
}

/** The AuthZEN scenarios beside the /check scenarios asking the same, compared by CPU per request. */
const SAME_ASKED: [authzen: string, check: string][] = [
  ['authzen evaluation, uris', 'check, uris'],
  ['authzen evaluations, 100 items, uris', 'bulk, 100 items, uris'],
];
/** Rounds of the interleaved comparisons: each one run of either scenario, one after the other. */
const PAIRED_ROUNDS = Number(process.env.BENCH_PAIRED_ROUNDS ?? 5);

/**
 * One scenario's CPU per request against another's on the same server, as the median of the ratios
 * of runs made one right after the other, in alternating order. Scenarios measured minutes apart see
 * different loads on a shared machine: bare Fastify itself measured 63 and 72 µs per request for two
 * bodies of the same size in one run.
 */
async function pairedCpuRatio(server: RunningServer, scenario: Scenario, of: Scenario): Promise<number> {
  const ratios: number[] = [];
  for (let round = 0; round < PAIRED_ROUNDS; round++) {
    const [first, second] = round % 2 === 0 ? [scenario, of] : [of, scenario];
    const measured = new Map([[first, await measure(server, first)], [second, await measure(server, second)]]);
    ratios.push(measured.get(scenario)!.cpuMicrosPerRequest / measured.get(of)!.cpuMicrosPerRequest);
  }
  return median(ratios);
}

/** Each AuthZEN scenario against the /check scenario asking the same (SAME_ASKED), on Verdict, interleaved. */
async function sameAskedRatios(verdict: RunningServer): Promise<Record<string, number>> {
  const byName = new Map(scenarios.map((scenario) => [scenario.name, scenario]));
  const ratios: Record<string, number> = {};
  for (const [authzen, check] of SAME_ASKED) {
    if (ONLY !== undefined && !(authzen.includes(ONLY) && check.includes(ONLY))) continue;
    ratios[authzen] = await pairedCpuRatio(verdict, byName.get(authzen)!, byName.get(check)!);
    console.log(`${authzen} vs ${check}, interleaved on Verdict: ${ratio(ratios[authzen]!, 1)} CPU per request (median of ${PAIRED_ROUNDS} pairs)`);
  }
  return ratios;
}

/** Start-up of one kind of server: wall-clock and CPU milliseconds to ready, RSS once idle (medians). */
interface StartFigure {
  millis: number;
  cpuMillis: number;
  idleRss: number;
}

interface StartFigures {
  /** Bare Fastify, to its first answer. */
  baseline: StartFigure;
  /** Verdict on an empty embedded store, to GET /ready 200. */
  empty: StartFigure;
  /** Verdict on LOADED_POLICIES policies and REGISTRY_SIZE entities. */
  loaded: StartFigure;
}

/** Process start to the first GET /ready 200, and RSS once idle, RUNS times each, interleaved. */
async function startFigures(loadedDataDir: string): Promise<StartFigures> {
  const emptyDataDir = benchDirectory();
  const starts: Record<keyof StartFigures, () => Promise<RunningServer & StartCost>> = {
    baseline: startBaseline,
    empty: () => {
      rmSync(emptyDataDir, { recursive: true, force: true });
      return startVerdict(emptyDataDir, VERDICT_ARGS, { pollOnceLoggedReady: true });
    },
    loaded: () => startVerdict(loadedDataDir, VERDICT_ARGS, { pollOnceLoggedReady: true }),
  };
  const samples = { baseline: [] as StartFigure[], empty: [] as StartFigure[], loaded: [] as StartFigure[] };
  for (let run = 0; run < RUNS; run++) {
    // Started one after the other (each start alone on the machine), then left idle together.
    const started: [keyof StartFigures, RunningServer & StartCost][] = [];
    try {
      for (const kind of ['baseline', 'empty', 'loaded'] as const) started.push([kind, await starts[kind]()]);
      await sleep(IDLE_SETTLE_MILLIS);
      for (const [kind, server] of started) {
        samples[kind].push({ millis: server.startMillis, cpuMillis: server.startCpuMillis, idleRss: rssMegabytes(server.child.pid!) });
      }
    } finally {
      for (const [, server] of started) await stop(server);
    }
  }
  rmSync(emptyDataDir, { recursive: true, force: true });
  const medianOf = (figures: StartFigure[]): StartFigure => ({
    millis: median(figures.map((figure) => figure.millis)),
    cpuMillis: median(figures.map((figure) => figure.cpuMillis)),
    idleRss: median(figures.map((figure) => figure.idleRss)),
  });
  const figures: StartFigures = { baseline: medianOf(samples.baseline), empty: medianOf(samples.empty), loaded: medianOf(samples.loaded) };
  const labels: Record<keyof StartFigures, string> = {
    baseline: 'start to its first answer, bare Fastify',
    empty: 'start to /ready 200, empty embedded store',
    loaded: `start to /ready 200, ${LOADED_POLICIES} policies, ${REGISTRY_SIZE / 1000}k entities`,
  };
  for (const kind of ['baseline', 'empty', 'loaded'] as const) {
    const { millis, cpuMillis, idleRss } = figures[kind];
    console.log(`${labels[kind].padEnd(52)} ${millis.toFixed(0).padStart(6)} ms (CPU ${cpuMillis.toFixed(0).padStart(5)} ms), idle RSS ${idleRss.toFixed(0)} MB`);
  }
  return figures;
}

/** V8 heap per cached entity, measured in a process of its own (see entity-cache-bytes.ts). */
async function bytesPerCachedEntity(dataDir: string): Promise<number> {
  const script = fileURLToPath(new URL('entity-cache-bytes.js', import.meta.url));
  const { stdout } = await execFileAsync(process.execPath, ['--expose-gc', script, dataDir, String(REGISTRY_SIZE)]);
  const bytes = Number(stdout.trim());
  console.log(`entity cache: ${bytes} bytes of heap per cached entity (two attributes each, ${REGISTRY_SIZE / 1000}k entities)`);
  return bytes;
}

interface WriteFigures {
  writesPerSecond: { small: number; large: number };
  cpuMillisPerWrite: { small: number; large: number };
}

/** Policy creations one by one on a server holding 10 policies and on one holding LARGE_POLICY_SET. */
async function writeFigures(): Promise<WriteFigures> {
  const sets = { small: POLICIES, large: LARGE_POLICY_SET };
  const servers: Record<string, { server: RunningServer; dataDir: string }> = {};
  for (const [size, count] of Object.entries(sets)) {
    const dataDir = benchDirectory();
    await seed(dataDir, { to: count });
    servers[size] = { server: await startVerdict(dataDir, VERDICT_ARGS, { nodeOptions: size === 'large' ? profiled : [] }), dataDir };
  }
  const rates: Record<string, number[]> = { small: [], large: [] };
  const cpu: Record<string, number[]> = { small: [], large: [] };
  try {
    for (let run = 0; run < RUNS; run++) {
      for (const size of ['small', 'large']) {
        const { server } = servers[size]!;
        const cpuBefore = cpuSeconds(server.child.pid!);
        rates[size]!.push(await policyWritesPerSecond(server.url, WRITES, `bench-write-${run}`));
        cpu[size]!.push(((cpuSeconds(server.child.pid!) - cpuBefore) * 1000) / WRITES);
      }
    }
  } finally {
    for (const { server, dataDir } of Object.values(servers)) {
      await stop(server);
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  const figures: WriteFigures = {
    writesPerSecond: { small: median(rates.small!), large: median(rates.large!) },
    cpuMillisPerWrite: { small: median(cpu.small!), large: median(cpu.large!) },
  };
  for (const size of ['small', 'large'] as const) {
    console.log(
      `policy writes one by one at ${String(sets[size]).padStart(5)} policies: ${figures.writesPerSecond[size].toFixed(0).padStart(5)} writes/s, ` +
        `server CPU ${figures.cpuMillisPerWrite[size].toFixed(2)} ms/write`,
    );
  }
  return figures;
}

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

/** The owner rule with a relation and with a constant (target: a relation costs at most 1.2 times the constant). */
function relationFigures(): { relation: number; constant: number } {
  const rates = engineRelationRates();
  console.log(
    `engine alone, the owner rule: ${(rates.relation / 1e6).toFixed(2)}M decisions/s with value_from, ${(rates.constant / 1e6).toFixed(2)}M with a constant: ` +
      `a relation costs ${(rates.constant / rates.relation).toFixed(2)}x (target at most 1.2x)`,
  );
  return rates;
}

/** Each newer operator's decision against one by `==` (target: at most 2x, but for matches, which reports its figure). */
function operatorFigures(): void {
  const rates = engineOperatorRates();
  for (const [name, rate] of Object.entries(rates)) {
    if (name === '==') continue;
    const times = rates['=='] / rate;
    const target = name === 'matches' ? '(reported)' : `(target at most 2x)${times > 2 ? ' ABOVE TARGET' : ''}`;
    console.log(`engine alone, one condition by ${name.padEnd(14)} ${(rate / 1e6).toFixed(2)}M decisions/s: ${times.toFixed(2)}x a decision by == ${target}`);
  }
}

/** An impact preview's proposed set at 10,000 policies, one changed: derived, as the preview makes it, against compiled whole. */
function proposedSetFigures(): void {
  const { derived, compiled } = proposedSetMillis();
  console.log(`impact preview, the proposed set of 10,000 policies with one changed: derived in ${derived.toFixed(1)} ms, compiled whole in ${compiled.toFixed(0)} ms`);
}

/** What a shadow policy adds to a check decided on the front, in nanoseconds of one thread. */
function shadowFigures(): void {
  const { live, shadowed } = engineShadowRates();
  console.log(
    `engine alone, a shadow policy deciding beside the live ones: ${(shadowed / 1e6).toFixed(2)}M checks/s against ${(live / 1e6).toFixed(2)}M without: ` +
      `${((1 / shadowed - 1 / live) * 1e9).toFixed(0)} ns more per check`,
  );
}

/** What enforcing attribute schemas adds to a check, in nanoseconds of one thread (the target: at most a tenth of a /check's CPU). */
function schemaFigures(): void {
  const { without, withSchemas } = engineSchemaRates();
  const addedNanoseconds = (1 / withSchemas - 1 / without) * 1e9;
  console.log(
    `engine alone, attribute schemas enforced: ${(withSchemas / 1e6).toFixed(2)}M checks/s against ${(without / 1e6).toFixed(2)}M without: ` +
      `${addedNanoseconds.toFixed(0)} ns more per check (beside the server CPU per /check above)`,
  );
}

/**
 * Plans (with their MongoDB filter) per second, engine alone, each with its ratio to decisions per
 * second at the same count: for a principal every policy grants a document, and for a member of
 * one team among as many as there are policies (teamPlans), whose plan should cost as much at 10,000.
 */
function planFigures(decisions: Record<number, number>): { plans: Record<number, number>; teamPlans: Record<number, number> } {
  const plans: Record<number, number> = {};
  const teamPlans: Record<number, number> = {};
  const rate = (value: number) => (value >= 10_000 ? thousands(value) : value.toFixed(1));
  for (const count of [10, 10_000]) {
    plans[count] = enginePlansPerSecond(count);
    console.log(
      `plans, engine alone, ${String(count).padStart(6)} policies: ${rate(plans[count]!)} plans/s, each naming ${count} documents (${ratio(plans[count]!, decisions[count]!)} of decisions/s)`,
    );
    teamPlans[count] = enginePlansPerSecond(count, 'one team');
    console.log(
      `plans, engine alone, ${String(count).padStart(6)} policies, one per team: ${rate(teamPlans[count]!)} plans/s, each naming 1 document (${ratio(teamPlans[count]!, decisions[count]!)} of decisions/s)`,
    );
  }
  return { plans, teamPlans };
}

interface Tracked {
  http?: Record<string, Record<string, Figure>>;
  /** AuthZEN's CPU per request against /check's asking the same (see sameAskedRatios), by AuthZEN scenario. */
  sameAsked?: Record<string, number>;
  rssAfterEntities?: number;
  /** The same checks on the server that has just served the HTTP runs. */
  rssAfterLoad?: number;
  start?: StartFigures;
  bytesPerEntity?: number;
  writes?: WriteFigures;
}

/** The figures the project tracks (see docs/development.md), each beside its target. */
function printSummary({ http, sameAsked, rssAfterEntities, rssAfterLoad, start, bytesPerEntity, writes }: Tracked, processesLabel: string): void {
  const rows: [string, string, string][] = [];
  const vsBaseline = (scenario: string, label = 'Verdict') => {
    const figures = http?.[scenario];
    if (figures?.[label] === undefined) return undefined;
    return figures[label]!.decisionsPerSecond / figures.baseline!.decisionsPerSecond;
  };
  const add = (figure: string, value: string | undefined, target: string) => {
    if (value !== undefined) rows.push([figure, value, target]);
  };
  const times = (value: number | undefined) => (value === undefined ? undefined : `${value.toFixed(2)}×`);
  add('/check by attributes, ratio to bare Fastify req/s', times(vsBaseline('check, attributes')), '≥ 0.90×');
  add('/check with a principal uri from a 100k registry', times(vsBaseline(URI_SCENARIO)), '≥ 0.85×');
  add('bulk 100 items, decisions/s ratio', times(vsBaseline('bulk, 100 items')), '≥ 1.1×');
  add('bulk 1,000 items, decisions/s ratio', times(vsBaseline('bulk, 1000 items')), '≥ 1.3×');
  // AuthZEN against Verdict's own API asked the same (the measure): CPU per request, same run.
  const cpuVs = (scenario: string) => {
    const measured = sameAsked?.[scenario];
    return measured === undefined ? undefined : `${ratio(measured, 1)} CPU per request, interleaved`;
  };
  add('/access/v1/evaluation, vs /check asking the same', cpuVs('authzen evaluation, uris'), '≤ 1.05×');
  add('/access/v1/evaluations of 100, vs /check/bulk of the same', cpuVs('authzen evaluations, 100 items, uris'), '≤ 1.05×');
  const cpu = http?.['check, attributes'];
  if (cpu?.Verdict !== undefined) {
    add('server CPU per /check (attributes)', `${cpu.Verdict.cpuMicrosPerRequest.toFixed(0)} µs (bare Fastify ${cpu.baseline!.cpuMicrosPerRequest.toFixed(0)} µs)`, '—');
  }
  if (start !== undefined) {
    const seconds = ({ millis, cpuMillis }: StartFigure) => `${(millis / 1000).toFixed(2)} s (CPU ${(cpuMillis / 1000).toFixed(2)} s)`;
    add('process start to /ready 200, empty embedded store', `${seconds(start.empty)}; bare Fastify answering ${seconds(start.baseline)}`, '≤ 0.3 s');
    add(`start to /ready 200, ${LOADED_POLICIES} policies and 100k entities`, seconds(start.loaded), '≤ 1 s');
    add('idle RSS, empty store', `${start.empty.idleRss.toFixed(0)} MB (bare Fastify ${start.baseline.idleRss.toFixed(0)} MB)`, '≤ 75 MB');
  }
  add('RSS after checks touching 100k registered entities', rssAfterEntities === undefined ? undefined : `${rssAfterEntities.toFixed(0)} MB`, '≤ 150 MB');
  add('the same, after the HTTP runs above', rssAfterLoad === undefined ? undefined : `${rssAfterLoad.toFixed(0)} MB`, '—');
  add('heap per cached entity', bytesPerEntity === undefined ? undefined : `${bytesPerEntity} bytes`, '—');
  if (writes !== undefined) {
    add(
      `policy write at ${LARGE_POLICY_SET} policies vs at ${POLICIES}`,
      `${ratio(writes.cpuMillisPerWrite.large, writes.cpuMillisPerWrite.small)} CPU, ${ratio(writes.writesPerSecond.small, writes.writesPerSecond.large)} time`,
      '≤ 1.2×',
    );
  }
  for (const scenario of ['check, attributes', URI_SCENARIO, 'bulk, 100 items', 'bulk, 1000 items']) {
    add(`${processesLabel}: ${scenario}`, times(vsBaseline(scenario, processesLabel)), `(single process ${times(vsBaseline(scenario)) ?? '—'})`);
  }
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => row[column]!.length)));
  console.log('\nSummary (same-run ratios and medians; absolute times and sizes move with the machine\'s load):');
  for (const row of rows) console.log(`  ${row.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')}`);
}

async function main(): Promise<void> {
  if (PARTS.has('http') && !(await wrkAvailable())) {
    console.error("bench: wrk is not installed; install Debian's package: apt-get install wrk");
    process.exit(2);
  }
  const processesLabel = `Verdict ×${PROCESSES} processes`;
  console.log(
    `Verdict benchmark (${[...PARTS].join(', ')}): ${RUNS} runs × ${SECONDS}s per figure, ${CONNECTIONS} connections, medians; ` +
      `Verdict args: ${VERDICT_ARGS.join(' ') || '(defaults)'}; load average ${loadavg()[0]!.toFixed(1)} on entry`,
  );
  if (COMPARING) console.log(`Verdict+ (compared in the same runs) args: ${[...VERDICT_ARGS, ...(COMPARE_ARGS ?? [])].join(' ')}; build: ${COMPARE_CLI ?? 'this one'}${COMPARE_SHADOW ? '; with a shadow policy' : ''}`);
  const dataDirs: string[] = [];
  const servers: { label: string; server: RunningServer }[] = [];
  const tracked: Tracked = {};
  let engine: Record<number, number> = {};
  let plans: Record<number, number> = {};
  let teamPlans: Record<number, number> = {};
  let relations: { relation: number; constant: number } | undefined;
  try {
    let template: string | undefined;
    if (PARTS.has('http') || PARTS.has('start') || PARTS.has('cache')) {
      template = benchDirectory();
      dataDirs.push(template);
      await seed(template, { to: POLICIES }, REGISTRY_SIZE);
    }
    if (PARTS.has('http')) {
      const verdictOn = async (args: string[], readyAnswers = 1, nodeOptions: string[] = [], cli?: string) => {
        const dataDir = copyOf(template!);
        dataDirs.push(dataDir);
        const server = await startVerdict(dataDir, args, { readyAnswers, nodeOptions, cli });
        await untilIdle(server);
        return server;
      };
      servers.push({ label: 'baseline', server: await startBaseline() });
      servers.push({ label: 'Verdict', server: await verdictOn(VERDICT_ARGS, 1, profiled) });
      if (COMPARING) servers.push({ label: 'Verdict+', server: await verdictOn([...VERDICT_ARGS, ...(COMPARE_ARGS ?? [])], 1, [], COMPARE_CLI) });
      if (COMPARE_SHADOW) await writeShadowOfFirstPolicy(servers.at(-1)!.server.url);
      if (PROCESSES > 1) {
        servers.push({ label: processesLabel, server: await verdictOn([...VERDICT_ARGS, '--processes', String(PROCESSES)], 2 * PROCESSES) });
      }
      tracked.http = await httpFigures(servers);
      const verdict = servers[1]!.server;
      tracked.sameAsked = await sameAskedRatios(verdict);
      await touchEveryEntity(verdict.url);
      tracked.rssAfterLoad = rssMegabytes(verdict.child.pid!);
      console.log(`Verdict RSS after the runs above and checks touching ${REGISTRY_SIZE / 1000}k registered entities: ${tracked.rssAfterLoad.toFixed(0)} MB`);
      for (const { server } of servers) await stop(server);
      // The tracked figure: what a server holds once checks have touched every entity, without the load of the runs above.
      const fresh = await verdictOn(VERDICT_ARGS);
      try {
        await touchEveryEntity(fresh.url);
        tracked.rssAfterEntities = rssMegabytes(fresh.child.pid!);
      } finally {
        await stop(fresh);
      }
      console.log(`Verdict RSS after checks touching ${REGISTRY_SIZE / 1000}k registered entities (a fresh server): ${tracked.rssAfterEntities.toFixed(0)} MB`);
    }
    if (PARTS.has('start')) {
      const loaded = copyOf(template!);
      dataDirs.push(loaded);
      await seed(loaded, { from: POLICIES, to: LOADED_POLICIES });
      tracked.start = await startFigures(loaded);
    }
    if (PARTS.has('cache')) tracked.bytesPerEntity = await bytesPerCachedEntity(template!);
    if (PARTS.has('writes')) tracked.writes = await writeFigures();
    if (PARTS.has('engine')) {
      engine = engineFigures();
      relations = relationFigures();
      schemaFigures();
      shadowFigures();
      proposedSetFigures();
      operatorFigures();
      ({ plans, teamPlans } = planFigures(engine));
    }
    printSummary(tracked, processesLabel);
    const resultsDir = join(repositoryRoot, 'bench/results');
    mkdirSync(resultsDir, { recursive: true });
    const file = join(resultsDir, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    const settings = {
      parts: [...PARTS], runs: RUNS, seconds: SECONDS, connections: CONNECTIONS, args: VERDICT_ARGS, compareArgs: COMPARE_ARGS, compareCli: COMPARE_CLI, processes: PROCESSES, loadAverage: loadavg(),
    };
    writeFileSync(file, JSON.stringify({ ...settings, ...tracked, engine, relations, plans, teamPlans }, null, 2));
    console.log(`saved ${file}`);
  } finally {
    for (const { server } of servers) await stop(server);
    for (const dataDir of dataDirs) rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
