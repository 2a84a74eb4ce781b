import t from 'tap';
import type { EventLoopUtilization } from 'node:perf_hooks';
import { fasterPath, MeasuredPlacement, type BulkPath, type PathCosts } from '../../src/pool/measured-placement.js';
import { bulkPlacement, detectParallelism, POOL_MINIMUM_BODY_LENGTH } from '../../src/pool/parallelism.js';
import { startServer } from '../helpers/server.js';

// Under --evaluation auto with a core to spare, big bulks take the path measured faster while
// serving: the front thread's busy time per byte on each path, and a worker's wall time per byte.

t.test('the faster path at saturation, from measured costs', async (t) => {
  const costs = (inline: number, poolFront: number, worker: number): PathCosts => ({ inlineFrontMsPerByte: inline, poolFrontMsPerByte: poolFront, poolWorkerMsPerByte: worker });
  t.equal(fasterPath({}, 2), undefined, 'nothing measured: no choice');
  t.equal(fasterPath({ inlineFrontMsPerByte: 1 }, 2), undefined, 'the pool unmeasured: no choice');
  t.equal(fasterPath({ poolFrontMsPerByte: 1, poolWorkerMsPerByte: 1 }, 2), undefined, 'inline unmeasured: no choice');
  t.equal(fasterPath(costs(10, 2, 12), 2), 'pool', 'the front hands bulks off for less than deciding them, and two workers with cores keep up');
  t.equal(fasterPath(costs(10, 2, 12), 1), 'inline', 'one such worker does not keep up with the front deciding alone');
  t.equal(fasterPath(costs(10, 2, 30), 2), 'inline', 'workers waiting for a core (wall time stretched) do not keep up');
  t.equal(fasterPath(costs(10, 11, 4), 2), 'inline', 'handing off costs the front more than deciding: inline, however fast the workers');
  t.equal(fasterPath(costs(10, 10, 4), 2), 'inline', 'a tie stays on the front: no hop for nothing');
});

/** What a bulk costs on each path, per byte, in the simulation below. */
interface Load {
  inlineFront: number;
  poolFront: number;
  worker: number;
}

/**
 * A placement on a simulated clock and front thread: each bulk of `bytes` takes the path it is
 * given and costs the front (busy time, which also moves the clock) and a worker what `load` says.
 */
function simulation(workers: number, trialEvery: number) {
  let now = 0;
  let active = 0;
  const utilization = (previous?: EventLoopUtilization): EventLoopUtilization => ({ idle: 0, active: active - (previous?.active ?? 0), utilization: 1 });
  const placement = new MeasuredPlacement({ workers, windowMillis: 100, trialEvery, utilization, now: () => now });
  const busy = (ms: number) => {
    active += ms;
    now += ms;
  };
  /** Serves bulks for `millis` of the clock; the share of that time each path took. */
  const serve = (load: Load, millis: number, bytes = 10_000): Record<BulkPath, number> => {
    const spent = { inline: 0, pool: 0 };
    for (const until = now + millis; now < until; ) {
      const path = placement.path();
      const from = now;
      if (path === 'inline') {
        busy(load.inlineFront * bytes);
        placement.decidedInline(bytes);
      } else {
        placement.handedOff();
        busy(load.poolFront * bytes);
        placement.answeredByPool(bytes, load.worker * bytes);
      }
      spent[path] += (now - from) / millis;
    }
    return spent;
  };
  return { placement, serve };
}

/** Costs per byte (ms) where the front decides a bulk in 1 ms, hands one off in 0.2 ms, and a worker takes `worker` ms. */
const load = (worker: number): Load => ({ inlineFront: 1e-4, poolFront: 2e-5, worker: worker * 1e-4 });
const WORKERS_WITH_CORES = load(1.2);
const WORKERS_SHARING_A_CORE = load(3);

t.test('workers that share a core with the front: inline, the pool tried one window in N', async (t) => {
  const { placement, serve } = simulation(2, 8);
  serve(WORKERS_SHARING_A_CORE, 1000);
  const spent = serve(WORKERS_SHARING_A_CORE, 10_000);
  const { costs, windows } = placement.measures;
  t.equal(fasterPath(costs, 2), 'inline');
  t.ok(spent.inline > 0.8, `most of the time inline (${spent.inline})`);
  t.ok(spent.pool > 0, 'the pool is still tried');
  t.ok(windows.pool >= 2 && windows.inline > windows.pool, `both paths measured, the chosen more (${JSON.stringify(windows)})`);
  t.ok(Math.abs(costs.inlineFrontMsPerByte! - 1e-4) < 1e-9 && Math.abs(costs.poolWorkerMsPerByte! - 3e-4) < 1e-9, 'the medians are the costs measured');
  t.match(placement.describe(), /^(inline|pool) now; inline: 100 ns\/byte on the front \(\d+ windows\); pool: 20 ns\/byte on the front, 300 ns\/byte in a worker \(\d+ windows\); the other path is tried one window in 8$/);
});

t.test('workers with cores of their own: the pool, inline tried one window in N', async (t) => {
  const { placement, serve } = simulation(2, 8);
  serve(WORKERS_WITH_CORES, 1000);
  const spent = serve(WORKERS_WITH_CORES, 10_000);
  t.equal(fasterPath(placement.measures.costs, 2), 'pool');
  t.ok(spent.pool > 0.8, `most of the time pooled (${spent.pool})`);
  t.ok(spent.inline > 0, 'inline is still tried');
});

t.test('the choice follows a load that changes', async (t) => {
  const { placement, serve } = simulation(2, 4);
  serve(WORKERS_WITH_CORES, 5000);
  t.equal(fasterPath(placement.measures.costs, 2), 'pool');
  serve(WORKERS_SHARING_A_CORE, 5000);
  t.equal(fasterPath(placement.measures.costs, 2), 'inline', 'the pool slowed: inline');
  const spent = serve(WORKERS_SHARING_A_CORE, 5000);
  t.ok(spent.inline > 0.7, `most of the time inline again (${spent.inline})`);
});

t.test('one window measured many times slower (its thread preempted) does not move the choice', async (t) => {
  const { placement, serve } = simulation(2, 8);
  serve(WORKERS_WITH_CORES, 5000);
  t.equal(fasterPath(placement.measures.costs, 2), 'pool');
  // One window in which every pooled bulk costs the front thirty times as much, then the usual again.
  serve({ ...WORKERS_WITH_CORES, poolFront: WORKERS_WITH_CORES.poolFront * 30 }, 100);
  t.equal(fasterPath(placement.measures.costs, 2), 'pool', 'the outlier is outvoted');
  serve({ ...WORKERS_WITH_CORES, poolFront: WORKERS_WITH_CORES.poolFront * 30 }, 1000);
  t.equal(fasterPath(placement.measures.costs, 2), 'inline', 'a lasting change moves it');
});

t.test('an inline window measures only once the bulks handed to the pool before it are answered', async (t) => {
  let now = 0;
  let active = 0;
  const utilization = (previous?: EventLoopUtilization): EventLoopUtilization => ({ idle: 0, active: active - (previous?.active ?? 0), utilization: 1 });
  const placement = new MeasuredPlacement({ workers: 1, windowMillis: 10, trialEvery: 100, utilization, now: () => now });
  const inlineWindow = (bytes: number) => {
    t.equal(placement.path(), 'inline');
    active += 10;
    now += 10;
    placement.decidedInline(bytes);
  };
  inlineWindow(1000);
  inlineWindow(1000);
  t.equal(placement.path(), 'pool', 'after two inline windows (the first warming up), the pool is tried');
  for (let bulk = 0; bulk < 3; bulk++) placement.handedOff();
  // A pooled window measures from its first answer: the time to fill the pool is not counted.
  placement.answeredByPool(1000, 5);
  now += 10;
  placement.answeredByPool(1000, 5);
  t.equal(placement.path(), 'pool', 'the pool measured once, warming up: measured again');
  placement.answeredByPool(1000, 15);
  active += 10;
  now += 10;
  placement.handedOff();
  placement.handedOff();
  placement.answeredByPool(1000, 15);
  t.equal(placement.path(), 'inline', 'both measured: the worker (15 ns/byte) is slower than the front deciding alone (10 ns/byte)');
  t.equal(placement.measures.windows.pool, 2);
  // One pooled bulk is still out: inline bulks decided meanwhile measure nothing, however long.
  now += 1000;
  active += 1000;
  placement.decidedInline(1000);
  t.equal(placement.path(), 'inline');
  t.equal(placement.measures.windows.inline, 2, 'not measured while a pooled bulk is out');
  placement.answeredByPool(1000, 15);
  now += 10;
  active += 10;
  placement.decidedInline(2000);
  placement.path();
  t.equal(placement.measures.windows.inline, 3);
  t.equal(placement.measures.costs.inlineFrontMsPerByte, (10 / 1000 + 10 / 2000) / 2, 'measured from the last answer on, and the median of the two windows taken');
});

const parallelism = detectParallelism();
const measuring = bulkPlacement('auto', parallelism, 2).measured;

t.test('over a real server: /ready says which path big bulks take, and what each was measured to cost', { skip: !measuring && `auto measures only with a core to spare (${parallelism.cores} available)` }, async (t) => {
  const server = await startServer({ evaluation: 'auto', workers: 2 });
  t.teardown(() => server.close());
  const body = JSON.stringify(Array.from({ length: 200 }, (_, index) => ({ principal: { attributes: { n: index } }, resource: { attributes: { kind: 'doc' } }, action: 'read' })));
  t.ok(body.length >= POOL_MINIMUM_BODY_LENGTH, 'the bulk is big enough to be placed');
  const placement = async () => ((await server.call('GET', '/ready?verbose=true')).body as { checks: Record<string, string> }).checks.placement!;
  t.match(await placement(), /^inline now; inline: not measured yet \(0 windows\); pool: not measured yet \(0 windows\); the other path is tried one window in \d+$/, 'nothing measured before the first bulk');
  const shape = /^(inline|pool) now; inline: [\d.]+ ns\/byte on the front \((\d+) windows\); pool: [\d.]+ ns\/byte on the front, [\d.]+ ns\/byte in a worker \((\d+) windows\); the other path is tried one window in \d+$/;
  let reported = await placement();
  // Bulks until each path has been measured past its warm-up: sixteen at a time, as a few clients would send them.
  for (let round = 0; round < 500 && !(shape.test(reported) && Number(shape.exec(reported)![2]) >= 2 && Number(shape.exec(reported)![3]) >= 2); round++) {
    const answers = await Promise.all(Array.from({ length: 16 }, () => server.send('POST', '/check/bulk', body, { 'content-type': 'application/json' })));
    for (const answer of answers) if (answer.status !== 200) t.fail(`a bulk answered ${answer.status}`);
    reported = await placement();
  }
  t.match(reported, shape, `both paths measured: ${reported}`);
  const [, now, inlineWindows, poolWindows] = shape.exec(reported) ?? [];
  t.ok(Number(inlineWindows) >= 2 && Number(poolWindows) >= 2, 'both paths were sampled past their warm-up');
  t.ok(now === 'inline' || now === 'pool');
  const ready = await server.call('GET', '/ready?verbose=true');
  t.equal(ready.status, 200);
  t.equal((ready.body as { degraded: boolean }).degraded, false, 'a choice is no failing condition');
  t.match((ready.body as { checks: Record<string, string> }).checks.evaluation, /while it measures faster than the front thread \(--evaluation auto\)/);
});

t.test('with the pool or inline as configured, nothing is measured', async (t) => {
  for (const evaluation of ['pool', 'inline'] as const) {
    const server = await startServer({ evaluation, workers: 1 });
    const checks = ((await server.call('GET', '/ready?verbose=true')).body as { checks: Record<string, string> }).checks;
    t.equal(checks.placement, undefined, `${evaluation}: no placement reported`);
    t.match(checks.evaluation, new RegExp(`^${evaluation} \\(--evaluation ${evaluation}\\)`));
    await server.close();
  }
});
