import { existsSync, mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const CFS_PERIOD_MICROS = 100_000;

/** A pod's limits, as the kubelet sets them: CPU in cores, memory in bytes. */
export interface PodLimits {
  cpu?: number;
  memoryBytes?: number;
}

/** A cgroup made for a bench: the command line that starts a process in it, and how to remove it. */
export interface BenchGroup {
  wrap: (command: string[]) => string[];
  remove: () => void;
}

/**
 * New cgroups with `limits` (v2 at /sys/fs/cgroup; else v1's cpu and memory controllers, one group
 * each), the command line that starts a process in them, and how to remove them; or why none could be
 * made (not root, no writable cgroup mount).
 */
export function podGroup(limits: PodLimits, name: string): BenchGroup | string {
  const quota = limits.cpu === undefined ? undefined : Math.round(limits.cpu * CFS_PERIOD_MICROS);
  const memory = limits.memoryBytes === undefined ? undefined : String(limits.memoryBytes);
  // Each mount is told by a file only a cgroup file system holds (a hybrid host mounts a tmpfs at /sys/fs/cgroup).
  const v2 = { mount: '/sys/fs/cgroup', marker: 'cgroup.controllers', files: { ...(quota !== undefined && { 'cpu.max': `${quota} ${CFS_PERIOD_MICROS}` }), ...(memory !== undefined && { 'memory.max': memory }) } };
  const v1 = [
    ...(quota === undefined ? [] : [{ mount: '/sys/fs/cgroup/cpu', marker: 'cpu.cfs_period_us', files: { 'cpu.cfs_period_us': String(CFS_PERIOD_MICROS), 'cpu.cfs_quota_us': String(quota) } }]),
    ...(memory === undefined ? [] : [{ mount: '/sys/fs/cgroup/memory', marker: 'memory.limit_in_bytes', files: { 'memory.limit_in_bytes': memory } }]),
  ];
  const failures: string[] = [];
  for (const layout of [[v2], v1]) {
    const made: string[] = [];
    try {
      for (const { mount, marker, files } of layout) {
        if (!existsSync(join(mount, marker))) throw new Error(`no cgroup file system at ${mount}`);
        const dir = join(mount, name);
        mkdirSync(dir);
        made.push(dir);
        for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
      }
      const enter = made.map((dir) => `echo $$ > ${dir}/cgroup.procs`).join(' && ');
      // The shell enters the groups and then becomes the server, which starts inside them.
      return { wrap: (command) => ['/bin/sh', '-c', `${enter} && exec "$@"`, 'sh', ...command], remove: () => made.forEach((dir) => rmdirSync(dir)) };
    } catch (error) {
      failures.push((error as Error).message);
      for (const dir of made) rmdirSync(dir);
    }
  }
  return failures.join('; ');
}
