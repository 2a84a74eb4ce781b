import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** The kernel's unit of process CPU time in /proc/<pid>/stat (USER_HZ, 100 on every common Linux). */
const CLOCK_TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** The process and its descendants (the processes of `--processes N` are children of the first). */
function family(pid: number): number[] {
  const children = readdirSync(`/proc/${pid}/task`).flatMap((task) => {
    try {
      return readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
    } catch {
      return [];
    }
  });
  return [pid, ...children.flatMap(family)];
}

/** User and system CPU seconds used so far by the process, all its threads and its descendants. */
export function cpuSeconds(pid: number): number {
  let ticks = 0;
  for (const member of family(pid)) {
    // Fields after the command name, which is in parentheses and may hold spaces: utime and stime are the 12th and 13th.
    const fields = readFileSync(`/proc/${member}/stat`, 'utf8').split(') ').pop()!.split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / CLOCK_TICKS_PER_SECOND;
}

/** Resident memory of the process and its descendants, in MB. */
export function rssMegabytes(pid: number): number {
  let kilobytes = 0;
  for (const member of family(pid)) {
    const line = readFileSync(`/proc/${member}/status`, 'utf8').split('\n').find((text) => text.startsWith('VmRSS:'))!;
    kilobytes += Number(line.replace(/\D+/g, ''));
  }
  return kilobytes / 1024;
}
