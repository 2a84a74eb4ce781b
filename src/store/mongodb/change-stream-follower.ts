import { setTimeout as sleep } from 'node:timers/promises';
import { MongoServerError, type ChangeStreamDocument, type ResumeToken, type Timestamp } from 'mongodb';
import type { StoreChange, StoreChangeListener } from '../store.js';
import { unavailability } from './errors.js';

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
  /** Told the cluster time of each event before its change is delivered: how far the feed has come. */
  reached?: (clusterTime: Timestamp) => void;
}

/** Server codes after which a change stream cannot resume from its token (CappedPositionLost, InvalidResumeToken, ChangeStreamFatalError, ChangeStreamHistoryLost). */
const HISTORY_LOST = new Set([136, 260, 280, 286]);
/**
 * A stream the server refuses to reopen this many times in a row (it answered, so this is no
 * outage: an unauthorized user, a token it will not take), or a change the listener fails on this
 * many times, gives up its resume point: the follower starts over from a new stream.
 */
const FAILURES_BEFORE_STARTING_OVER = 3;
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
  // The schema document travels with the policies (see SCHEMAS_CHANGE).
  if (event.ns.coll === 'policies' || event.ns.coll === 'schemas') return { kind: 'policies', committedAt };
  return { kind: 'entity', uri: String((event.documentKey as { _id: unknown })._id), committedAt };
}

const hasStart = (start: StreamStart) => 'resumeAfter' in start || 'startAfter' in start || 'startAtOperationTime' in start;

/**
 * Follows a change stream for as long as it is not stopped, and never loses a change silently:
 * a stream that fails is reopened after a growing pause, after the last change the listener took
 * (or the last resume token of an empty batch) or, before any, at the starting operation time.
 * When there is no such point, the server has lost the history to resume from, or it keeps
 * refusing to resume (see FAILURES_BEFORE_STARTING_OVER), the new stream is opened first and
 * `everything` announced once it is live, so a write in between is not missed. Outages (the
 * server unreachable, a failover) are waited out with the resume point kept, however long.
 */
export class ChangeStreamFollower {
  private start: StreamStart;
  private stream: FollowedStream | undefined;
  private interrupted = false;
  private reloadWhenLive = false;
  /** Reopens the server refused since a stream was last live. */
  private refusals = 0;
  /** Times in a row the listener failed on a change. */
  private undelivered = 0;
  /** The last failure was the listener's, not the stream's. */
  private failedDelivering = false;
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
    /** Every change before this point has been taken by the listener. */
    let delivered = this.start;
    const becameLive = () => {
      if (live) return;
      live = true;
      this.refusals = 0;
      onLive();
      if (this.interrupted) {
        this.tell({ kind: 'resumed' });
        this.interrupted = false;
      }
      if (this.reloadWhenLive) {
        this.tell({ kind: 'everything' });
        this.reloadWhenLive = false;
      }
    };
    // The driver moves the token after an empty batch, and also just before it hands over a change:
    // that change is not taken until the listener has run (see deliver).
    stream.on('resumeTokenChanged', (token) => {
      this.start = { resumeAfter: token };
      becameLive();
    });
    /** Hands `change` to the listener, then moves the resume point to `after`; if the listener fails, the stream will reopen before the change. */
    const deliver = (change: StoreChange | undefined, after: StreamStart) => {
      try {
        if (change !== undefined) this.tell(change);
      } catch (error) {
        this.start = delivered;
        this.undelivered++;
        throw error;
      }
      this.undelivered = 0;
      delivered = this.start = after;
    };
    try {
      for await (const event of stream) {
        becameLive();
        if (event.operationType === 'invalidate') {
          // The stream ends here; a new one can only start after the invalidation, not resume from it.
          deliver({ kind: 'everything' }, { startAfter: event._id });
          return true;
        }
        if (event.clusterTime !== undefined) this.options.reached?.(event.clusterTime);
        deliver(changeOf(event), { resumeAfter: event._id });
      }
      return false;
    } finally {
      await stream.close().catch(() => undefined);
    }
  }

  /** Calls the listener; when it fails, the failure is the listener's (see failed). */
  private tell(change: StoreChange): void {
    try {
      this.listener(change);
    } catch (error) {
      this.failedDelivering = true;
      throw error;
    }
  }

  private failed(error: unknown): void {
    let reason = (error as Error).message;
    if (!this.failedDelivering && unavailability(error) === undefined) this.refusals++;
    this.failedDelivering = false;
    const startOver = hasStart(this.start) && this.startingOver(error);
    if (startOver) {
      reason = `${reason} (${startOver}: following from a new stream, and reloading everything once it is open)`;
      this.start = {};
    }
    if (!this.interrupted || startOver) {
      try {
        this.listener({ kind: 'interrupted', reason });
        this.interrupted = true;
      } catch {
        // Told again at the next failure; the loop goes on whatever the listener does.
      }
    }
    // With nowhere to resume from, what was written before the next stream opens is unknown.
    if (!hasStart(this.start)) this.reloadWhenLive = true;
  }

  /** Why the resume point is to be given up after `error`, if it is. */
  private startingOver(error: unknown): string | undefined {
    if (error instanceof MongoServerError && HISTORY_LOST.has(Number(error.code))) return 'the history to resume from is lost';
    if (this.refusals >= FAILURES_BEFORE_STARTING_OVER) return `MongoDB refused to resume ${this.refusals} times in a row`;
    if (this.undelivered >= FAILURES_BEFORE_STARTING_OVER) return `the change could not be applied ${this.undelivered} times in a row`;
    return undefined;
  }
}
