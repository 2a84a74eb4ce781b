import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { decisionLine, type DecisionRecord } from './line.js';

/** Lines held while the sink is busy; past this, new lines are dropped and counted. */
export const DECISION_LOG_CAPACITY = 10_000;

/** A decision not yet written: a record from this thread, or a line a worker already serialized. */
type Pending = DecisionRecord | string;

/**
 * The opt-in decision log: one JSON line per decision. A decision only appends to a bounded buffer;
 * lines are serialized and written on a later turn of the event loop, so the decision's response
 * never waits on them. When the sink falls behind and the buffer is full, lines are dropped and
 * `onDrop` is told, rather than memory growing or decisions slowing.
 */
export class DecisionLog {
  private pending: Pending[] = [];
  private flushScheduled = false;
  private waitingForDrain = false;

  private constructor(
    private readonly sink: Writable,
    private readonly ownsSink: boolean,
    private readonly onDrop: (lines: number) => void,
    private readonly capacity: number,
  ) {}

  /** `target` is a file path (appended to) or `stdout`. */
  static open(target: string, onDrop: (lines: number) => void, capacity = DECISION_LOG_CAPACITY): DecisionLog {
    if (target === 'stdout') return new DecisionLog(process.stdout, false, onDrop, capacity);
    return new DecisionLog(createWriteStream(target, { flags: 'a' }), true, onDrop, capacity);
  }

  record(entry: Pending): void {
    if (this.pending.length >= this.capacity) {
      this.onDrop(1);
      return;
    }
    this.pending.push(entry);
    this.scheduleFlush();
  }

  recordLines(lines: string[]): void {
    const room = Math.max(0, this.capacity - this.pending.length);
    if (lines.length > room) this.onDrop(lines.length - room);
    for (let index = 0; index < Math.min(room, lines.length); index++) this.pending.push(lines[index]!);
    this.scheduleFlush();
  }

  /** Writes what is buffered and, for a file, closes it. */
  async close(): Promise<void> {
    if (this.waitingForDrain) await once(this.sink, 'drain');
    this.flush();
    if (this.ownsSink) {
      this.sink.end();
      await once(this.sink, 'finish');
    }
  }

  private scheduleFlush(): void {
    if (this.flushScheduled || this.waitingForDrain || this.pending.length === 0) return;
    this.flushScheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    if (this.pending.length === 0) return;
    const entries = this.pending;
    this.pending = [];
    let text = '';
    for (const entry of entries) text += typeof entry === 'string' ? entry : decisionLine(entry);
    if (!this.sink.write(text)) {
      this.waitingForDrain = true;
      this.sink.once('drain', () => {
        this.waitingForDrain = false;
        this.scheduleFlush();
      });
    }
  };
}
