import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** V8's collector as `--expose-gc` gives it: a full collection without options. */
type Collect = (options?: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/**
 * Whether V8 takes options, `flavor: 'last-resort'` among them, which also gives back what the heap
 * holds spare (the V8 of Node 22 and later; Node 20's ignores the collection asked that way).
 */
const LAST_RESORT_COLLECTION = Number(process.versions.v8.split('.')[0]) >= 12;

let collector: Collect | undefined;

/**
 * V8's collector, got without exposing it to the process's code: the flag is on for the one context
 * made here, which hands its `gc` back, and off again (as test runners get it). Null on a Node that
 * gives none that way, or when another thread turned the flag off in between (V8's flags are the
 * process's): not kept, so the next settling asks again.
 */
function v8Collector(): Collect | null {
  if (collector !== undefined) return collector;
  setFlagsFromString('--expose-gc');
  try {
    const exposed: unknown = runInNewContext('typeof gc === "function" ? gc : undefined');
    collector = exposed as Collect | undefined;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
  return collector ?? null;
}

/** What a settling did: V8's heap before and after, in bytes, and how long it paused the thread. */
export interface Settled {
  heapBeforeBytes: number;
  heapAfterBytes: number;
  millis: number;
}

const MIB = 1024 * 1024;

/** A settling as the log says it: the heap in MiB, the pause in ms. */
export const settledLogFields = ({ heapBeforeBytes, heapAfterBytes, millis }: Settled) => ({
  heapBeforeMiB: Math.round(heapBeforeBytes / MIB),
  heapAfterMiB: Math.round(heapAfterBytes / MIB),
  pauseMs: Math.round(millis),
});

/**
 * Collects all the garbage V8 can and gives back the memory its heap holds spare: the young
 * generation shrunk to its least, empty pages released (on Node 20, a full collection only). V8 does
 * this by itself only after old-space collections, which a server that starts and then waits, or goes
 * quiet after a burst, may never have; its heap then stays as large as its busiest moment. A pause of
 * some tens of ms. Undefined, and nothing done, on a Node that gives no collector.
 */
export function settleMemory(): Settled | undefined {
  const collect = v8Collector();
  if (collect === null) return undefined;
  const heapBeforeBytes = getHeapStatistics().total_heap_size;
  const startedAt = performance.now();
  collect(LAST_RESORT_COLLECTION ? { type: 'major', execution: 'sync', flavor: 'last-resort' } : undefined);
  return { heapBeforeBytes, heapAfterBytes: getHeapStatistics().total_heap_size, millis: performance.now() - startedAt };
}

/** When the process is first looked at after start-up, and how often after. */
const FIRST_LOOK_AFTER_MS = 1000;
const LOOK_EVERY_MS = 10_000;
/** How much the heap must have grown since it was last settled to be settled again. */
const REGROWTH_BYTES = 8 * 1024 * 1024;

export interface QuietSettlingOptions {
  /** Told of each settling. */
  settled: (settled: Settled) => void;
  /** Whether work came since a time (epoch ms): for a server, whether a check came. */
  workedSince: (epochMs: number) => boolean;
  settle?: () => Settled | undefined;
  heapBytes?: () => number;
  now?: () => number;
}

/**
 * Settles the memory of the thread it runs on, the front's or a worker's (see settleMemory), once it has started, and again each time it goes
 * quiet after its heap grew: when no work came since the last look and its heap is 8 MiB larger than
 * when last settled (any size the first time). Never while work comes: the pause would fall on it.
 */
export class QuietSettling {
  private readonly settled: (settled: Settled) => void;
  private readonly workedSince: (epochMs: number) => boolean;
  private readonly settle: () => Settled | undefined;
  private readonly heapBytes: () => number;
  private readonly now: () => number;
  private lastLookAt: number;
  /** The heap after the last settling; none yet: any size is settled the first time. */
  private heapWhenSettled: number | undefined;

  constructor(options: QuietSettlingOptions) {
    this.settled = options.settled;
    this.workedSince = options.workedSince;
    this.settle = options.settle ?? settleMemory;
    this.heapBytes = options.heapBytes ?? (() => getHeapStatistics().total_heap_size);
    this.now = options.now ?? Date.now;
    this.lastLookAt = this.now();
  }

  /** Looks a second after start-up, then every LOOK_EVERY_MS for as long as the thread runs. */
  start(): void {
    setTimeout(() => this.look(), FIRST_LOOK_AFTER_MS).unref();
    setInterval(() => this.look(), LOOK_EVERY_MS).unref();
  }

  /** Settles when no work came since the last look and the heap grew enough since the last settling. */
  look(): void {
    const quiet = !this.workedSince(this.lastLookAt);
    this.lastLookAt = this.now();
    if (quiet && (this.heapWhenSettled === undefined || this.heapBytes() - this.heapWhenSettled >= REGROWTH_BYTES)) this.settleNow();
  }

  private settleNow(): void {
    const settled = this.settle();
    if (settled === undefined) return;
    this.heapWhenSettled = settled.heapAfterBytes;
    this.settled(settled);
  }
}
