import type { Parallelism } from './parallelism.js';

/**
 * What one worker thread adds to the process's RSS once it has decided bulks (its V8 isolate, the
 * modules it loads, its copy of the policies): measured at about 18 MiB with 100 policies
 * (`--workers 16` against `--workers 2` under bulk load), rounded up.
 */
export const WORKER_THREAD_MIB = 20;
/** The share of a memory limit the worker threads may take together; the rest is the front's. */
const WORKERS_SHARE_OF_MEMORY = 0.5;
/** How long a thread of a pool that keeps none idle waits for more work before it stops. */
export const IDLE_THREAD_TIMEOUT_MS = 30_000;

/** How many worker threads the pool may run, how many it keeps when idle, and why, in words for the start log and /ready. */
export interface WorkerSizing {
  threads: number;
  idleThreads: number;
  description: string;
}

const cores = (count: number) => `${Number(count.toFixed(2))} core${count === 1 ? '' : 's'}`;
const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;
const threadsOf = (count: number) => `${count} worker thread${count === 1 ? '' : 's'}`;

/** How many threads half the cgroup memory limit holds (Infinity without a limit), and that in words. */
function memoryBound(memoryLimit: number | undefined): { threads: number; words: string } {
  if (memoryLimit === undefined) return { threads: Infinity, words: '' };
  const threads = Math.max(1, Math.floor((memoryLimit * WORKERS_SHARE_OF_MEMORY) / (WORKER_THREAD_MIB * 2 ** 20)));
  return { threads, words: `a memory limit of ${mib(memoryLimit)}, of which half holds ${threads} at ${WORKER_THREAD_MIB} MiB each` };
}

/**
 * The worker pool's size: as `--workers` says, or (`auto`) sized to what the pod may use: a thread
 * for each whole core beside the front thread's (the fewer of the cores the process may run on and
 * its cgroup CPU quota), at least one. Either way no more than half its cgroup memory limit holds:
 * a count asked for that the pod cannot hold would only end in its OOM kill. On a pod of one core or
 * less, `auto` keeps no thread idle: the one thread starts when work needs it (a plan, an explained
 * bulk, `--evaluation pool`) and stops when idle.
 */
export function workerSizing(configured: number | 'auto', parallelism: Parallelism): WorkerSizing {
  const byMemory = memoryBound(parallelism.memoryLimit);
  if (configured !== 'auto') {
    if (configured <= byMemory.threads) return { threads: configured, idleThreads: configured, description: `${threadsOf(configured)} (--workers ${configured})` };
    const threads = byMemory.threads;
    return { threads, idleThreads: threads, description: `${threadsOf(threads)} (--workers ${configured}, fewer: ${byMemory.words})` };
  }
  const usable = Math.max(1, Math.floor(Math.min(parallelism.cores, parallelism.cpuLimit ?? Infinity)));
  const byCpu = Math.max(1, usable - 1);
  const threads = Math.min(byCpu, byMemory.threads);
  const cpu = `${cores(parallelism.cores)} available${parallelism.cpuLimit === undefined ? '' : `, a cgroup CPU quota of ${cores(parallelism.cpuLimit)}`}`;
  const memory = byMemory.words === '' ? '' : `; ${byMemory.words}`;
  if (usable <= 1) {
    return { threads, idleThreads: 0, description: `${threadsOf(threads)}, started when work needs one and stopped when idle (--workers auto): ${cpu}, none spare beside the front thread${memory}` };
  }
  return { threads, idleThreads: threads, description: `${threadsOf(threads)} (--workers auto): ${cpu}, ${cores(usable - 1)} spare beside the front thread${memory}` };
}
