import { closeSync, openSync } from 'node:fs';
import { resolve } from 'node:path';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { PRIVATE_FILE } from '../private-files.js';
import { DECISION_LOG_WRITER_FILE } from '../../workers/entry-points.js';
import type { BulkDecisionRecord, DecisionRecord } from './line.js';
import type { DecisionLogMask } from './mask.js';
import { linesOf, type DecisionLogEntry, type WriterMessage, type WriterReport, type WriterStart } from './entries.js';

const isUrl = (target: string) => /^https?:/i.test(target);

/** The file the decision log is appended to, as an absolute path; undefined when it goes to stdout, a URL, or nowhere (''). */
export const decisionLogFile = (target: string): string | undefined => (target === '' || target === 'stdout' || isUrl(target) ? undefined : resolve(target));

/** Lines waiting to be written; past this, new lines are dropped and counted. */
export const DECISION_LOG_CAPACITY = 10_000;

/**
 * The opt-in decision log: one JSON line per decision. Recording a decision only appends it to a
 * batch; once per turn of the event loop the batch goes to a writer thread, which serializes and
 * writes it at the lowest priority, so decisions neither wait for the log nor pay for its lines.
 * When more than `capacity` lines are waiting, new ones are dropped and `onDrop` is told.
 */
export class DecisionLog {
  private batch: DecisionLogEntry[] = [];
  private batchLines = 0;
  private flushScheduled = false;
  private writerRunning = true;

  private constructor(
    private readonly writer: Worker,
    /** [0]: lines sent to the writer and not yet written. */
    private readonly unwritten: Int32Array,
    private readonly ownedFd: number | undefined,
    private readonly onDrop: (lines: number) => void,
    private readonly capacity: number,
  ) {
    writer.on('message', (report: WriterReport) => onDrop(report.dropped));
    writer.on('error', () => {
      // Whatever the writer held is lost with it: counted, like every line from now on.
      this.writerRunning = false;
      onDrop(Atomics.exchange(unwritten, 0, 0));
    });
    // The log never keeps the process alive: close() ends it on shutdown.
    writer.unref();
  }

  /**
   * `target` is a file path (appended to, opened now so that a bad path fails at start), `stdout`, or
   * an http(s) URL, where the lines are posted in batches (see HttpSink). `mask` names the attributes
   * whose values are never written as they are.
   */
  static open(target: string, onDrop: (lines: number) => void, capacity = DECISION_LOG_CAPACITY, mask: DecisionLogMask = {}): DecisionLog {
    const file = decisionLogFile(target);
    // A file made here is its user's alone; one that exists keeps the mode its owner gave it.
    const ownedFd = file === undefined ? undefined : openSync(file, 'a', PRIVATE_FILE);
    const sink = isUrl(target) ? { url: target } : { fd: ownedFd ?? 1 };
    const start: WriterStart = { sink, unwritten: new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT), mask };
    const writer = new Worker(DECISION_LOG_WRITER_FILE, { workerData: start });
    return new DecisionLog(writer, new Int32Array(start.unwritten), ownedFd, onDrop, capacity);
  }

  /** A decision made on this thread. */
  record(record: DecisionRecord): void {
    this.add({ kind: 'decision', record: postable(record) });
  }

  /** A bulk decided in a worker: its lines are made by the writer. */
  recordBulk(record: BulkDecisionRecord): void {
    this.add({ kind: 'bulk', record });
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

  private add(entry: DecisionLogEntry): void {
    const lines = linesOf(entry);
    if (!this.writerRunning || Atomics.load(this.unwritten, 0) + this.batchLines + lines > this.capacity) {
      this.onDrop(lines);
      return;
    }
    this.batch.push(entry);
    this.batchLines += lines;
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    if (this.batch.length === 0) return;
    Atomics.add(this.unwritten, 0, this.batchLines);
    this.writer.postMessage(this.batch satisfies WriterMessage);
    this.batch = [];
    this.batchLines = 0;
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
