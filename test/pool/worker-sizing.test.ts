import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cgroupMemoryDirectories, cgroupMemoryLimit, detectParallelism } from '../../src/pool/parallelism.js';
import { WORKER_THREAD_MIB, workerSizing } from '../../src/pool/worker-sizing.js';
import { scratchDir, startServer } from '../helpers/server.js';

// The worker pool is sized to the pod, not to the node: --workers auto (the default) follows the
// cgroup CPU quota and the cores the process may run on, keeps no idle thread on a pod of one core
// or less, and stays within half the cgroup memory limit. Tested with cgroup files the test writes.

const MIB = 2 ** 20;

t.test('auto: a thread for each whole core beside the front thread, bounded by the memory limit; none idle on one core', async (t) => {
  const sized = (cores: number, cpuLimit?: number, memoryLimit?: number) => {
    const { threads, idleThreads } = workerSizing('auto', { cores, ...(cpuLimit !== undefined && { cpuLimit }), ...(memoryLimit !== undefined && { memoryLimit }) });
    return [threads, idleThreads];
  };
  t.same(sized(16, 0.5), [1, 0], 'a 16-core node, half a core: one thread, none idle (before: 16)');
  t.same(sized(64, 1), [1, 0], 'a 64-core node, one core: the same');
  t.same(sized(1), [1, 0], 'one core, no quota');
  t.same(sized(16, 2), [1, 1], 'two cores: one spare beside the front thread');
  t.same(sized(16, 4.7), [3, 3], 'four whole cores: three spare');
  t.same(sized(4), [3, 3], 'no quota: the cores the process may run on');
  t.same(sized(64, undefined, 128 * MIB), [Math.floor(64 / WORKER_THREAD_MIB), Math.floor(64 / WORKER_THREAD_MIB)], 'a 128 MiB limit: half of it, at a thread each');
  t.same(sized(64, undefined, 16 * MIB), [1, 1], 'at least one');
  t.same(workerSizing(16, { cores: 64, cpuLimit: 0.5 }), { threads: 16, idleThreads: 16, description: '16 worker threads (--workers 16)' }, 'as configured, when configured');
  t.same(
    workerSizing(16, { cores: 64, cpuLimit: 1, memoryLimit: 128 * MIB }),
    { threads: 3, idleThreads: 3, description: '3 worker threads (--workers 16, fewer: a memory limit of 128 MiB, of which half holds 3 at 20 MiB each)' },
    'as configured, but never more than half the memory limit holds: 16 threads would take some 320 MiB of a 128 MiB pod',
  );
  t.same(workerSizing(2, { cores: 64, memoryLimit: 128 * MIB }).threads, 2, 'a configured count the memory limit holds is kept');
  t.match(workerSizing('auto', { cores: 16, cpuLimit: 0.5, memoryLimit: 256 * MIB }).description, /^1 worker thread, started when work needs one and stopped when idle \(--workers auto\): 16 cores available, a cgroup CPU quota of 0\.5 cores, none spare beside the front thread; a memory limit of 256 MiB/);
});

t.test('the memory limit, read from the files of cgroup v2 and v1 in each cgroup that bounds the process', async (t) => {
  const root = scratchDir(t);
  mkdirSync(join(root, 'memory', 'kubepods', 'pod'), { recursive: true });
  mkdirSync(join(root, 'app'), { recursive: true });
  writeFileSync(join(root, 'memory', 'memory.limit_in_bytes'), '9223372036854771712\n');
  writeFileSync(join(root, 'memory', 'kubepods', 'pod', 'memory.limit_in_bytes'), `${200 * MIB}\n`);
  writeFileSync(join(root, 'app', 'memory.max'), `${300 * MIB}\n`);
  writeFileSync(join(root, 'memory.max'), 'max\n');
  const procSelfCgroup = '7:memory:/kubepods/pod\n0::/app\n';
  t.same(cgroupMemoryDirectories(procSelfCgroup, root), [join(root, 'app'), root, join(root, 'memory', 'kubepods', 'pod'), join(root, 'memory', 'kubepods'), join(root, 'memory')]);
  t.equal(cgroupMemoryLimit(join(root, 'app')), 300 * MIB, 'v2');
  t.equal(cgroupMemoryLimit(root), undefined, "v2's max: none");
  t.equal(cgroupMemoryLimit(join(root, 'memory')), undefined, "v1's largest value: none");
  t.equal(cgroupMemoryLimit(join(root, 'memory', 'kubepods', 'pod')), 200 * MIB, 'v1');
  writeFileSync(join(root, 'app', 'cpu.max'), '50000 100000\n');
  t.same(detectParallelism(root, procSelfCgroup, 16), { cores: 16, cpuLimit: 0.5, memoryLimit: 200 * MIB }, 'the smallest of each');
  t.same(detectParallelism(root, '', 16), { cores: 16 }, 'no cgroups: the cores alone');
});

t.test('/ready says how many worker threads there are and why', async (t) => {
  const server = await startServer({ workers: 'auto' });
  t.teardown(server.close);
  const ready = await server.call('GET', '/ready?verbose=true');
  t.match(ready.body.checks.worker_threads, /^\d+ worker threads? .*\(--workers auto\): \d+ cores? available/);
});
