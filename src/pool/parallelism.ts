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

/** A cgroup v1 controller: its name in `/proc/self/cgroup`, the names its hierarchy may be mounted under, and a file every one of its directories holds. */
interface V1Controller {
  name: string;
  mounts: readonly string[];
  probe: string;
}

const V1_CPU: V1Controller = { name: 'cpu', mounts: ['cpu', 'cpu,cpuacct', 'cpuacct,cpu'], probe: 'cpu.cfs_period_us' };
const V1_MEMORY: V1Controller = { name: 'memory', mounts: ['memory'], probe: 'memory.limit_in_bytes' };

/**
 * The directories whose limits of one controller bound this process, from `/proc/self/cgroup`'s text:
 * its own cgroup's and each parent's, v2 (`0::<path>`) and v1 (the controller's line). In a container
 * the paths are `/`, the mount itself.
 */
function cgroupDirectories(procSelfCgroup: string, root: string, controller: V1Controller): string[] {
  const v2 = /^0::(\/.*)$/m.exec(procSelfCgroup)?.[1];
  const v1 = new RegExp(`^\\d+:(?:[^:]*,)?${controller.name}(?:,[^:]*)?:(\\/.*)$`, 'm').exec(procSelfCgroup)?.[1];
  const v1Mount = controller.mounts.map((name) => `${root}/${name}`).find((mount) => readIfPresent(`${mount}/${controller.probe}`) !== undefined);
  return [...(v2 === undefined ? [] : withAncestors(root, v2)), ...(v1 === undefined || v1Mount === undefined ? [] : withAncestors(v1Mount, v1))];
}

/** The directories whose cgroup CPU quotas bound this process (see cgroupDirectories). */
export const cgroupCpuDirectories = (procSelfCgroup: string, root = CGROUP_ROOT): string[] => cgroupDirectories(procSelfCgroup, root, V1_CPU);

/** The directories whose cgroup memory limits bound this process (see cgroupDirectories). */
export const cgroupMemoryDirectories = (procSelfCgroup: string, root = CGROUP_ROOT): string[] => cgroupDirectories(procSelfCgroup, root, V1_MEMORY);

/** cgroup v1's `memory.limit_in_bytes` when no limit is set: the largest page-aligned 64-bit value, or near it. */
const V1_NO_MEMORY_LIMIT = 2 ** 60;

/** The memory limit in bytes of one cgroup directory (v2's `memory.max`, else v1's `memory.limit_in_bytes`), or undefined when there is none. */
export function cgroupMemoryLimit(dir: string): number | undefined {
  const v2 = readIfPresent(`${dir}/memory.max`);
  if (v2 !== undefined) return positive(v2);
  const v1 = positive(readIfPresent(`${dir}/memory.limit_in_bytes`));
  return v1 === undefined || v1 >= V1_NO_MEMORY_LIMIT ? undefined : v1;
}

/** The CPU this process may use: the cores the OS lets it run on, and the cgroup quota when there is one; and its memory limit. */
export interface Parallelism {
  /** os.availableParallelism(): the cores this process may be scheduled on. */
  cores: number;
  /** The cgroup CPU quota in cores, when there is one. */
  cpuLimit?: number;
  /** The cgroup memory limit in bytes, when there is one. */
  memoryLimit?: number;
}

const smallest = (values: (number | undefined)[]): number | undefined => {
  const present = values.filter((value) => value !== undefined);
  return present.length === 0 ? undefined : Math.min(...present);
};

/**
 * This process's parallelism, read once (at start): the smallest CPU quota and memory limit of its
 * cgroups, when any has one. `root` and `procSelfCgroup` are where they are read from (a test's files).
 */
export function detectParallelism(root = CGROUP_ROOT, procSelfCgroup = readIfPresent('/proc/self/cgroup') ?? '', cores = availableParallelism()): Parallelism {
  const cpuLimit = smallest(cgroupCpuDirectories(procSelfCgroup, root).map((dir) => cgroupCpuLimit(readCgroupCpuFiles(dir))));
  const memoryLimit = smallest(cgroupMemoryDirectories(procSelfCgroup, root).map(cgroupMemoryLimit));
  return { cores, ...(cpuLimit !== undefined && { cpuLimit }), ...(memoryLimit !== undefined && { memoryLimit }) };
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
