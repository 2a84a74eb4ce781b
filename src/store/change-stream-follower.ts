import { setTimeout as sleep } from 'node:timers/promises';
import { MongoServerError, type ChangeStreamDocument, type ResumeToken, type Timestamp } from 'mongodb';
import type { StoreChange, StoreChangeListener } from './store.js';

/** Where a change stream opens: after a change, at an operation time, or (empty) wherever the server is now. */
export type StreamStart =
  | { resumeAfter: ResumeToken }
  | { startAfter: ResumeToken }
  | { startAtOperationTime: Timestamp }
  | Record<string, never>;

/** What the follower uses of a change stream: the driver's ChangeStream, or a scripted one in tests. */
export interface FollowedStream extends AsyncIterable<ChangeStreamDocument> {
  /** The driver moves the token after every event and every empty batch: the stream is live. */
  on(event: 'resumeTokenChanged', listener: (token: ResumeToken) => void): unknown;
  close(): Promise<void>;
}

export interface FollowerOptions {
  /** Follow from this operation time (a load's); without it, from wherever the first stream opens. */
  from?: Timestamp;
  /** Pause before reopening a failed stream: `first`, doubling after each failure up to `max`. */
  backoffMillis?: { first: number; max: number };
}

/** Server codes after which a change stream cannot resume from its token (CappedPositionLost, ChangeStreamFatalError, ChangeStreamHistoryLost). */
const HISTORY_LOST = new Set([136, 280, 286]);
const BACKOFF_MILLIS = { first: 100, max: 5000 };
/** Events that say the followed collections' history is gone (dropped or renamed): reload everything. */
const RESET_EVENTS = new Set(['drop', 'rename', 'dropDatabase']);

/**
 * When a change was committed, epoch ms: the event's wall time (MongoDB 6.0 and later), else its
 * cluster time, which counts whole seconds.
 */
function commitTime(event: { wallTime?: Date; clusterTime?: Timestamp }): number | undefined {
  if (event.wallTime !== undefined) return event.wallTime.getTime();
  return event.clusterTime === undefined ? undefined : event.clusterTime.t * 1000;
}

/** The store change an event announces, if any. */
function changeOf(event: ChangeStreamDocument): StoreChange | undefined {
  if (RESET_EVENTS.has(event.operationType)) return { kind: 'everything' };
  if (!('ns' in event) || !('documentKey' in event)) return undefined;
  const committedAt = commitTime(event);
  if (event.ns.coll === 'policies') return { kind: 'policies', committedAt };
  return { kind: 'entity', uri: String((event.documentKey as { _id: unknown })._id), committedAt };
}

/**
 * Follows a change stream for as long as it is not stopped, and never loses a change silently:
 * a stream that fails is reopened after a growing pause, after the last resume token seen (the
 * driver moves it on empty batches too) or, before any, at the starting operation time. When
 * there is no such point, or the server has lost the history to resume from, the new stream is
 * opened first and `everything` announced once it is live, so a write in between is not missed.
 */
export class ChangeStreamFollower {
  private start: StreamStart;
  private stream: FollowedStream | undefined;
  private interrupted = false;
  private reloadWhenLive = false;
  private readonly stopping = new AbortController();
  /** Settles when the follower has stopped. */
  readonly finished: Promise<void>;

  constructor(
    private readonly open: (start: StreamStart) => FollowedStream,
    private readonly listener: StoreChangeListener,
    private readonly options: FollowerOptions = {},
  ) {
    this.start = options.from === undefined ? {} : { startAtOperationTime: options.from };
    this.finished = this.follow();
  }

  /** Closes this follower's stream and cancels a pending reopen; resolves once it has ended. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.stream?.close().catch(() => undefined);
    await this.finished;
  }

  private async follow(): Promise<void> {
    const backoff = this.options.backoffMillis ?? BACKOFF_MILLIS;
    let pause = backoff.first;
    while (!this.stopping.signal.aborted) {
      try {
        // After an invalidation the next stream starts right after it; a stream that ended
        // otherwise (closed under the follower) is reopened after a pause, like a failed one.
        if (await this.followOneStream(() => (pause = backoff.first))) continue;
      } catch (error) {
        if (this.stopping.signal.aborted) break;
        this.failed(error);
      }
      if (this.stopping.signal.aborted) break;
      await sleep(pause, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      pause = Math.min(pause * 2, backoff.max);
    }
  }

  /** Follows one stream until it ends (true when an invalidation ended it) or fails (throws). */
  private async followOneStream(onLive: () => void): Promise<boolean> {
    const stream = this.open(this.start);
    this.stream = stream;
    let live = false;
    const becameLive = () => {
      if (live) return;
      live = true;
      onLive();
      if (this.interrupted) {
        this.interrupted = false;
        this.listener({ kind: 'resumed' });
      }
      if (this.reloadWhenLive) {
        this.reloadWhenLive = false;
        this.listener({ kind: 'everything' });
      }
    };
    stream.on('resumeTokenChanged', (token) => {
      this.start = { resumeAfter: token };
      becameLive();
    });
    try {
      for await (const event of stream) {
        becameLive();
        if (event.operationType === 'invalidate') {
          // The stream ends here; a new one can only start after the invalidation, not resume from it.
          this.start = { startAfter: event._id };
          this.listener({ kind: 'everything' });
          return true;
        }
        this.start = { resumeAfter: event._id };
        const change = changeOf(event);
        if (change !== undefined) this.listener(change);
      }
      return false;
    } finally {
      await stream.close().catch(() => undefined);
    }
  }

  private failed(error: unknown): void {
    if (!this.interrupted) this.listener({ kind: 'interrupted', reason: (error as Error).message });
    this.interrupted = true;
    if (error instanceof MongoServerError && HISTORY_LOST.has(Number(error.code))) this.start = {};
    // With nowhere to resume from, what was written before the next stream opens is unknown.
    if (!('resumeAfter' in this.start || 'startAfter' in this.start || 'startAtOperationTime' in this.start)) {
      this.reloadWhenLive = true;
    }
  }
}
