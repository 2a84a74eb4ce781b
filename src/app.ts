import Fastify, { LogController, type FastifyInstance, type FastifyReply } from 'fastify';
import type { Config } from './config.js';
import { openStore } from './store/open.js';
import type { Store } from './store/store.js';
import { PolicySnapshots } from './snapshot/policy-snapshots.js';
import { FeedHealth, followChanges } from './snapshot/follow-changes.js';
import { CheckService } from './services/checks.js';
import { PlanService } from './services/plans.js';
import { PolicyService } from './services/policies.js';
import { RegistryService } from './services/registry.js';
import { EntityAttributeCache } from './registry/entity-cache.js';
import { BulkPool } from './pool/bulk-pool.js';
import type { RegisteredAttributes } from './registry/resolve.js';
import type { AppContext } from './http/context.js';
import { lazySchemaCompilers } from './http/schema-compilers.js';
import { installErrorHandling } from './http/errors.js';
import { installJsonBodyParser } from './http/json-body.js';
import { adminKeyCheck, adminKeysOf, API_KEY_HEADER, trustedProxies } from './http/admin-auth.js';
import { openAdminGuard } from './http/open-admin.js';
import { registerDocs } from './http/docs.js';
import { healthRoutes } from './http/health.js';
import { checkRoutes } from './http/check.js';
import { planRoutes } from './http/plan.js';
import { policyRoutes } from './http/policies.js';
import { registryRoutes } from './http/registry.js';
import { legacyRoutes } from './http/legacy.js';
import { instrumentRoutes, metricsRoutes } from './http/metrics.js';
import { Metrics } from './live/metrics.js';
import { Readiness, within } from './services/readiness.js';
import { DecisionLog } from './decision-log/decision-log.js';
import { dashboardRoutes } from './http/dashboard.js';
import { auditRoutes } from './http/audit.js';
import { whoamiRoutes } from './http/whoami.js';
import { AuditTrail } from './audit/audit-trail.js';
import { AuditPruner } from './audit/retention.js';
import { minRevisionCheck } from './http/min-revision.js';
import { revisionOnEveryAnswer, type ServedRevision } from './http/revision.js';
import { LiveCounters } from './live/live-counters.js';
import { LiveWindow } from './live/live-window.js';
import { RuleTally } from './live/rule-tally.js';
import { RecentDenials } from './live/recent-denials.js';
import { liveRoutes } from './http/live.js';
import { lazyRequestLogger } from './http/request-logger.js';
import { requestIds } from './http/request-ids.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Flipped by a shutdown before the listeners close. */
    readiness: Readiness;
    /** Served at GET /metrics, or on its own port (see Config.metricsPort). */
    metrics: Metrics;
  }
}

/** Entity URIs arrive percent-encoded as path parameters (see MAX_ENTITY_URI_LENGTH); find-my-way's default of 100 is too short. */
const MAX_PATH_PARAMETER_LENGTH = 8192;

/**
 * Bulk bodies this many bytes (about 60 checks) or longer go to the worker pool in auto mode: below it, the
 * thread hop (~55 µs of latency) costs more than reading and deciding the body on the front.
 */
const POOL_MINIMUM_BODY_LENGTH = 8192;

/** A store that takes longer than this to answer a readiness probe is reported as not ready. */
export const STORE_PROBE_TIMEOUT_MS = 2000;

/**
 * Wires the store, the policy snapshot and the routes into a Fastify instance that is ready to listen.
 * `openedStore`: a store already open (tests that inject faults); by default the one the configuration names.
 */
export async function buildApp(config: Config, openedStore?: Store): Promise<FastifyInstance> {
  const metrics = new Metrics();
  const store = openedStore ?? (await openStore(config, { auditValues: config.auditValues, observer: metrics.auditObserver }));
  // Policies come from the store, or from a directory of files when one is given (the registry stays in the store).
  // Loaded only then: a start without --policies need not load the YAML parser.
  const policyFiles =
    config.policiesDir === '' ? undefined : (await import('./policy-files/policy-directory.js')).PolicyDirectory.open(config.policiesDir, store, config);
  const snapshots = await PolicySnapshots.load(policyFiles ?? store);
  metrics.observeSnapshots(snapshots);
  if (policyFiles !== undefined) metrics.observePolicyFiles(policyFiles);
  const entities = new EntityAttributeCache(store, config.entityCacheSize);
  const registered: RegisteredAttributes = config.registryEnabled ? entities.lookup : () => undefined;
  const { allowed, denied, bulkSize } = metrics;
  const live = new LiveCounters(new RuleTally(Date.now()), config.recentDenials === 0 ? undefined : new RecentDenials(config.recentDenials, config.recentDenialsValues));
  metrics.observeRules(live.rules);
  const decisionLog =
    config.decisionLog === '' ? undefined : DecisionLog.open(config.decisionLog, (lines) => metrics.decisionLogDropped.inc(lines));
  const bulk =
    config.evaluation === 'inline'
      ? undefined
      : new BulkPool(
          config.workers,
          snapshots,
          { bulkCheckMaxRequests: config.bulkCheckMaxRequests, maxJsonDepth: config.maxJsonDepth, maxStringLength: config.maxStringLength, maxAnswerSize: config.maxAnswerSize },
          config.workerTimeoutMs,
          ({ body, json, tally, revision, elapsedMs }) => {
            metrics.allowed.inc(tally.allowed);
            metrics.denied.inc(tally.denied);
            live.decidedInWorker(tally, revision);
            const count = tally.allowed + tally.denied;
            bulkSize.observe(count);
            decisionLog?.recordBulk({ time: Date.now(), body: body.toString('utf8'), decisions: json, count, revision, latencyMs: elapsedMs / count });
          },
          config.recentDenials,
        );
  const pool = bulk && { bulk, minimumBodyLength: config.evaluation === 'pool' ? 0 : POOL_MINIMUM_BODY_LENGTH };
  if (bulk !== undefined) metrics.observePool(bulk);
  const liveWindow = new LiveWindow(live, bulk);
  liveWindow.start();
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
  });
  const checks = new CheckService(snapshots, registered, config.maxAnswerSize, {
    decision: (input, request, decision, revision, startedAt) => {
      (decision.allowed ? allowed : denied).inc();
      live.decided(input, decision, revision);
      decisionLog?.record({ time: Date.now(), input, request, decision, revision, latencyMs: performance.now() - startedAt });
    },
    bulk: (size) => bulkSize.observe(size),
  });

  const app = Fastify({
    logger: {
      level: config.logLevel,
      redact: { paths: [`req.headers["${API_KEY_HEADER}"]`, 'req.headers.authorization'], censor: '[redacted]' },
    },
    // Per-request log lines only when asked for: the hot path stays free of logging by default.
    logController: new LogController({ disableRequestLogging: !['debug', 'trace'].includes(config.logLevel) }),
    childLoggerFactory: lazyRequestLogger,
    schemaController: { compilersFactory: lazySchemaCompilers },
    bodyLimit: config.bodyLimit,
    // Unique across processes and restarts: audit records name the request that wrote them.
    genReqId: requestIds(),
    // Which peers may name the client address in X-Forwarded-For (the admin-auth failure limit keys on it).
    trustProxy: trustedProxies(config.trustProxy),
    onProtoPoisoning: 'ignore',
    onConstructorPoisoning: 'ignore',
    routerOptions: { maxParamLength: MAX_PATH_PARAMETER_LENGTH },
    // Errors raised before routing (a bad percent-escape, an over-long parameter) keep the {detail} shape.
    frameworkErrors: (error, _request, reply) => {
      const status = (error as { statusCode?: number }).statusCode ?? 400;
      void (reply as FastifyReply).code(status).send({ detail: error.message });
    },
  });
  app.decorate('readiness', readiness);
  app.decorateRequest('adminKey', null);
  app.decorate('metrics', metrics);
  snapshots.on('rebuildFailed', (error, { failures }) =>
    app.log.error({ err: error, failures }, 'could not rebuild the policy snapshot; serving the last one and retrying'),
  );
  snapshots.on('recovered', ({ since }) => app.log.info({ failingSince: new Date(since).toISOString() }, 'the policy snapshot is rebuilt again'));
  const pruner =
    config.auditRetention &&
    new AuditPruner(store, config.auditRetention, {
      pruned: (records) => metrics.auditPruned.inc(records),
      failed: (error) => {
        metrics.auditPruneFailures.inc();
        app.log.warn({ err: error }, 'audit retention failed; retrying at the next run');
      },
    });
  pruner?.start();
  const stopWatchingFiles = policyFiles?.watch();
  policyFiles?.on('applied', (revision) => {
    app.log.info({ dir: policyFiles.dir, revision }, 'policy files changed: applying them');
    snapshots.refresh().catch(() => undefined);
  });
  policyFiles?.on('rejected', ({ problems }) =>
    app.log.error({ dir: policyFiles.dir, problems }, 'policy files changed but are not all valid: serving the last good set'),
  );
  const stopFollowing = followChanges(store, snapshots, entities, app.log, {
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
      app.log.warn({ err: error }, 'could not fill the entity cache at start; checks read entities from the store as they name them'),
    );
  }
  app.addHook('onClose', async () => {
    readiness.beginShutdown();
    entities.close();
    liveWindow.stop();
    stopWatchingFiles?.();
    stopFollowing();
    snapshots.close();
    await pruner?.stop();
    await bulk?.close();
    await store.close();
    await decisionLog?.close();
  });
  instrumentRoutes(app, metrics, live);

  // Which policy snapshot answered: after an admin write, the revision that includes it.
  const revision: ServedRevision = () => snapshots.current.revision;
  revisionOnEveryAnswer(app, revision);
  installErrorHandling(app, revision);
  installJsonBodyParser(app, config);
  await registerDocs(app);
  const audit = new AuditTrail(store);
  const context: AppContext = {
    config,
    snapshots,
    revision,
    pool,
    readiness,
    checks,
    audit,
    minRevisionCheck: minRevisionCheck(snapshots, config.minRevisionWaitMs),
    plans: new PlanService(snapshots, registered, config, bulk),
    policies: new PolicyService(store, snapshots, config, audit, config.policiesDir),
    registry: new RegistryService(store, (uri) => entities.invalidate(uri)),
    adminGuard: adminKeys === undefined ? openAdminGuard(config) : await adminKeyCheck(app, config, adminKeys),
  };
  await app.register(healthRoutes, { context });
  if (config.metricsPort === undefined) await app.register(metricsRoutes, { metrics });
  await app.register(checkRoutes, { context });
  await app.register(planRoutes, { context });
  await app.register(legacyRoutes, { context });
  await app.register(dashboardRoutes);
  await app.register(async (admin) => {
    admin.addHook('onRequest', context.adminGuard);
    await admin.register(policyRoutes, { context });
    await admin.register(auditRoutes, { context });
    await admin.register(whoamiRoutes, { operatorStyle: config.operatorStyle });
    await admin.register(liveRoutes, { window: liveWindow, counters: live });
    if (config.registryEnabled) await admin.register(registryRoutes, { context });
  });
  await app.ready();
  return app;
}
