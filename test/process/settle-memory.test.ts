import t from 'tap';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
import { QuietSettling, settleMemory, type Settled } from '../../src/settle-memory.js';
import { ask, outputMatches, startVerdict } from '../helpers/child.js';
import { scratchDir } from '../helpers/server.js';
import { join } from 'node:path';

const MIB = 1024 * 1024;
const nodeMajor = Number(process.versions.node.split('.')[0]);
const newSpaceBytes = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')!.space_size;

t.test('settling collects what nothing holds any more, without exposing gc to the process', async (t) => {
  let garbage: string[] | undefined = Array.from({ length: 200_000 }, (_, index) => `garbage ${index} `.repeat(4));
  const holding = getHeapStatistics().used_heap_size;
  garbage = undefined;
  const settled = settleMemory()!;
  t.equal(garbage, undefined);
  const after = getHeapStatistics().used_heap_size;
  t.ok(after < holding - 10 * MIB, `the dropped strings were collected: ${holding} bytes used, then ${after}`);
  t.ok(settled.heapAfterBytes <= settled.heapBeforeBytes);
  t.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined', 'gc is not exposed');
});

t.test('settling gives back the young generation', { skip: nodeMajor < 22 && `Node ${nodeMajor}'s V8 cannot be asked to (its memory reducer does it some 10 s after start); run by hand on Node 22 and 26` }, async (t) => {
  // Fill the young generation: V8 grows it while much is allocated.
  for (let round = 0; round < 50; round++) Array.from({ length: 100_000 }, (_, index) => ({ index }));
  t.ok(newSpaceBytes() > 2 * MIB, 'grown');
  settleMemory();
  t.ok(newSpaceBytes() <= 2 * MIB, `shrunk to ${newSpaceBytes()} bytes`);
});

t.test('the process settles once it has started, and again when it goes quiet after its heap grew, never while checks come', async (t) => {
  let now = 1_000_000;
  let heap = 40 * MIB;
  /** When each check came (epoch ms). */
  const checks: number[] = [];
  const settlings: Settled[] = [];
  const settling = new QuietSettling({
    settled: (settled) => settlings.push(settled),
    workedSince: (epochMs) => checks.some((at) => at > epochMs),
    settle: () => ({ heapBeforeBytes: heap, heapAfterBytes: (heap = 20 * MIB), millis: 30 }),
    heapBytes: () => heap,
    now: () => now,
  });
  checks.push((now += 500));
  settling.look();
  t.equal(settlings.length, 0, 'a check came as it started: not yet');
  now += 10_000;
  settling.look();
  t.equal(settlings.length, 1, 'quiet: settled, whatever the heap');
  heap = 25 * MIB;
  now += 10_000;
  settling.look();
  t.equal(settlings.length, 1, 'quiet, the heap grown 5 MiB: left alone');
  heap = 60 * MIB;
  checks.push((now += 9_999));
  now += 1;
  settling.look();
  t.equal(settlings.length, 1, 'grown 40 MiB, but a check came');
  now += 10_000;
  settling.look();
  t.same(settlings.length, 2, 'quiet again after it grew');
  t.same(settlings[1], { heapBeforeBytes: 60 * MIB, heapAfterBytes: 20 * MIB, millis: 30 });
});

t.test('the first settling waits for no growth: a heap smaller than the 8 MiB a regrowth needs is settled once quiet', async (t) => {
  const settlings: Settled[] = [];
  const settling = new QuietSettling({ settled: (settled) => settlings.push(settled), workedSince: () => false, settle: () => ({ heapBeforeBytes: 6 * MIB, heapAfterBytes: 4 * MIB, millis: 5 }), heapBytes: () => 6 * MIB });
  settling.look();
  t.equal(settlings.length, 1, 'settled at the first quiet look');
  settling.look();
  t.equal(settlings.length, 1, 'not again before it grew');
});

t.test('on a Node that gives no collector, settling does nothing and says nothing', async (t) => {
  const settlings: Settled[] = [];
  const settling = new QuietSettling({ settled: (settled) => settlings.push(settled), workedSince: () => false, settle: () => undefined, heapBytes: () => 100 * MIB });
  settling.look();
  settling.look();
  t.same(settlings, []);
});

t.test('verdict start settles its memory once it is ready, and says so', async (t) => {
  const cwd = scratchDir(t);
  const server = await startVerdict(t, ['--store', 'embedded', '--data-dir', join(cwd, 'data'), '--log-level', 'info'], { cwd });
  await outputMatches(server, /"heapBeforeMiB":\d+,"heapAfterMiB":\d+,"pauseMs":\d+,"thread":"front","msg":"settled memory"/);
  server.process.kill('SIGTERM');
  t.equal((await server.exited).code, 0);
});

t.test('a worker thread settles its memory too when no bulk came for a while after some did, and says so', async (t) => {
  const cwd = scratchDir(t);
  const server = await startVerdict(t, ['--store', 'embedded', '--data-dir', join(cwd, 'data'), '--log-level', 'info', '--evaluation', 'pool', '--workers', '1'], { cwd });
  const check = { principal: { attributes: { role: 'reader' } }, resource: { attributes: { id: '1' } }, action: 'read' };
  for (let bulk = 0; bulk < 20; bulk++) t.equal((await ask(server.url, 'POST', '/check/bulk', Array.from({ length: 100 }, () => check))).status, 200);
  t.match((await ask(server.url, 'GET', '/metrics')).body, /^verdict_worker_pool_threads 1$/m, 'decided by the worker thread');
  // The thread looks every 10 s, and settles at the first look that finds no bulk came since the one before.
  await outputMatches(server, /"heapBeforeMiB":\d+,"heapAfterMiB":\d+,"pauseMs":\d+,"thread":"worker","msg":"settled memory"/);
  t.equal((await ask(server.url, 'POST', '/check/bulk', [check])).status, 200, 'and decides bulks after');
  server.process.kill('SIGTERM');
  t.equal((await server.exited).code, 0);
});

t.test('with --no-settle-memory the process never settles', async (t) => {
  const never = scratchDir(t);
  const withoutSettling = await startVerdict(t, ['--store', 'embedded', '--data-dir', join(never, 'data'), '--log-level', 'info', '--no-settle-memory'], { cwd: never });
  // Started after it, a default process settles a second after it is ready: by then the first would have too.
  const usual = scratchDir(t);
  const settling = await startVerdict(t, ['--store', 'embedded', '--data-dir', join(usual, 'data'), '--log-level', 'info'], { cwd: usual });
  await outputMatches(settling, /"msg":"settled memory"/);
  for (const server of [withoutSettling, settling]) server.process.kill('SIGTERM');
  t.notMatch((await withoutSettling.exited).stdout, /settled memory/);
  await settling.exited;
});
