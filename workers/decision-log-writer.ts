/**
 * The decision log's writer thread: serializes the decisions the front sends it and appends them
 * to the log, or posts them to a collector. It runs at the lowest scheduling priority, so that on a
 * busy machine the decisions themselves keep the CPU; when it falls behind, the front drops lines
 * (and counts them) instead of waiting for it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { readlinkSync, writeSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import { bulkDecisionLines, decisionLine } from '../src/decision-log/line.js';
import { HttpSink } from '../src/decision-log/http-sink.js';
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

const { sink, unwritten, mask } = workerData as WriterStart;
const unwrittenLines = new Int32Array(unwritten);
const sleeper = new Int32Array(new SharedArrayBuffer(4));
const port = parentPort!;

/** Lines done with, which the front counted as `held` bytes: written, delivered, or dropped (then told to the front, which counts them). */
const done = (lines: number, held: number, dropped: boolean) => {
  if (dropped) port.postMessage({ dropped: lines } satisfies WriterReport);
  Atomics.sub(unwrittenLines, 0, lines);
  Atomics.sub(unwrittenLines, 1, held);
};

/** Blocks this thread only: stdout may be a non-blocking pipe, so a full one is waited out. */
function writeAll(fd: number, text: string): void {
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

/** Where a batch of lines goes: a file (written now) or a collector (posted in the background). */
const deliver: { add(text: string, lines: number, held: number): void; close(): Promise<void> } =
  'url' in sink
    ? new HttpSink(sink.url, { delivered: (lines, held) => done(lines, held, false), dropped: (lines, held) => done(lines, held, true) }, sink.closeWaitMillis)
    : {
        add(text, lines, held) {
          try {
            writeAll(sink.fd, text);
            done(lines, held, false);
          } catch {
            // The sink failed (a full disk, a closed pipe): these lines are lost, and counted as dropped.
            done(lines, held, true);
          }
        },
        close: async () => {},
      };

const serialize = (entry: DecisionLogEntry) => (entry.kind === 'bulk' ? bulkDecisionLines(entry.record, mask) : decisionLine(entry.record, mask));

lowerPriority();
port.on('message', (message: WriterMessage) => {
  if (message === 'close') {
    void deliver.close().then(() => port.close());
    return;
  }
  let text = '';
  let lines = 0;
  let held = 0;
  for (const entry of message) {
    text += serialize(entry);
    lines += linesOf(entry);
    held += entry.held;
  }
  deliver.add(text, lines, held);
});
