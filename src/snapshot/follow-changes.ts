import type { FastifyBaseLogger } from 'fastify';
import type { Subscribable } from '../store/store.js';
import type { EntityAttributeCache } from '../registry/entity-cache.js';
import type { PolicySnapshots } from './policy-snapshots.js';

/** Whether this process follows the store's change feed, for readiness and metrics. */
export class FeedHealth {
  /** Since when (epoch ms) and why the feed is interrupted; undefined while it follows. */
  interruption: { since: number; reason: string } | undefined;

  interrupted(reason: string): void {
    this.interruption = { since: this.interruption?.since ?? Date.now(), reason };
  }

  resumed(): void {
    this.interruption = undefined;
  }
}

/** What the follower reports besides its log lines. */
export interface FollowObservers {
  /** A change could not be applied. */
  error?: () => void;
  /** A change is being served, `seconds` after it was committed. */
  applied?: (seconds: number) => void;
  /** Told when the feed is interrupted and when it follows again. */
  health?: FeedHealth;
}

/**
 * Keeps this process in step with writes made by others on the same store, from the position of
 * the snapshot's first load on: a policy change rebuilds the snapshot, an entity change drops its
 * cache entry, a lost feed reloads both. When a rebuild fails, checks go on against the last good
 * snapshot while the snapshot builder retries (see PolicySnapshots).
 */
export function followChanges(
  store: Subscribable,
  snapshots: PolicySnapshots,
  entities: EntityAttributeCache,
  log: FastifyBaseLogger,
  observers: FollowObservers = {},
): () => void {
  const served = (committedAt: number | undefined) => {
    // Clocks of different machines (MongoDB's, ours) may disagree by a little: never a negative lag.
    if (committedAt !== undefined) observers.applied?.(Math.max(0, Date.now() - committedAt) / 1000);
  };
  const rebuild = (force = false) =>
    snapshots.refresh({ force }).then(
      () => true,
      () => {
        observers.error?.();
        return false;
      },
    );
  return store.watch((change) => {
    switch (change.kind) {
      case 'policies':
        void rebuild().then((rebuilt) => rebuilt && served(change.committedAt));
        return;
      case 'entity':
        entities.invalidate(change.uri);
        served(change.committedAt);
        return;
      case 'everything':
        entities.clear();
        void rebuild(true);
        return;
      case 'interrupted':
        observers.health?.interrupted(change.reason);
        log.warn({ reason: change.reason }, 'lost the store change feed; serving the last snapshot and cached entities while it retries');
        return;
      case 'resumed':
        observers.health?.resumed();
        log.info('the store change feed is back');
        return;
    }
  }, snapshots.loadedAt);
}
