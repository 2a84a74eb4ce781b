import type { BulkDecisionRecord, DecisionRecord } from './line.js';
import type { DecisionLogMask } from './mask.js';

/**
 * What the front sends the decision log's writer thread, in batches: decisions to serialize and write,
 * in order, each with the bytes the front counts it as holding until it is written (see DecisionLog).
 */
export type DecisionLogEntry = ({ kind: 'decision'; record: DecisionRecord } | { kind: 'bulk'; record: BulkDecisionRecord }) & { held: number };

/** How many log lines an entry stands for. */
export const linesOf = (entry: DecisionLogEntry) => (entry.kind === 'bulk' ? entry.record.count : 1);

export type WriterMessage = DecisionLogEntry[] | 'close';

/** On close, what is still to deliver to a collector is tried for at most this long by default, then dropped. */
export const CLOSE_WAIT_MILLIS = 5000;

/** What the writer thread is given when it starts. */
export interface WriterStart {
  /** Where the lines go: appended to an open file descriptor (1 for stdout), or posted to a collector's URL. */
  sink: { fd: number } | { url: string; closeWaitMillis: number };
  /** An Int32Array's buffer: [0] counts lines sent to the writer and not yet written (or dropped), [1] the bytes the front counted them as. */
  unwritten: SharedArrayBuffer;
  /** The attributes whose values are never written as they are. */
  mask: DecisionLogMask;
}

/** What the writer tells the front: lines it could not write. */
export interface WriterReport {
  dropped: number;
}
