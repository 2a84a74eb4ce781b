import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import { openStore } from '../store/open.js';
import type { CheckedAgainst, Store } from '../store/store.js';
import { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import { FeedHealth, followChanges } from '../snapshot/follow-changes.js';
import { EntityAttributeCache } from '../registry/entity-cache.js';
import type { RegisteredAttributes } from '../registry/resolve.js';
import { BulkPool } from '../pool/bulk-pool.js';
import { bulkPlacement, detectParallelism } from '../pool/parallelism.js';
import { MeasuredPlacement } from '../pool/measured-placement.js';
import { Metrics } from '../live/metrics.js';
import { LiveCounters } from '../live/live-counters.js';
import { LiveWindow } from '../live/live-window.js';
import { RuleTally } from '../live/rule-tally.js';
import { RecentDenials } from '../live/recent-denials.js';
import { DECISION_LOG_CAPACITY, DecisionLog } from '../decision-log/decision-log.js';
import { AuditTrail } from '../audit/audit-trail.js';
import { AuditPruner } from '../audit/retention.js';
import { adminKeysOf, type KeyRing } from '../admin-keys.js';
import { CheckService } from './checks.js';
import { PlanService } from './plans.js';
import { PolicyService } from './policies.js';
import { RegistryService } from './registry.js';
import { SchemaService } from './attribute-schemas.js';
import { Readiness, within } from './readiness.js';
import { DecisionObserver } from './decision-observer.js';
import { filePolicies, storePolicies, withSchemasFromFile } from './policy-source.js';
import { loadSchemaDocument, schemaFileOf } from '../attribute-schemas/schema-file.js';
import { SchemasInForce } from '../attribute-schemas/schemas-in-force.js';

/** A store that takes longer than this to answer a readiness probe is reported as not ready. */
export const STORE_PROBE_TIMEOUT_MS = 2000;

/** Everything the HTTP server serves, composed from the configuration; no HTTP in it. */
export interface Services {
  store: Store;
  snapshots: PolicySnapshots;
  metrics: Metrics;
  readiness: Readiness;
  live: LiveCounters;
  liveWindow: LiveWindow;
  checks: CheckService;
  plans: PlanService;
  policies: PolicyService;
  registry: RegistryService;
  schemas: SchemaService;
  audit: AuditTrail;
  /** Present when bulks may go to the pool (see bulkPlacement): bulk bodies of at least `minimumBodyLength` characters go to it, or, with `placement`, those that come while it chooses the pool. */
  pool?: { bulk: BulkPool; minimumBodyLength: number; placement?: MeasuredPlacement };
  /** Where bulks are decided and why, in words: the start's log line and /ready say it. */
  evaluation: string;
  /** The admin keys when admin authentication is on. */
  adminKeys: KeyRing | undefined;
  /** Starts the work that runs beside requests (following the store, the live window, audit retention, ...), logging to `log`. */
  start(log: FastifyBaseLogger): void;
  /** Stops it all and closes the store. */
  close(): Promise<void>;
}

/**
 * What tests put in place of the real parts, to inject faults: a store already open (by default the one the
 * configuration names), the file the pool's threads run (by default the worker, workers/evaluate.ts).
 */
export interface Substitutes {
  store?: Store;
  poolWorkerFile?: URL;
}

/** Opens the store, loads the policy snapshot and builds the services on them, as the configuration says. */
export async function composeServices(config: Config, substitutes: Substitutes = {}): Promise<Services> {
  const metrics = new Metrics();
  // Read before the store opens: a schema document that cannot be used stops the start.
  const schemaFile = schemaFileOf(config);
  // Policies come from the store, or from a directory of files when one is given (the registry stays in the store).
  // Loaded only then: a start without --policies need not load the YAML parser.
  const directory = config.policiesDir === '' ? undefined : (await import('../policy-files/policy-directory.js')).PolicyDirectory;
  // With policies in the store, a schema file is read once, at start: one that cannot be used stops it.
  const fileSchemas = directory === undefined && schemaFile !== undefined ? loadSchemaDocument(schemaFile) : undefined;
  const store = substitutes.store ?? (await openStore(config, { auditValues: config.auditValues, observer: metrics.auditObserver }));
  // With policy files, the directory reads the schema file with them, at start and at every change.
  const policyFiles = directory?.open(config.policiesDir, store, config, schemaFile && { file: schemaFile, enforcement: config.schemaEnforcement });
  const policySource = policyFiles ?? store;
  // The schemas travel with the policies: from the store, the policy directory, or their file.
  const snapshots = await PolicySnapshots.load(fileSchemas === undefined ? policySource : withSchemasFromFile(policySource, fileSchemas));
  metrics.observeSnapshots(snapshots);
  // Told once the observer is made, below: no check runs before.
  const schemas = new SchemasInForce(config.schemaEnforcement, () => decisions.schemaViolated(), () => metrics.observeSchemaViolations());
  schemas.apply(snapshots.schemas?.document);
  snapshots.on('published', () => schemas.apply(snapshots.schemas?.document));
  if (policyFiles !== undefined) metrics.observePolicyFiles(policyFiles);
  const entities = new EntityAttributeCache(store, config.entityCacheSize);
  const registered: RegisteredAttributes = config.registryEnabled ? entities.lookup : () => undefined;
  const live = new LiveCounters(new RuleTally(Date.now()), config.recentDenials === 0 ? undefined : new RecentDenials(config.recentDenials, config.recentDenialsValues));
  metrics.observeRules(live.rules);
  const decisionLog =
    config.decisionLog === '' ? undefined : DecisionLog.open(config.decisionLog, (lines) => metrics.decisionLogDropped.inc(lines), DECISION_LOG_CAPACITY, config.decisionLogMask);
  const decisions = new DecisionObserver(metrics, live, decisionLog);
  const placement = bulkPlacement(config.evaluation, detectParallelism(), config.workers);
  const bulk =
    config.evaluation === 'inline'
      ? undefined
      : new BulkPool(snapshots, {
          workers: config.workers,
          limits: { bulkCheckMaxRequests: config.bulkCheckMaxRequests, maxJsonDepth: config.maxJsonDepth, maxStringLength: config.maxStringLength, maxAnswerSize: config.maxAnswerSize },
          timeoutMillis: config.workerTimeoutMs,
          observe: decisions.decidedInWorker,
          recentDenials: config.recentDenials,
          workerFile: substitutes.poolWorkerFile,
          schemaEnforcement: config.schemaEnforcement,
        });
  if (bulk !== undefined) metrics.observePool(bulk);
  const measuredPlacement = bulk && placement.measured ? new MeasuredPlacement({ workers: config.workers }) : undefined;
  const liveWindow = new LiveWindow(live, bulk);
  const adminKeys = adminKeysOf(config);
  const adminKeysFile = config.adminKeysFile === '' ? undefined : adminKeys;
  if (adminKeysFile !== undefined) metrics.observeAdminKeysFile(adminKeysFile);
  const feed = new FeedHealth();
  metrics.observeFeed(feed);
  // A store or a snapshot rebuild failing degrades: every process on a shared store fails at once,
  // and taking them all out of service would stop decisions that the last snapshot can still make.
  const readiness = new Readiness({
    required: {
      // Threads start with the first bulk that needs them; until then, none running is no fault.
      workers: () => (bulk === undefined || !bulk.inUse || bulk.threads > 0 ? undefined : 'no worker thread is running'),
    },
    degrading: {
      snapshot: () => {
        const failing = snapshots.failing;
        if (failing === undefined) return undefined;
        const attempts = `${failing.failures} attempt${failing.failures === 1 ? '' : 's'}`;
        return `rebuilds failing since ${new Date(failing.since).toISOString()} (${attempts}): ${failing.error.message}`;
      },
      store: async () => {
        try {
          await within(store.policyRevision(), STORE_PROBE_TIMEOUT_MS, `no answer within ${STORE_PROBE_TIMEOUT_MS} ms`);
          return undefined;
        } catch (error) {
          return `unreachable: ${(error as Error).message}`;
        }
      },
      // Index builds, the backfill and the recount: searches and $count are slower meanwhile, never wrong.
      ...(store.maintenance && { storeMaintenance: () => store.maintenance!.status() }),
      // Without the feed, writes by other processes are not applied here: decisions may be stale.
      feed: () => {
        const lost = feed.interruption;
        return lost && `interrupted since ${new Date(lost.since).toISOString()}, retrying: ${lost.reason}`;
      },
      // Invalid policy files never replace the last good set, which keeps deciding (there is one:
      // invalid files at start stop the start).
      ...(policyFiles && {
        policyFiles: () => {
          const rejected = policyFiles.rejected;
          if (rejected === undefined) return undefined;
          const since = new Date(rejected.since).toISOString();
          return `changed files not applied since ${since}, serving revision ${snapshots.current.revision}: ${rejected.problems.join('; ')}`;
        },
      }),
      // Nor does a keys file that no longer parses replace the keys in force: a typo would lock every operator out.
      ...(adminKeysFile && {
        adminKeys: () => {
          const rejected = adminKeysFile.rejected;
          if (rejected === undefined) return undefined;
          return `not reloaded since ${new Date(rejected.since).toISOString()}: ${rejected.error.message}; the keys it held before stay in force`;
        },
      }),
    },
  }, () => ({ evaluation: placement.description, ...(measuredPlacement && { placement: measuredPlacement.describe() }) }));
  const audit = new AuditTrail(store);
  // Under reject, with schemas kept in the store, a write commits only against the schemas it was checked against.
  const checkedAgainst = (): CheckedAgainst | undefined =>
    config.schemaEnforcement !== 'reject' || schemaFile !== undefined ? undefined : { schemasVersion: snapshots.schemas?.version };

  let stopRunning = async (): Promise<void> => snapshots.close();
  const start = (log: FastifyBaseLogger): void => {
    liveWindow.start();
    snapshots.on('rebuildFailed', (error, { failures }) =>
      log.error({ err: error, failures }, 'could not rebuild the policy snapshot; serving the last one and retrying'),
    );
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
    const stopWatchingFiles = policyFiles?.watch();
    const warnOfSchemas = () => {
      const problems = policyFiles?.schemaWarnings ?? [];
      if (problems.length > 0) log.warn({ dir: policyFiles!.dir, problems }, 'the policy files in force contradict the attribute schemas');
    };
    warnOfSchemas();
    policyFiles?.on('applied', (revision) => {
      log.info({ dir: policyFiles.dir, revision }, 'policy files changed: applying them');
      warnOfSchemas();
      snapshots.refresh().catch(() => undefined);
    });
    policyFiles?.on('rejected', ({ problems }) =>
      log.error({ dir: policyFiles.dir, problems }, 'policy files changed but are not all valid: serving the last good set'),
    );
    const stopFollowing = followChanges(store, snapshots, entities, log, {
      health: feed,
      error: () => metrics.changeFeedErrors.inc(),
      applied: (seconds) => {
        metrics.changeFeedLag.observe(seconds);
        live.feedApplied(seconds);
      },
    });
    if (config.registryEnabled) {
      // Beside the first checks rather than before readiness: a check it has not reached reads the store.
      entities.warm().catch((error: unknown) =>
        log.warn({ err: error }, 'could not fill the entity cache at start; checks read entities from the store as they name them'),
      );
    }
    stopRunning = async () => {
      stopWatchingFiles?.();
      stopFollowing();
      snapshots.close();
      await pruner?.stop();
    };
  };

  return {
    store,
    snapshots,
    metrics,
    readiness,
    live,
    liveWindow,
    checks: new CheckService(snapshots, registered, config.maxAnswerSize, decisions, schemas),
    plans: new PlanService(snapshots, registered, config, bulk, schemas),
    policies: new PolicyService(
      store,
      snapshots,
      config,
      audit,
      policyFiles === undefined ? storePolicies(store) : filePolicies(snapshots, policyFiles.dir),
      { inForce: schemas, enforcement: config.schemaEnforcement },
      checkedAgainst,
    ),
    registry: new RegistryService(store, (uri) => entities.invalidate(uri), schemas, checkedAgainst),
    schemas: new SchemaService(store, snapshots, audit, schemaFile),
    audit,
    pool: bulk && placement.poolMinimumBodyLength !== undefined ? { bulk, minimumBodyLength: placement.poolMinimumBodyLength, placement: measuredPlacement } : undefined,
    evaluation: placement.description,
    adminKeys,
    start,
    close: async () => {
      readiness.beginShutdown();
      entities.close();
      liveWindow.stop();
      await stopRunning();
      await bulk?.close();
      await store.close();
      await decisionLog?.close();
    },
  };
}
