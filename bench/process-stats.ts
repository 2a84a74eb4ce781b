import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** The kernel's unit of process CPU time in /proc/<pid>/stat (USER_HZ, 100 on every common Linux). */
const CLOCK_TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** The processes `pid` has started, or none when it has exited meanwhile. */
function childrenOf(pid: number): number[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  return tasks.flatMap((task) => readProc(`${pid}/task/${task}/children`)?.split(' ').filter(Boolean).map(Number) ?? []);
}

/** A /proc file's text, or undefined when its process has exited meanwhile (a descendant may, at any time). */
function readProc(path: string): string | undefined {
  try {
    return readFileSync(`/proc/${path}`, 'utf8');
  } catch {
    return undefined;
  }
}

/** The texts of a /proc file of the process and of each descendant still running (the processes of `--processes N` are children of the first). */
function familyFiles(pid: number, file: string): string[] {
  const own = readFileSync(`/proc/${pid}/${file}`, 'utf8');
  const descendants = (child: number): string[] => {
    const text = readProc(`${child}/${file}`);
    return text === undefined ? [] : [text, ...childrenOf(child).flatMap(descendants)];
  };
  return [own, ...childrenOf(pid).flatMap(descendants)];
}

/** User and system CPU seconds used so far by the process, all its threads and its descendants. */
export function cpuSeconds(pid: number): number {
  let ticks = 0;
  for (const stat of familyFiles(pid, 'stat')) {
    // Fields after the command name, which is in parentheses and may hold spaces: utime and stime are the 12th and 13th.
    const fields = stat.split(') ').pop()!.split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / CLOCK_TICKS_PER_SECOND;
}

/** A field of /proc/<pid>/status, in kB, summed over the process and its descendants, in MiB. */
function statusMegabytes(pid: number, field: string): number {
  let kilobytes = 0;
  for (const status of familyFiles(pid, 'status')) {
    const line = status.split('\n').find((text) => text.startsWith(`${field}:`))!;
    kilobytes += Number(line.replace(/\D+/g, ''));
  }
  return kilobytes / 1024;
}

/** Resident memory of the process and its descendants, in MiB. */
export const rssMegabytes = (pid: number): number => statusMegabytes(pid, 'VmRSS');

/**
 * The part of it that is the process's own (anonymous: heaps, stacks, buffers), in MiB. The rest is
 * mapped files, above all the program itself, which every process of the same binary on a node shares
 * in the page cache and which the kernel may reclaim under pressure instead of killing.
 */
export const privateMegabytes = (pid: number): number => statusMegabytes(pid, 'RssAnon');
