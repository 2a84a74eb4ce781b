// What a sidecar costs a pod (npm run bench:memory): for each set of V8 flags, one Verdict on the
// embedded store holding POLICIES policies, started, left idle, then loaded with /check and with
// bulk-100 by a client in this process (64 connections, undici; wrk is not needed). Printed: start to
// ready, idle RSS and the private part of it, peak RSS and private memory under each load, and server
// CPU per decision, as medians over ROUNDS rounds in alternating order, each figure also as a ratio to
// the default flags' in the same round (the machine is shared and noisy). Bare Fastify answering the
// same requests with a fixed answer (bench/baseline-server.ts) is measured beside them: the floor of a
// Node.js server on this stack.
//
// MEMORY_BENCH_CERBOS=<path to its binary, or `fetch`> adds Cerbos beside them, on policies that decide
// the same checks (bench/cerbos.ts), measured the same way.
// MEMORY_BENCH_NODE=<node binary> runs Verdict and the floor on another Node (the image's, say), with
// MEMORY_BENCH_CLI=<a build's dist/src/cli.js> whose node_modules were installed for that Node.
// MEMORY_BENCH_BASES=<dist/src/cli.js of other builds, comma-separated> adds each, with default flags,
// as a variant: a change measured against its base in the same rounds.
// MEMORY_BENCH_QUIET_SECONDS=<s> reads the RSS again that long after the loads (Verdict settles its
// memory once no check came for 10 s: 25 s sees it).
// MEMORY_BENCH_MEMORY_LIMIT=<MiB> runs each Verdict and the floor in a cgroup with that memory limit (as root), as a
// pod's limit would: Node then sizes its heap to it. With NODE_OPTIONS=--max-old-space-size=160 too,
// Verdict runs as the sidecar manifests run it.
// MEMORY_BENCH_DENIED=1 sends checks that every policy denies (the role `guest`), to Cerbos too: a
// flood of denials, which the live view keeps some of.
import { mkdtempSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { benchDirectory, copyOf, seed } from './seed.js';
import { startBaseline, startVerdict, stop, type RunningServer } from './server.js';
import { cpuSeconds, privateMegabytes, rssMegabytes } from './process-stats.js';
import { cerbosBinary, cerbosCheck, cerbosPolicies, startCerbos } from './cerbos.js';
import { podGroup, type BenchGroup } from './cgroups.js';

const ROUNDS = Number(process.env.MEMORY_BENCH_ROUNDS ?? 5);
const LOAD_SECONDS = Number(process.env.MEMORY_BENCH_SECONDS ?? 8);
const POLICIES = Number(process.env.MEMORY_BENCH_POLICIES ?? 100);
const NODE = process.env.MEMORY_BENCH_NODE ?? process.execPath;
const CLI = process.env.MEMORY_BENCH_CLI ?? fileURLToPath(new URL('../src/cli.js', import.meta.url));
const MEMORY_LIMIT_MIB = process.env.MEMORY_BENCH_MEMORY_LIMIT === undefined ? undefined : Number(process.env.MEMORY_BENCH_MEMORY_LIMIT);
const IDLE_MILLIS = 3000;
/** How long after the loads the RSS is read again, once quiet (0: not measured). */
const QUIET_SECONDS = Number(process.env.MEMORY_BENCH_QUIET_SECONDS ?? 0);
const ROLE = process.env.MEMORY_BENCH_DENIED === '1' ? 'guest' : 'reader';
const CONNECTIONS = 64;
const BULK = 100;

/** A way to run Verdict: V8 flags, Node's compile cache warmed by `verdict warm-up` as the image does, or flags of Verdict's. */
interface Variant {
  name: string;
  nodeOptions: string[];
  compileCache?: boolean;
  args?: string[];
  /** Another build's CLI (default: this build's). */
  cli?: string;
}

/** The variants compared; the first is the baseline. MEMORY_BENCH_VARIANTS=1 measures the default alone (to size a pod for a policy count). */
const ALL_VARIANTS: Variant[] = [
  { name: 'default', nodeOptions: [] },
  { name: 'compile cache', nodeOptions: [], compileCache: true },
  { name: '--no-settle-memory', nodeOptions: [], args: ['--no-settle-memory'] },
  { name: '--max-semi-space-size=8 --heap-growing-percent=20', nodeOptions: ['--max-semi-space-size=8', '--heap-growing-percent=20'] },
  { name: '--max-semi-space-size=2', nodeOptions: ['--max-semi-space-size=2'] },
  { name: '--optimize-for-size', nodeOptions: ['--optimize-for-size'] },
];
const BASES: Variant[] = (process.env.MEMORY_BENCH_BASES ?? '')
  .split(',')
  .map((cli) => cli.trim())
  .filter(Boolean)
  .map((cli) => ({ name: cli, nodeOptions: [], cli }));
const VARIANTS = [...ALL_VARIANTS.slice(0, Number(process.env.MEMORY_BENCH_VARIANTS ?? ALL_VARIANTS.length)), ...BASES];

interface Figures {
  readyMillis: number;
  idleMiB: number;
  idlePrivateMiB: number;
  checkPeakMiB: number;
  peakPrivateMiB: number;
  checkCpuMicros: number;
  bulkPeakMiB: number;
  bulkCpuMicrosPerItem: number;
  /** RSS QUIET_SECONDS after the loads ended (NaN when not measured). */
  quietMiB: number;
}

/** One server measured: a set of V8 flags for Verdict, or Cerbos. */
interface Contender {
  name: string;
  measure(seeded: string): Promise<Figures>;
}

/** What each load sends a server: the path and body of one check, and of a bulk of BULK. */
interface Requests {
  check: [string, string];
  bulk: [string, string];
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const check = (index: number) => ({ principal: { attributes: { role: ROLE } }, resource: { attributes: { id: `doc-${(index * 7919) % POLICIES}` } }, action: 'read' });

/** Sends `body` on `connections` connections for `seconds`; the answers counted, the highest RSS and private memory seen every 50 ms. */
async function load(server: RunningServer, path: string, body: string, seconds: number): Promise<{ answers: number; peakMiB: number; peakPrivateMiB: number; cpuSeconds: number }> {
  const pool = new Pool(server.url, { connections: CONNECTIONS, pipelining: 1 });
  const pid = server.child.pid!;
  let peakMiB = rssMegabytes(pid);
  let peakPrivateMiB = privateMegabytes(pid);
  const sample = () => {
    peakMiB = Math.max(peakMiB, rssMegabytes(pid));
    peakPrivateMiB = Math.max(peakPrivateMiB, privateMegabytes(pid));
  };
  const sampler = setInterval(sample, 50);
  const cpuBefore = cpuSeconds(pid);
  const until = performance.now() + seconds * 1000;
  let answers = 0;
  const caller = async () => {
    while (performance.now() < until) {
      const response = await pool.request({ path, method: 'POST', body, headers: { 'content-type': 'application/json' } });
      await response.body.dump();
      if (response.statusCode !== 200) throw new Error(`${path} answered ${response.statusCode}`);
      answers++;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, caller));
  clearInterval(sampler);
  sample();
  const cpu = cpuSeconds(pid) - cpuBefore;
  await pool.close();
  return { answers, peakMiB, peakPrivateMiB, cpuSeconds: cpu };
}

/** A started server's figures: idle after IDLE_MILLIS, then under each load. */
async function measure(server: RunningServer, startMillis: number, requests: Requests): Promise<Figures> {
  await new Promise((resolve) => setTimeout(resolve, IDLE_MILLIS));
  const idleMiB = rssMegabytes(server.child.pid!);
  const idlePrivateMiB = privateMegabytes(server.child.pid!);
  const checks = await load(server, ...requests.check, LOAD_SECONDS);
  const bulks = await load(server, ...requests.bulk, LOAD_SECONDS);
  await new Promise((resolve) => setTimeout(resolve, QUIET_SECONDS * 1000));
  const quietMiB = QUIET_SECONDS > 0 ? rssMegabytes(server.child.pid!) : NaN;
  return {
    readyMillis: startMillis,
    idleMiB,
    idlePrivateMiB,
    checkPeakMiB: checks.peakMiB,
    peakPrivateMiB: Math.max(checks.peakPrivateMiB, bulks.peakPrivateMiB),
    checkCpuMicros: (checks.cpuSeconds * 1e6) / checks.answers,
    bulkPeakMiB: bulks.peakMiB,
    bulkCpuMicrosPerItem: (bulks.cpuSeconds * 1e6) / (bulks.answers * BULK),
    quietMiB,
  };
}

const VERDICT_REQUESTS: Requests = {
  check: ['/check', JSON.stringify(check(1))],
  bulk: ['/check/bulk', JSON.stringify(Array.from({ length: BULK }, (_, index) => check(index)))],
};

/** A directory holding Node's compile cache of a start, written by `verdict warm-up` (nothing is written on a Node without one). */
function warmedCompileCache(): string {
  const directory = mkdtempSync(join(tmpdir(), 'verdict-bench-compile-cache-'));
  const said = execFileSync(NODE, [CLI, 'warm-up'], { env: { ...process.env, NODE_COMPILE_CACHE: directory }, encoding: 'utf8' }).trim();
  console.log(`# verdict warm-up: ${said}`);
  return directory;
}

/** The cgroup every Verdict runs in, when MEMORY_BENCH_MEMORY_LIMIT asks for one; the bench stops when none can be made. */
function limitedGroup(): BenchGroup | undefined {
  if (MEMORY_LIMIT_MIB === undefined) return undefined;
  const group = podGroup({ memoryBytes: MEMORY_LIMIT_MIB * 2 ** 20 }, `verdict-bench-memory-${process.pid}`);
  if (typeof group === 'string') throw new Error(`MEMORY_BENCH_MEMORY_LIMIT: no cgroup could be made here (${group})`);
  return group;
}

function verdictWith(variant: Variant, compileCache: string | undefined, group: BenchGroup | undefined): Contender {
  const env = variant.compileCache === true ? { ...process.env, NODE_COMPILE_CACHE: compileCache } : process.env;
  return {
    name: `Verdict ${variant.name}`,
    measure: async (seeded) => {
      const dataDir = copyOf(seeded);
      const server = await startVerdict(dataDir, variant.args ?? [], { node: NODE, cli: variant.cli ?? CLI, env, nodeOptions: variant.nodeOptions, pollOnceLoggedReady: true, wrap: group?.wrap });
      try {
        return await measure(server, server.startMillis, VERDICT_REQUESTS);
      } finally {
        await stop(server);
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}

/** Bare Fastify on the same Node, in the same cgroup: what any server of this stack costs before it decides anything. */
const bareFastify = (group: BenchGroup | undefined): Contender => ({
  name: 'bare Fastify (floor)',
  measure: async () => {
    const server = await startBaseline(NODE, group?.wrap);
    try {
      return await measure(server, server.startMillis, VERDICT_REQUESTS);
    } finally {
      await stop(server);
    }
  },
});

function cerbos(binary: string, policies: string): Contender {
  const documents = (index: number) => (index * 7919) % POLICIES;
  const requests: Requests = {
    check: ['/api/check/resources', cerbosCheck([documents(1)], ROLE)],
    bulk: ['/api/check/resources', cerbosCheck(Array.from({ length: BULK }, (_, index) => documents(index)), ROLE)],
  };
  return {
    name: 'Cerbos',
    measure: async () => {
      const server = await startCerbos(binary, policies);
      try {
        return await measure(server, server.startMillis, requests);
      } finally {
        await stop(server);
      }
    },
  };
}

async function main(): Promise<void> {
  const seeded = benchDirectory();
  await seed(seeded, { to: POLICIES });
  const cerbosNamed = process.env.MEMORY_BENCH_CERBOS;
  const cerbosDirectory = cerbosNamed === undefined ? undefined : cerbosPolicies(POLICIES);
  const group = limitedGroup();
  const compileCache = VARIANTS.some((variant) => variant.compileCache === true) ? warmedCompileCache() : undefined;
  const contenders: Contender[] = [
    ...VARIANTS.map((variant) => verdictWith(variant, compileCache, group)),
    ...(VARIANTS.length > 1 ? [bareFastify(group)] : []),
    ...(cerbosDirectory === undefined ? [] : [cerbos(cerbosBinary(cerbosNamed!), cerbosDirectory)]),
  ];
  const rounds: Figures[][] = [];
  const nodeVersion = execFileSync(NODE, ['--version'], { encoding: 'utf8' }).trim();
  const limit = MEMORY_LIMIT_MIB === undefined ? 'no memory limit' : `a ${MEMORY_LIMIT_MIB} MiB memory limit`;
  const nodeOptions = process.env.NODE_OPTIONS === undefined ? '' : `, NODE_OPTIONS=${process.env.NODE_OPTIONS}`;
  console.log(`# ${ROUNDS} rounds, ${POLICIES} policies, ${LOAD_SECONDS} s of load each at ${CONNECTIONS} connections, checks by the role ${ROLE}, Verdict on Node ${nodeVersion} with ${limit}${nodeOptions}; load average before: ${loadavg()[0]!.toFixed(2)}`);
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating order: no variant always runs first, on a colder or a warmer machine.
    const order = contenders.map((_, index) => index);
    if (round % 2 === 1) order.reverse();
    const figures: Figures[] = [];
    for (const index of order) figures[index] = await contenders[index]!.measure(seeded);
    rounds.push(figures);
    console.log(`# round ${round + 1}: ${figures.map((each, index) => `${contenders[index]!.name} idle ${each.idleMiB.toFixed(1)} MiB`).join('; ')}`);
  }
  rmSync(seeded, { recursive: true, force: true });
  if (cerbosDirectory !== undefined) rmSync(cerbosDirectory, { recursive: true, force: true });
  if (compileCache !== undefined) rmSync(compileCache, { recursive: true, force: true });
  group?.remove();
  const fields: [keyof Figures, string][] = [
    ['readyMillis', 'start to ready, ms'],
    ['idleMiB', 'idle RSS, MiB'],
    ['idlePrivateMiB', 'idle private memory, MiB'],
    ['checkPeakMiB', 'peak RSS under /check, MiB'],
    ['checkCpuMicros', 'server CPU per /check, µs'],
    ['bulkPeakMiB', 'peak RSS under bulk-100, MiB'],
    ['peakPrivateMiB', 'peak private memory under load, MiB'],
    ['bulkCpuMicrosPerItem', 'server CPU per bulk item, µs'],
    ...(QUIET_SECONDS > 0 ? [['quietMiB', `RSS ${QUIET_SECONDS} s after the loads, MiB`] as [keyof Figures, string]] : []),
  ];
  console.log(`| | ${contenders.map((variant) => variant.name).join(' | ')} |`);
  console.log(`|---|${contenders.map(() => '---').join('|')}|`);
  for (const [field, label] of fields) {
    const cells = contenders.map((_, index) => {
      const value = median(rounds.map((figures) => figures[index]![field]));
      if (index === 0) return value.toFixed(1);
      const ratio = median(rounds.map((figures) => figures[index]![field] / figures[0]![field]));
      return `${value.toFixed(1)} (${ratio.toFixed(2)} ×)`;
    });
    console.log(`| ${label} | ${cells.join(' | ')} |`);
  }
  console.log(`# load average after: ${loadavg()[0]!.toFixed(2)}`);
}

await main();
