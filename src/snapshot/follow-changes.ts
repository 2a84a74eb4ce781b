import type { FastifyBaseLogger } from 'fastify';
import type { Store } from '../store/store.js';
import type { EntityAttributeCache } from '../registry/entity-cache.js';
import type { PolicySnapshots } from './policy-snapshots.js';

/**
 * Keeps this process in step with writes made by others on the same store: a policy change
 * rebuilds the snapshot, an entity change drops its cache entry, a lost feed reloads both. When a
 * rebuild fails, checks go on against the last good snapshot and the failure is logged.
 */
export function followChanges(
  store: Store,
  snapshots: PolicySnapshots,
  entities: EntityAttributeCache,
  log: FastifyBaseLogger,
  onError: () => void = () => {},
): () => void {
  const rebuild = () =>
    snapshots.refresh().catch((error: unknown) => {
      onError();
      log.error({ err: error }, 'could not rebuild the policy snapshot; serving the last one');
    });
  return store.watch((change) => {
    switch (change.kind) {
      case 'policies':
        void rebuild();
        return;
      case 'entity':
        entities.invalidate(change.uri);
        return;
      case 'everything':
        entities.clear();
        void rebuild();
        return;
      case 'interrupted':
        log.warn({ reason: change.reason }, 'lost the store change feed; serving the last snapshot and cached entities while it retries');
        return;
      case 'resumed':
        log.info('the store change feed is back');
        return;
    }
  });
}
