import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config/config.js';
import type { Store } from '../store/store.js';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import { followChanges, type FeedHealth } from '../snapshot/follow-changes.js';
import type { EntityAttributeCache } from '../registry/entity-cache.js';
import type { PolicyDirectory } from '../policy-files/policy-directory.js';
import type { Metrics } from '../live/metrics.js';
import type { LiveCounters } from '../live/live-counters.js';
import type { LiveWindow } from '../live/live-window.js';
import { AuditPruner } from '../audit/retention.js';
import type { BulkPool } from '../pool/bulk-pool.js';
import { settledLogFields } from '../settle-memory.js';

/** What runs beside requests, and what it reports to. */
export interface BackgroundParts {
  config: Pick<Config, 'auditRetention' | 'registryEnabled'>;
  store: Store;
  snapshots: PolicySnapshots;
  entities: EntityAttributeCache;
  feed: FeedHealth;
  metrics: Metrics;
  live: LiveCounters;
  liveWindow: LiveWindow;
  policyFiles?: PolicyDirectory;
  bulk?: BulkPool;
}

/**
 * Starts the work that runs beside requests: the live window, following the store's changes, audit
 * retention, watching the policy files, filling the entity cache, and the log lines of each (and of the worker threads' settling). Returns
 * what stops it all (the store stays open).
 */
export function startBackgroundWork(parts: BackgroundParts, log: FastifyBaseLogger): () => Promise<void> {
  const { config, store, snapshots, entities, metrics, live, liveWindow, policyFiles } = parts;
  liveWindow.start();
  parts.bulk?.onSettled((settled) => log.info({ ...settledLogFields(settled), thread: 'worker' }, 'settled memory'));
  snapshots.on('rebuildFailed', (error, { failures }) => log.error({ err: error, failures }, 'could not rebuild the policy snapshot; serving the last one and retrying'));
  snapshots.on('recovered', ({ since }) => log.info({ failingSince: new Date(since).toISOString() }, 'the policy snapshot is rebuilt again'));
  store.maintenance?.on('failed', ({ step, error }) => log.warn({ err: error, step }, 'store maintenance: a step failed; retrying in the background'));
  const pruner =
    config.auditRetention &&
    new AuditPruner(store, config.auditRetention, {
      pruned: (records) => metrics.auditPruned.inc(records),
      failed: (error) => {
        metrics.auditPruneFailures.inc();
        log.warn({ err: error }, 'audit retention failed; retrying at the next run');
      },
    });
  pruner?.start();
  const stopWatchingFiles = policyFiles && watchPolicyFiles(policyFiles, snapshots, log);
  const stopFollowing = followChanges(store, snapshots, entities, log, {
    health: parts.feed,
    error: () => metrics.changeFeedErrors.inc(),
    applied: (seconds) => {
      metrics.changeFeedLag.observe(seconds);
      live.feedApplied(seconds);
    },
  });
  if (config.registryEnabled) {
    // Beside the first checks rather than before readiness: a check it has not reached reads the store.
    entities.warm().catch((error: unknown) => log.warn({ err: error }, 'could not fill the entity cache at start; checks read entities from the store as they name them'));
  }
  return async () => {
    stopWatchingFiles?.();
    stopFollowing();
    snapshots.close();
    liveWindow.stop();
    await pruner?.stop();
  };
}

/** Applies the policy files as they change, logging what changed, what was refused and what contradicts the schemas. */
function watchPolicyFiles(policyFiles: PolicyDirectory, snapshots: PolicySnapshots, log: FastifyBaseLogger): () => void {
  const warnOfSchemas = () => {
    const problems = policyFiles.schemaWarnings;
    if (problems.length > 0) log.warn({ dir: policyFiles.dir, problems }, 'the policy files in force contradict the attribute schemas');
  };
  warnOfSchemas();
  policyFiles.on('applied', (revision) => {
    log.info({ dir: policyFiles.dir, revision }, 'policy files changed: applying them');
    warnOfSchemas();
    snapshots.refresh().catch(() => undefined);
  });
  policyFiles.on('rejected', ({ problems }) => log.error({ dir: policyFiles.dir, problems }, 'policy files changed but are not all valid: serving the last good set'));
  return policyFiles.watch();
}
