import { closeSync, openSync } from 'node:fs';
import { resolve } from 'node:path';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { PRIVATE_FILE } from '../private-files.js';
import { DECISION_LOG_WRITER_FILE } from '../../workers/entry-points.js';
import type { BulkDecisionRecord, DecisionRecord } from './line.js';
import type { DecisionLogMask } from './mask.js';
import { CLOSE_WAIT_MILLIS, type DecisionLogEntry, type WriterMessage, type WriterReport, type WriterStart } from './entries.js';
import { requestSizeWithin } from '../engine/json-size.js';

const isUrl = (target: string) => /^https?:/i.test(target);

/** The file the decision log is appended to, as an absolute path; undefined when it goes to stdout, a URL, or nowhere (''). */
export const decisionLogFile = (target: string): string | undefined => (target === '' || target === 'stdout' || isUrl(target) ? undefined : resolve(target));

/** Lines waiting to be written; past this, new lines are dropped and counted. */
export const DECISION_LOG_CAPACITY = 10_000;
/** What the lines waiting to be written hold, about, in bytes; past this, new lines are dropped and counted too. */
export const DECISION_LOG_CAPACITY_BYTES = 64 * 1024 * 1024;
/** What a line holds beside its check's attributes (ids, times, the decision and its reason), about. */
const LINE_BYTES = 512;

/** How a decision log holds and lets go of its lines. */
export interface DecisionLogOptions {
  /** Lines waiting to be written, at most (DECISION_LOG_CAPACITY by default). */
  capacity?: number;
  /** About how many bytes those lines may hold (DECISION_LOG_CAPACITY_BYTES by default). */
  capacityBytes?: number;
  /** The attributes whose values are never written as they are. */
  mask?: DecisionLogMask;
  /** For a collector: how long closing tries to deliver what is left before dropping it (5 s by default). */
  closeWaitMillis?: number;
}

/**
 * The opt-in decision log: one JSON line per decision. Recording a decision only appends it to a
 * batch; once per turn of the event loop the batch goes to a writer thread, which serializes and
 * writes it at the lowest priority, so decisions neither wait for the log nor pay for its lines.
 * When more than `capacity` lines, or about `capacityBytes` of them, are waiting, new ones are
 * dropped and `onDrop` is told: a slow sink never holds more than that in memory.
 */
export class DecisionLog {
  private batch: DecisionLogEntry[] = [];
  private batchLines = 0;
  private batchBytes = 0;
  private flushScheduled = false;
  private writerRunning = true;

  private constructor(
    private readonly writer: Worker,
    /** [0]: lines sent to the writer and not yet written; [1]: the bytes they were counted as. */
    private readonly unwritten: Int32Array,
    private readonly ownedFd: number | undefined,
    private readonly onDrop: (lines: number) => void,
    readonly capacity: number,
    readonly capacityBytes: number,
  ) {
    writer.on('message', (report: WriterReport) => onDrop(report.dropped));
    writer.on('error', () => {
      // Whatever the writer held is lost with it: counted, like every line from now on.
      this.writerRunning = false;
      Atomics.store(unwritten, 1, 0);
      onDrop(Atomics.exchange(unwritten, 0, 0));
    });
    // The log never keeps the process alive: close() ends it on shutdown.
    writer.unref();
  }

  /**
   * `target` is a file path (appended to, opened now so that a bad path fails at start), `stdout`, or
   * an http(s) URL, where the lines are posted in batches (see HttpSink).
   */
  static open(target: string, onDrop: (lines: number) => void, options: DecisionLogOptions = {}): DecisionLog {
    const { capacity = DECISION_LOG_CAPACITY, capacityBytes = DECISION_LOG_CAPACITY_BYTES, mask = {}, closeWaitMillis = CLOSE_WAIT_MILLIS } = options;
    const file = decisionLogFile(target);
    // A file made here is its user's alone; one that exists keeps the mode its owner gave it.
    const ownedFd = file === undefined ? undefined : openSync(file, 'a', PRIVATE_FILE);
    const sink = isUrl(target) ? { url: target, closeWaitMillis } : { fd: ownedFd ?? 1 };
    const start: WriterStart = { sink, unwritten: new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT), mask };
    const writer = new Worker(DECISION_LOG_WRITER_FILE, { workerData: start });
    return new DecisionLog(writer, new Int32Array(start.unwritten), ownedFd, onDrop, capacity, capacityBytes);
  }

  /** The lines waiting to be written or delivered, and the bytes they were counted as. */
  get queued(): { lines: number; bytes: number } {
    return { lines: Atomics.load(this.unwritten, 0) + this.batchLines, bytes: Atomics.load(this.unwritten, 1) + this.batchBytes };
  }

  /** A decision made on this thread. */
  record(record: DecisionRecord): void {
    // The check is in the line twice, as sent and as decided; a check past the whole capacity is not measured further.
    const held = LINE_BYTES + 2 * requestSizeWithin(record.request, { visits: Infinity, bytes: this.capacityBytes });
    this.add({ kind: 'decision', record: postable(record), held }, 1);
  }

  /** A bulk decided in a worker: its lines are made by the writer. */
  recordBulk(record: BulkDecisionRecord): void {
    this.add({ kind: 'bulk', record, held: record.count * LINE_BYTES + record.body.length + record.decisions.length }, record.count);
  }

  /** Sends what is batched, waits until the writer has written everything, and closes the file. */
  async close(): Promise<void> {
    this.flush();
    if (this.writerRunning) {
      const exited = once(this.writer, 'exit');
      this.writer.ref();
      this.writer.postMessage('close' satisfies WriterMessage);
      await exited;
    }
    if (this.ownedFd !== undefined) closeSync(this.ownedFd);
  }

  private add(entry: DecisionLogEntry, lines: number): void {
    const full = Atomics.load(this.unwritten, 0) + this.batchLines + lines > this.capacity || Atomics.load(this.unwritten, 1) + this.batchBytes + entry.held > this.capacityBytes;
    if (!this.writerRunning || full) {
      this.onDrop(lines);
      return;
    }
    this.batch.push(entry);
    this.batchLines += lines;
    this.batchBytes += entry.held;
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    if (this.batch.length === 0) return;
    Atomics.add(this.unwritten, 0, this.batchLines);
    Atomics.add(this.unwritten, 1, this.batchBytes);
    this.writer.postMessage(this.batch satisfies WriterMessage);
    this.batch = [];
    this.batchLines = 0;
    this.batchBytes = 0;
  };
}

/**
 * A record as it can be posted to the writer thread: a door that names the principal by its credential
 * (external authorization) gives the check a function to make its uri (`uriOf`), which the check and,
 * where nothing was merged into it, the decision request still carry; the log never reads it and no
 * thread can be sent it.
 */
function postable(record: DecisionRecord): DecisionRecord {
  const { input, request } = record;
  if (input.principal.uriOf === undefined && (request.principal as { uriOf?: unknown }).uriOf === undefined) return record;
  const withoutUriOf = <Principal extends object>(principal: Principal): Principal => {
    const { uriOf: _uriOf, ...kept } = principal as Principal & { uriOf?: unknown };
    return kept as Principal;
  };
  return { ...record, input: { ...input, principal: withoutUriOf(input.principal) }, request: { ...request, principal: withoutUriOf(request.principal) } };
}
