// What a sidecar costs a pod (npm run bench:memory): for each set of V8 flags, one Verdict on the
// embedded store holding POLICIES policies, started, left idle, then loaded with /check and with
// bulk-100 by a client in this process (64 connections, undici; wrk is not needed). Printed: start to
// ready, idle RSS, peak RSS under each load, and server CPU per decision, as medians over ROUNDS
// rounds in alternating order, each figure also as a ratio to the default flags' in the same round
// (the machine is shared and noisy).
//
// MEMORY_BENCH_CERBOS=<path to its binary, or `fetch`> adds Cerbos beside them, on policies that decide
// the same checks (bench/cerbos.ts), measured the same way.
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { Pool } from 'undici';
import { benchDirectory, copyOf, seed } from './seed.js';
import { startVerdict, stop, type RunningServer } from './server.js';
import { cpuSeconds, rssMegabytes } from './process-stats.js';
import { cerbosBinary, cerbosCheck, cerbosPolicies, startCerbos } from './cerbos.js';

const ROUNDS = Number(process.env.MEMORY_BENCH_ROUNDS ?? 5);
const LOAD_SECONDS = Number(process.env.MEMORY_BENCH_SECONDS ?? 8);
const POLICIES = Number(process.env.MEMORY_BENCH_POLICIES ?? 100);
const IDLE_MILLIS = 3000;
const CONNECTIONS = 64;
const BULK = 100;

/** The V8 flags compared; the first is the baseline. MEMORY_BENCH_VARIANTS=1 measures the default flags alone (to size a pod for a policy count). */
const ALL_VARIANTS: { name: string; nodeOptions: string[] }[] = [
  { name: 'default', nodeOptions: [] },
  { name: '--max-semi-space-size=1', nodeOptions: ['--max-semi-space-size=1'] },
  { name: '--optimize-for-size', nodeOptions: ['--optimize-for-size'] },
];
const FLAG_VARIANTS = ALL_VARIANTS.slice(0, Number(process.env.MEMORY_BENCH_VARIANTS ?? ALL_VARIANTS.length));

interface Figures {
  readyMillis: number;
  idleMiB: number;
  checkPeakMiB: number;
  checkCpuMicros: number;
  bulkPeakMiB: number;
  bulkCpuMicrosPerItem: number;
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
const check = (index: number) => ({ principal: { attributes: { role: 'reader' } }, resource: { attributes: { id: `doc-${(index * 7919) % POLICIES}` } }, action: 'read' });

/** Sends `body` on `connections` connections for `seconds`; the answers counted, the highest RSS seen every 50 ms. */
async function load(server: RunningServer, path: string, body: string, seconds: number): Promise<{ answers: number; peakMiB: number; cpuSeconds: number }> {
  const pool = new Pool(server.url, { connections: CONNECTIONS, pipelining: 1 });
  const pid = server.child.pid!;
  let peakMiB = rssMegabytes(pid);
  const sampler = setInterval(() => (peakMiB = Math.max(peakMiB, rssMegabytes(pid))), 50);
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
  const cpu = cpuSeconds(pid) - cpuBefore;
  await pool.close();
  return { answers, peakMiB: Math.max(peakMiB, rssMegabytes(pid)), cpuSeconds: cpu };
}

/** A started server's figures: idle after IDLE_MILLIS, then under each load. */
async function measure(server: RunningServer, startMillis: number, requests: Requests): Promise<Figures> {
  await new Promise((resolve) => setTimeout(resolve, IDLE_MILLIS));
  const idleMiB = rssMegabytes(server.child.pid!);
  const checks = await load(server, ...requests.check, LOAD_SECONDS);
  const bulks = await load(server, ...requests.bulk, LOAD_SECONDS);
  return {
    readyMillis: startMillis,
    idleMiB,
    checkPeakMiB: checks.peakMiB,
    checkCpuMicros: (checks.cpuSeconds * 1e6) / checks.answers,
    bulkPeakMiB: bulks.peakMiB,
    bulkCpuMicrosPerItem: (bulks.cpuSeconds * 1e6) / (bulks.answers * BULK),
  };
}

const VERDICT_REQUESTS: Requests = {
  check: ['/check', JSON.stringify(check(1))],
  bulk: ['/check/bulk', JSON.stringify(Array.from({ length: BULK }, (_, index) => check(index)))],
};

function verdictWith(variant: { name: string; nodeOptions: string[] }): Contender {
  return {
    name: `Verdict ${variant.name}`,
    measure: async (seeded) => {
      const dataDir = copyOf(seeded);
      const server = await startVerdict(dataDir, [], { nodeOptions: variant.nodeOptions, pollOnceLoggedReady: true });
      try {
        return await measure(server, server.startMillis, VERDICT_REQUESTS);
      } finally {
        await stop(server);
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}

function cerbos(binary: string, policies: string): Contender {
  const documents = (index: number) => (index * 7919) % POLICIES;
  const requests: Requests = {
    check: ['/api/check/resources', cerbosCheck([documents(1)])],
    bulk: ['/api/check/resources', cerbosCheck(Array.from({ length: BULK }, (_, index) => documents(index)))],
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
  const contenders: Contender[] = [...FLAG_VARIANTS.map(verdictWith), ...(cerbosDirectory === undefined ? [] : [cerbos(cerbosBinary(cerbosNamed!), cerbosDirectory)])];
  const rounds: Figures[][] = [];
  console.log(`# ${ROUNDS} rounds, ${POLICIES} policies, ${LOAD_SECONDS} s of load each at ${CONNECTIONS} connections; load average before: ${loadavg()[0]!.toFixed(2)}`);
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
  const fields: [keyof Figures, string][] = [
    ['readyMillis', 'start to ready, ms'],
    ['idleMiB', 'idle RSS, MiB'],
    ['checkPeakMiB', 'peak RSS under /check, MiB'],
    ['checkCpuMicros', 'server CPU per /check, µs'],
    ['bulkPeakMiB', 'peak RSS under bulk-100, MiB'],
    ['bulkCpuMicrosPerItem', 'server CPU per bulk item, µs'],
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
