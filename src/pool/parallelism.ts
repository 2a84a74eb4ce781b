import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import type { Evaluation } from '../config/config.js';

/** The cgroup files that bound this process's CPU time, as read (absent: no such file). */
export interface CgroupCpuFiles {
  /** cgroup v2 `cpu.max`: `<quota> <period>` in µs, or `max <period>`. */
  cpuMax?: string;
  /** cgroup v1 `cpu.cfs_quota_us` (-1: none) and `cpu.cfs_period_us`. */
  cfsQuotaUs?: string;
  cfsPeriodUs?: string;
}

const CGROUP_ROOT = '/sys/fs/cgroup';

const positive = (text: string | undefined): number | undefined => {
  const value = Number(text?.trim());
  return text !== undefined && text.trim() !== '' && Number.isFinite(value) && value > 0 ? value : undefined;
};

/**
 * The cores' worth of CPU time the cgroup quota allows (1.5: one and a half cores), or undefined when
 * there is no quota, or the files are absent or say nothing readable. Where v2's `cpu.max` is present, it
 * alone is read: that cgroup is the one in charge.
 */
export function cgroupCpuLimit(files: CgroupCpuFiles): number | undefined {
  if (files.cpuMax !== undefined) {
    const [quota, period] = files.cpuMax.trim().split(/\s+/);
    const [quotaUs, periodUs] = [positive(quota), positive(period)];
    return quotaUs !== undefined && periodUs !== undefined ? quotaUs / periodUs : undefined;
  }
  const [quotaUs, periodUs] = [positive(files.cfsQuotaUs), positive(files.cfsPeriodUs)];
  return quotaUs !== undefined && periodUs !== undefined ? quotaUs / periodUs : undefined;
}

const readIfPresent = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

/** The cgroup CPU files in one cgroup directory: v2's `cpu.max`, or v1's in the cpu controller's directory; those absent are left out. */
export function readCgroupCpuFiles(dir: string): CgroupCpuFiles {
  return { cpuMax: readIfPresent(`${dir}/cpu.max`), cfsQuotaUs: readIfPresent(`${dir}/cpu.cfs_quota_us`), cfsPeriodUs: readIfPresent(`${dir}/cpu.cfs_period_us`) };
}

/** `path` and each parent of it up to the mount, under `mount`. */
const withAncestors = (mount: string, path: string): string[] => {
  const parts = path.split('/').filter(Boolean);
  return parts.map((_, index) => `${mount}/${parts.slice(0, parts.length - index).join('/')}`).concat(mount);
};

/**
 * The directories whose cgroup CPU quotas bound this process, from `/proc/self/cgroup`'s text: its
 * own cgroup's and each parent's, v2 (`0::<path>`) and v1 (the `cpu` controller's line). In a
 * container the paths are `/`, the mount itself.
 */
export function cgroupCpuDirectories(procSelfCgroup: string, root = CGROUP_ROOT): string[] {
  const v2 = /^0::(\/.*)$/m.exec(procSelfCgroup)?.[1];
  const v1 = /^\d+:(?:[^:]*,)?cpu(?:,[^:]*)?:(\/.*)$/m.exec(procSelfCgroup)?.[1];
  const v1Mount = ['cpu', 'cpu,cpuacct', 'cpuacct,cpu'].map((name) => `${root}/${name}`).find((mount) => readIfPresent(`${mount}/cpu.cfs_period_us`) !== undefined);
  return [...(v2 === undefined ? [] : withAncestors(root, v2)), ...(v1 === undefined || v1Mount === undefined ? [] : withAncestors(v1Mount, v1))];
}

/** The CPU this process may use: the cores the OS lets it run on, and the cgroup quota when there is one. */
export interface Parallelism {
  /** os.availableParallelism(): the cores this process may be scheduled on. */
  cores: number;
  /** The cgroup CPU quota in cores, when there is one. */
  cpuLimit?: number;
}

/** This process's parallelism, read once (at start): the smallest quota of its cgroups, when any has one. */
export function detectParallelism(): Parallelism {
  const limits = cgroupCpuDirectories(readIfPresent('/proc/self/cgroup') ?? '')
    .map((dir) => cgroupCpuLimit(readCgroupCpuFiles(dir)))
    .filter((limit) => limit !== undefined);
  const cpuLimit = limits.length === 0 ? undefined : Math.min(...limits);
  return cpuLimit === undefined ? { cores: availableParallelism() } : { cores: availableParallelism(), cpuLimit };
}

/**
 * Bulk bodies this many bytes (about 60 checks) or longer go to the worker pool in auto mode when it
 * has a core to run on: below it, the thread hop (~55 µs of latency) costs more than reading and
 * deciding the body on the front.
 */
export const POOL_MINIMUM_BODY_LENGTH = 8192;

/** Where bulk checks are decided: which go to the worker pool, and why, in words for the log and /ready. */
export interface BulkPlacement {
  /** Bulk bodies at least this long (or explained) go to the pool; undefined: none does. */
  poolMinimumBodyLength: number | undefined;
  /** Those bodies go to the pool only while it measures faster than the front thread (see MeasuredPlacement); explained ones always. */
  measured: boolean;
  description: string;
}

const cores = (count: number) => `${Number(count.toFixed(2))} core${count === 1 ? '' : 's'}`;

/**
 * Where bulks go. `inline` and `pool` as configured. `auto` counts the whole cores this process may
 * use (the fewer of os.availableParallelism() and the cgroup quota, rounded down, at least one) and
 * gives one to the front thread: with none left over, a worker could only run by taking CPU time from
 * the front, so the hop to a thread and back is pure cost and every bulk is decided on the front; with
 * one or more, explained bulks go to the pool, whose `workers` threads share the spare cores, and big
 * ones take the path measured faster while serving (something else, such as a load generator, may
 * take the spare core).
 */
export function bulkPlacement(mode: Evaluation, parallelism: Parallelism, workers: number): BulkPlacement {
  if (mode === 'inline') return { poolMinimumBodyLength: undefined, measured: false, description: 'inline (--evaluation inline): every bulk decided on the front thread' };
  if (mode === 'pool') return { poolMinimumBodyLength: 0, measured: false, description: `pool (--evaluation pool): every bulk decided by the ${workers} worker thread${workers === 1 ? '' : 's'}` };
  const usable = Math.max(1, Math.floor(Math.min(parallelism.cores, parallelism.cpuLimit ?? Infinity)));
  const spare = usable - 1;
  const available = `${cores(parallelism.cores)} available${parallelism.cpuLimit === undefined ? '' : `, a cgroup CPU quota of ${cores(parallelism.cpuLimit)}`}`;
  if (spare === 0) return { poolMinimumBodyLength: undefined, measured: false, description: `inline (--evaluation auto): ${available}, none spare beside the front thread` };
  const pool = `${workers} worker thread${workers === 1 ? '' : 's'}`;
  return {
    poolMinimumBodyLength: POOL_MINIMUM_BODY_LENGTH,
    measured: true,
    description: `pool for explained bulks, and for bulks of ${POOL_MINIMUM_BODY_LENGTH} bytes or more while it measures faster than the front thread (--evaluation auto): ${available}, ${cores(spare)} spare beside the front thread for ${pool}`,
  };
}
