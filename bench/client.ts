// The Node client against one Verdict on loopback, measured in one run (npm run bench:client):
//
// - 64 concurrent callers in this process, each checking in a loop: decisions per second through the
//   client (batching on, cache off) against one undici request per check (undici's default agent, as
//   an app writes it, and a pool of 4 connections);
// - the same with the cache on and 80% of checks repeats of a hot set: decisions per second, and the
//   p99 latency a caller sees;
// - one caller at a time: what batching adds to a check's latency (median of paired rounds).
//
// Scenarios take turns for CLIENT_BENCH_ROUNDS rounds of CLIENT_BENCH_SECONDS each (the machine is
// shared and noisy); figures are medians of the rounds, as ratios to the baseline of the same round.
import { Pool, request } from 'undici';
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { VerdictClient } from '../clients/node/src/index.js';
import type { CheckRequest } from '../clients/node/src/wire.js';
import { benchDirectory, seed } from './seed.js';
import { startVerdict, stop } from './server.js';

const ROUNDS = Number(process.env.CLIENT_BENCH_ROUNDS ?? 5);
const ROUND_MILLIS = Number(process.env.CLIENT_BENCH_SECONDS ?? 2) * 1000;
const CALLERS = 64;
const POLICIES = 100;
/** The share of checks that repeat one of HOT_CHECKS checks, in the cached scenario. */
const REPEAT_SHARE = 0.8;
const HOT_CHECKS = 200;

let fresh = 0;
/** A check of a reader on document `id` (allowed when it is one the policies grant). */
const checkOf = (id: number, attributes: Record<string, unknown> = {}): CheckRequest => ({
  principal: { attributes: { role: 'reader', ...attributes } },
  resource: { attributes: { id: `doc-${id % (POLICIES * 2)}` } },
  action: 'read',
});
/** Never the same check twice: what no cache holds. */
const freshCheck = () => checkOf(fresh, { request: fresh++ });
const hotCheck = () => (Math.random() < REPEAT_SHARE ? checkOf(Math.floor(Math.random() * HOT_CHECKS)) : freshCheck());

interface Measured {
  perSecond: number;
  latencies: number[];
}

/** `callers` loops each issuing `decide` of a new check for `millis`: decisions per second and each check's latency (ms). */
async function run(callers: number, millis: number, next: () => CheckRequest, decide: (check: CheckRequest) => Promise<unknown>): Promise<Measured> {
  const latencies: number[] = [];
  const until = performance.now() + millis;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < until) {
        const asked = performance.now();
        await decide(next());
        latencies.push(performance.now() - asked);
      }
    }),
  );
  return { perSecond: (latencies.length / (performance.now() - started)) * 1000, latencies };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const percentile = (values: number[], share: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * share))]!;

async function main(): Promise<void> {
  const dataDir = benchDirectory();
  await seed(dataDir, { to: POLICIES });
  const server = await startVerdict(dataDir, []);
  // As an app writes it: undici's request on its default agent (a connection per request in flight, kept alive).
  const oneRequestPerCheck = async (check: CheckRequest) => {
    const response = await request(`${server.url}/check`, { method: 'POST', body: JSON.stringify(check), headers: { 'content-type': 'application/json' } });
    return response.body.json();
  };
  // The same on a pool of 4 connections, as the client's own: a baseline tuned as far as one request per check goes.
  const pool = new Pool(server.url, { connections: 4 });
  const onPool = async (check: CheckRequest) => {
    const response = await pool.request({ method: 'POST', path: '/check', body: JSON.stringify(check), headers: { 'content-type': 'application/json' } });
    return response.body.json();
  };
  const batching = new VerdictClient({ url: server.url });
  const caching = new VerdictClient({ url: server.url, cache: true });
  while (!caching.cacheServing) await new Promise((resolve) => setTimeout(resolve, 10));
  const load = loadavg()[0]!.toFixed(2);
  const figures = { batchedOverPool: [] as number[], batched: [] as number[], cached: [] as number[], cachedOverBatched: [] as number[], p99: [] as number[], p99Batched: [] as number[], addedMicros: [] as number[] };
  try {
    // A warm-up round of each, not counted.
    await run(CALLERS, 500, freshCheck, oneRequestPerCheck);
    await run(CALLERS, 500, freshCheck, (check) => batching.check(check));
    for (let round = 0; round < ROUNDS; round++) {
      const baseline = await run(CALLERS, ROUND_MILLIS, freshCheck, oneRequestPerCheck);
      const pooled = await run(CALLERS, ROUND_MILLIS, freshCheck, onPool);
      const batched = await run(CALLERS, ROUND_MILLIS, freshCheck, (check) => batching.check(check));
      const batchedHot = await run(CALLERS, ROUND_MILLIS, hotCheck, (check) => batching.check(check));
      const cached = await run(CALLERS, ROUND_MILLIS, hotCheck, (check) => caching.check(check));
      const aloneDirect = await run(1, ROUND_MILLIS / 2, freshCheck, oneRequestPerCheck);
      const aloneBatched = await run(1, ROUND_MILLIS / 2, freshCheck, (check) => batching.check(check));
      figures.batched.push(batched.perSecond / baseline.perSecond);
      figures.batchedOverPool.push(batched.perSecond / pooled.perSecond);
      figures.cached.push(cached.perSecond / baseline.perSecond);
      figures.cachedOverBatched.push(cached.perSecond / batchedHot.perSecond);
      figures.p99.push(percentile(cached.latencies, 0.99));
      figures.p99Batched.push(percentile(batchedHot.latencies, 0.99));
      figures.addedMicros.push((median(aloneBatched.latencies) - median(aloneDirect.latencies)) * 1000);
      console.log(
        `round ${round + 1}: one request per check ${baseline.perSecond.toFixed(0)}/s (on a pool of 4: ${pooled.perSecond.toFixed(0)}/s); batched ${batched.perSecond.toFixed(0)}/s (${(batched.perSecond / baseline.perSecond).toFixed(1)}x); ` +
          `80% repeats: batched ${batchedHot.perSecond.toFixed(0)}/s, cached ${cached.perSecond.toFixed(0)}/s, p99 ${percentile(cached.latencies, 0.99).toFixed(2)} ms; ` +
          `alone: ${(median(aloneDirect.latencies) * 1000).toFixed(0)} µs direct, ${(median(aloneBatched.latencies) * 1000).toFixed(0)} µs through the client`,
      );
    }
  } finally {
    await Promise.all([batching.close(), caching.close(), pool.close()]);
    await stop(server);
    rmSync(dataDir, { recursive: true, force: true });
  }
  console.log(`\nNode client, ${CALLERS} callers, ${ROUNDS} rounds of ${ROUND_MILLIS / 1000} s, load average ${load} at the start; medians of the rounds:`);
  console.log(`  batching on, cache off: ${median(figures.batched).toFixed(1)}x the decisions per second of one undici request per check (goal at least 10x); ${median(figures.batchedOverPool).toFixed(1)}x one request per check on a pool of 4 connections`);
  console.log(`  cache on, ${REPEAT_SHARE * 100}% repeats: ${median(figures.cached).toFixed(1)}x one request per check, ${median(figures.cachedOverBatched).toFixed(2)}x batching alone on the same checks; p99 a caller sees ${median(figures.p99).toFixed(2)} ms (batching alone ${median(figures.p99Batched).toFixed(2)} ms)`);
  console.log(`  one caller at a time: batching adds ${median(figures.addedMicros).toFixed(0)} µs to a check's median latency (goal under 50 µs)`);
}

await main();
