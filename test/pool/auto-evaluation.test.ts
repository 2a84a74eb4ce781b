import t, { type Test } from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { bulkPlacement, cgroupCpuDirectories, cgroupCpuLimit, detectParallelism, POOL_MINIMUM_BODY_LENGTH, readCgroupCpuFiles } from '../../src/pool/parallelism.js';
import { ask, childEnvironment, CLI, freePort, outputMatches, tracked, waitFor, type Child } from '../helpers/child.js';
import { scratchDir } from '../helpers/server.js';

// --evaluation auto sends big bulks to the worker pool only when a whole core is left beside the
// front thread, counting os.availableParallelism() and the cgroup CPU quota; /ready and the ready
// log line say what it chose.

t.test('the cgroup CPU quota, read from the files of cgroup v2 and v1', async (t) => {
  t.equal(cgroupCpuLimit({ cpuMax: '150000 100000\n' }), 1.5, 'v2: quota over period');
  t.equal(cgroupCpuLimit({ cpuMax: '10000 100000\n' }), 0.1, 'v2: a tenth of a core (100m)');
  t.equal(cgroupCpuLimit({ cpuMax: 'max 100000\n' }), undefined, 'v2: no quota');
  t.equal(cgroupCpuLimit({ cpuMax: 'max 100000\n', cfsQuotaUs: '50000\n', cfsPeriodUs: '100000\n' }), undefined, 'v2, where present, is the one in charge');
  t.equal(cgroupCpuLimit({ cfsQuotaUs: '200000\n', cfsPeriodUs: '100000\n' }), 2, 'v1: quota over period');
  t.equal(cgroupCpuLimit({ cfsQuotaUs: '-1\n', cfsPeriodUs: '100000\n' }), undefined, 'v1: -1 is no quota');
  t.equal(cgroupCpuLimit({ cfsQuotaUs: '50000\n' }), undefined, 'v1: a quota without its period says nothing');
  t.equal(cgroupCpuLimit({}), undefined, 'no files: no quota');
  for (const cpuMax of ['', 'nonsense', '0 100000', '100000 0', '-5 100000', '100000']) {
    t.equal(cgroupCpuLimit({ cpuMax }), undefined, `v2 ${JSON.stringify(cpuMax)}: nothing readable, no quota`);
  }
});

t.test("the files are read in each cgroup that bounds the process, and their absence tolerated", async (t) => {
  const root = scratchDir(t);
  mkdirSync(join(root, 'cpu,cpuacct', 'kubepods', 'pod'), { recursive: true });
  writeFileSync(join(root, 'cpu,cpuacct', 'cpu.cfs_period_us'), '100000\n');
  const procSelfCgroup = '5:cpuset:/\n4:cpu,cpuacct:/kubepods/pod\n2:cpuacct:/elsewhere\n0::/app\n';
  const v1 = join(root, 'cpu,cpuacct');
  t.same(cgroupCpuDirectories(procSelfCgroup, root), [join(root, 'app'), root, join(v1, 'kubepods', 'pod'), join(v1, 'kubepods'), v1], 'its own cgroups and their parents, v2 and v1');
  t.same(cgroupCpuDirectories('0::/\n', root), [root], 'in a container: the mount');
  t.same(cgroupCpuDirectories('', root), [], 'no /proc/self/cgroup: none');

  writeFileSync(join(root, 'cpu.max'), '50000 100000\n');
  t.equal(cgroupCpuLimit(readCgroupCpuFiles(root)), 0.5, 'v2');
  writeFileSync(join(v1, 'kubepods', 'pod', 'cpu.cfs_quota_us'), '300000\n');
  writeFileSync(join(v1, 'kubepods', 'pod', 'cpu.cfs_period_us'), '100000\n');
  t.equal(cgroupCpuLimit(readCgroupCpuFiles(join(v1, 'kubepods', 'pod'))), 3, 'v1');
  t.same(readCgroupCpuFiles(join(root, 'absent')), { cpuMax: undefined, cfsQuotaUs: undefined, cfsPeriodUs: undefined }, 'none there');
});

t.test('auto uses the pool only with a whole core spare beside the front thread', async (t) => {
  const auto = (cores: number, cpuLimit?: number, workers = 2) =>
    bulkPlacement('auto', cpuLimit === undefined ? { cores } : { cores, cpuLimit }, workers).poolMinimumBodyLength;
  t.equal(auto(1), undefined, 'one core: inline');
  t.equal(auto(2), POOL_MINIMUM_BODY_LENGTH, 'two cores: big bulks to the pool');
  t.equal(auto(64, 0.1), undefined, 'a quota of 100m on a big machine: inline');
  t.equal(auto(8, 1.9), undefined, 'a quota under two cores: inline (a worker would take its CPU time from the front)');
  t.equal(auto(8, 2), POOL_MINIMUM_BODY_LENGTH, 'a quota of two cores: the pool');
  t.equal(auto(1, 4), undefined, 'a quota above the cores the process may run on: the cores count');
  t.equal(auto(4, undefined, 1), POOL_MINIMUM_BODY_LENGTH, 'any pool size, when a core is spare');
  t.equal(bulkPlacement('auto', { cores: 4 }, 2).measured, true, 'with a core to spare, big bulks take the path measured faster');
  t.equal(bulkPlacement('auto', { cores: 1 }, 2).measured, false, 'with none, nothing to measure');
  t.equal(bulkPlacement('inline', { cores: 64 }, 8).poolMinimumBodyLength, undefined, 'inline as configured');
  t.equal(bulkPlacement('pool', { cores: 1, cpuLimit: 0.1 }, 1).poolMinimumBodyLength, 0, 'pool as configured');
  t.match(bulkPlacement('auto', { cores: 8, cpuLimit: 0.5 }, 2).description, /^inline \(--evaluation auto\): 8 cores available, a cgroup CPU quota of 0\.5 cores, none spare/);
  t.match(bulkPlacement('auto', { cores: 4 }, 2).description, /^pool for .* \(--evaluation auto\): 4 cores available, 3 cores spare beside the front thread for 2 worker threads$/);
});

/** A bulk body longer than auto's threshold, of checks naming no uri (the front decides those). */
const BIG_BULK = Array.from({ length: 200 }, (_, index) => ({ principal: { attributes: { n: index } }, resource: { attributes: { kind: 'doc' } }, action: 'read' }));

/** `verdict start` with one worker, under `taskset -c 0` (one core) when `oneCore`; ready, with its URL. */
async function startServer(t: Test, oneCore: boolean): Promise<Child & { url: string }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const args = [CLI, 'start', '--store', 'embedded', '--data-dir', join(scratchDir(t), 'data'), '--port', String(port), '--workers', '1'];
  const env = childEnvironment({ LOG_LEVEL: 'info', ADMIN_AUTHN_REQUIRED: 'false' });
  const child = tracked(t, oneCore ? spawn('taskset', ['-c', '0', process.execPath, ...args], { env }) : spawn(process.execPath, args, { env }));
  await waitFor(url, '/health', 200, child);
  await outputMatches(child, /"Verdict is ready"/);
  return { ...child, url };
}

/** The pool's running threads, from /metrics. */
async function poolThreads(url: string): Promise<number> {
  const metrics = await ask(url, 'GET', '/metrics');
  return Number(/^verdict_worker_pool_threads (\d+)$/m.exec(metrics.body)![1]);
}

/** The ready line's and /ready's account of where bulks go, after a big bulk was answered; and whether the pool started for it. */
async function afterABigBulk(t: Test, server: Child & { url: string }) {
  t.ok(JSON.stringify(BIG_BULK).length >= POOL_MINIMUM_BODY_LENGTH, 'the bulk is big enough for the pool');
  const answered = await ask(server.url, 'POST', '/check/bulk', BIG_BULK);
  t.equal(answered.status, 200);
  t.equal(answered.body.length, BIG_BULK.length);
  const readyLine = server.output().stdout.split('\n').find((line) => line.includes('"Verdict is ready"'))!;
  const ready = await ask(server.url, 'GET', '/ready?verbose=true');
  t.equal(ready.status, 200);
  t.equal(ready.body.degraded, false, 'the choice is no failing condition');
  t.equal(ready.body.detail, undefined);
  return { logged: JSON.parse(readyLine).evaluation as string, reported: ready.body.checks.evaluation as string, threads: await poolThreads(server.url) };
}

const taskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0;

t.test('on one core, auto decides every bulk on the front and says so', { skip: !taskset && 'taskset (util-linux) is not installed' }, async (t) => {
  const { logged, reported, threads } = await afterABigBulk(t, await startServer(t, true));
  t.match(reported, /^inline \(--evaluation auto\): 1 core available/, '/ready says where bulks go and why');
  t.equal(logged, reported, 'the ready line says the same');
  t.equal(threads, 0, 'the big bulk started no worker thread');
});

t.test('on this machine, auto does what its rule says for the cores and quota it has', async (t) => {
  const expected = bulkPlacement('auto', detectParallelism(), 1);
  const { logged, reported, threads } = await afterABigBulk(t, await startServer(t, false));
  t.equal(reported, expected.description);
  t.equal(logged, expected.description);
  // With a core to spare, inline is measured first (see measured-placement.test.ts): the first bulk stays on the front either way.
  t.equal(threads, 0, `${availableParallelism()} cores: the big bulk stayed on the front (${expected.measured ? 'inline measured first' : 'none spare'})`);
});
