import type { Db, MongoClient, Timestamp } from 'mongodb';
import type { FeedPosition, StoreChangeListener, Subscribable } from '../store.js';
import { ChangeStreamFollower } from './change-stream-follower.js';
import { feedPipeline, operationTimeAt } from './feed.js';
import { SECONDARY_READ, type ReadsAfterFeed } from './entities.js';

/**
 * The change feed of a MongoDB store, and the position it has reached: reads that fill a cache are
 * held to be after it (see afterFeed).
 */
export class MongoChangeSource implements Subscribable {
  private readonly followers = new Set<ChangeStreamFollower>();
  /** The change feed's position: the cluster time of the last event any follower was told of, or where it started. */
  private feedTime: Timestamp | undefined;

  constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
    /** Hears each time the feed loses track (a drop, say): the set-up is made again. */
    private readonly lostTrack: () => void,
  ) {}

  /**
   * Follows every write to policies, entities and the schema document through a change stream (see ChangeStreamFollower
   * and feedPipeline), and the events that end a history: any of the store's collections dropped,
   * renamed or renamed onto, the database dropped.
   */
  watch(listener: StoreChangeListener, from?: FeedPosition): () => void {
    const pipeline = feedPipeline();
    const relay: StoreChangeListener = (change) => {
      if (change.kind === 'everything') this.lostTrack();
      listener(change);
    };
    if (from !== undefined) this.reachedFeed(operationTimeAt(from));
    // From a secondary when one is there: a fleet's streams would otherwise all weigh on the primary.
    const follower = new ChangeStreamFollower((start) => this.db.watch(pipeline, { ...start, readPreference: SECONDARY_READ }), relay, {
      from: from === undefined ? undefined : operationTimeAt(from),
      reached: this.reachedFeed,
    });
    this.followers.add(follower);
    return () => {
      this.followers.delete(follower);
      void follower.stop();
    };
  }

  private readonly reachedFeed = (time: Timestamp): void => {
    const reached = this.feedTime;
    if (reached === undefined || time.t > reached.t || (time.t === reached.t && time.i > reached.i)) this.feedTime = time;
  };

  /** See ReadsAfterFeed: a causally consistent session advanced to the feed's position, for reads that fill a cache. */
  readonly afterFeed: ReadsAfterFeed = async (read) => {
    const reached = this.feedTime;
    if (reached === undefined) return read(undefined);
    const session = this.client.startSession({ causalConsistency: true });
    session.advanceOperationTime(reached);
    try {
      return await read(session);
    } finally {
      void session.endSession().catch(() => undefined);
    }
  };

  async close(): Promise<void> {
    await Promise.all([...this.followers].map((follower) => follower.stop()));
    this.followers.clear();
  }
}
