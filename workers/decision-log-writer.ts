/**
 * The decision log's writer thread: serializes the decisions the front sends it and appends them
 * to the log. It runs at the lowest scheduling priority, so that on a busy machine the decisions
 * themselves keep the CPU; when it falls behind, the front drops lines (and counts them) instead of
 * waiting for it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { readlinkSync, writeSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import { bulkDecisionLines, decisionLine } from '../src/decision-log/line.js';
import { linesOf, type DecisionLogEntry, type WriterMessage, type WriterReport, type WriterStart } from '../src/decision-log/entries.js';

const FULL_PIPE_WAIT_MS = 10;

function lowerPriority(): void {
  try {
    // On Linux each thread has its own nice value, set through its kernel thread id.
    const kernelThreadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
    setPriority(kernelThreadId, constants.priority.PRIORITY_LOW);
  } catch {
    // Not Linux: the writer runs at the process's priority, and dropping lines still bounds its cost.
  }
}

const { fd, unwritten } = workerData as WriterStart;
const unwrittenLines = new Int32Array(unwritten);
const sleeper = new Int32Array(new SharedArrayBuffer(4));
const port = parentPort!;

/** Blocks this thread only: stdout may be a non-blocking pipe, so a full one is waited out. */
function writeAll(text: string): void {
  let rest = Buffer.from(text);
  while (rest.length > 0) {
    try {
      rest = rest.subarray(writeSync(fd, rest));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
      Atomics.wait(sleeper, 0, 0, FULL_PIPE_WAIT_MS);
    }
  }
}

const serialize = (entry: DecisionLogEntry) => (entry.kind === 'bulk' ? bulkDecisionLines(entry.record) : decisionLine(entry.record));

lowerPriority();
port.on('message', (message: WriterMessage) => {
  if (message === 'close') {
    port.close();
    return;
  }
  let text = '';
  let lines = 0;
  for (const entry of message) {
    text += serialize(entry);
    lines += linesOf(entry);
  }
  try {
    writeAll(text);
  } catch {
    // The sink failed (a full disk, a closed pipe): these lines are lost, and counted as dropped.
    port.postMessage({ dropped: lines } satisfies WriterReport);
  }
  Atomics.sub(unwrittenLines, 0, lines);
});
