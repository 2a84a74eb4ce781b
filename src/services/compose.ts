import { workerSizing, type WorkerSizing } from '../pool/worker-sizing.js';
import { sideWordingOf } from '../requests/check-request.js';
import { bulkLimitsOf } from '../requests/bulk-request.js';
import { ImpactService } from './impact-service.js';
import { PolicySetReader } from '../policy-files/policy-set.js';
import { ChangeFeed } from './change-feed.js';
import { ExtAuthzService } from './ext-authz.js';
import type { Tracing } from '../tracing/tracing.js';
import { systemClock, type Clock } from '../clock.js';
import { RecentChecks } from './recent-checks.js';
import { BulkChecks } from './bulk-checks.js';
import { ShadowDecisions } from './shadow-decisions.js';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config/config.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import type { CheckedAgainst } from '../store/errors.js';
import { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import { FeedHealth } from '../snapshot/follow-changes.js';
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
import type { TokenVerifier } from '../identity/verifier.js';
import type { IdentitySource } from '../identity/identity.js';
import { ExtAuthzMapping } from '../ext-authz/mapping.js';
import { readTokenSettings, type TokenSettings } from '../identity/settings.js';
import { decisionLogFile, DecisionLog } from '../decision-log/decision-log.js';
import { AuditTrail } from '../audit/audit-trail.js';
import { adminKeysOf, type KeyRing } from '../admin-keys.js';
import { CheckService } from './checks.js';
import { PlanService } from './plans.js';
import { PolicyService } from './policies.js';
import { RegistryService } from './registry.js';
import { SchemaService } from './attribute-schemas.js';
import { Readiness } from './readiness.js';
import { readinessConditions } from './readiness-conditions.js';
import { startBackgroundWork } from './background-work.js';
import { AuthzenService } from './authzen.js';
import { AuthzenSearch } from './authzen-search.js';
import { DecisionObserver } from './decision-observer.js';
import { filePolicies, storePolicies } from './policy-roles.js';
import { withSchemasFromFile } from '../snapshot/policy-source.js';
import { loadSchemaDocument, schemaFileOf, type SchemaFile } from '../attribute-schemas/schema-file.js';
import type { SchemaDocument } from '../attribute-schemas/schema-document.js';
import type { PolicyDirectory } from '../policy-files/policy-directory.js';
import { SchemasInForce } from '../attribute-schemas/schemas-in-force.js';

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
  authzen: AuthzenService;
  authzenSearch: AuthzenSearch;
  /** Bulk checks, decided on the front or in the pool. */
  bulks: BulkChecks;
  /** Where bulks are decided and why, in words: the start's log line and /ready say it. */
  evaluation: string;
  /** How many worker threads the pool may run and why, in words: the start's log line and /ready say it. */
  workers: string;
  /** The admin keys when admin authentication is on. */
  adminKeys: KeyRing | undefined;
  /** Impact previews of policy changes, on the checks this process decided lately. */
  impact: ImpactService;
  /** The shadow policies' decisions beside the live ones. */
  shadows: ShadowDecisions;
  /** What changes this process's decisions, for clients that cache them (GET /admin/changes). */
  changes: ChangeFeed;
  /** Spans for the requests that decide (`--otlp-endpoint`), and where each request's decisions are told. */
  tracing?: TracedRequests;
  /** Envoy's external authorization (`--ext-authz`), for its HTTP and gRPC doors. */
  extAuthz?: ExtAuthzService;
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
  /** The clock of the key sets, the token verifier, shadows, recent checks and the change feed's heartbeat. */
  clock?: Clock;
}

/** Opens the store, loads the policy snapshot and builds the services on them, as the configuration says. */
export async function composeServices(config: Config, substitutes: Substitutes = {}): Promise<Services> {
  const metrics = new Metrics();
  const clock = substitutes.clock ?? systemClock;
  const settings = readSettingsFiles(config);
  const store = substitutes.store ?? (await openStore(config, { auditValues: config.auditValues, observer: metrics.auditObserver }));
  const { policyFiles, snapshots } = await loadPolicies(config, store, settings, metrics);
  // Told once the observer is made, below: no check runs before.
  const schemas = new SchemasInForce(config.schemaEnforcement, () => observers.decisions.schemaViolated(), () => metrics.observeSchemaViolations());
  schemas.apply(snapshots.schemas?.document);
  snapshots.on('published', () => schemas.apply(snapshots.schemas?.document));
  const entities = new EntityAttributeCache(store, config.entityCacheSize, config.entityCacheBytes);
  metrics.observeEntityCache(entities);
  const registered: RegisteredAttributes = config.registryEnabled ? entities.lookup : () => undefined;
  const observers = decisionObservers(config, metrics, snapshots, clock);
  const { live, decisionLog, recentChecks, shadows, decisions } = observers;
  const tracing = tracesEndpoint(config) === '' ? undefined : await openTracedRequests(config, metrics);
  const pool = workerPool(config, snapshots, decisions, metrics, substitutes.poolWorkerFile);
  const liveWindow = new LiveWindow(live, pool.bulk);
  const adminKeys = adminKeysOf(config);
  const adminKeysFile = config.adminKeysFile === '' ? undefined : adminKeys;
  if (adminKeysFile !== undefined) metrics.observeAdminKeysFile(adminKeysFile);
  const { tokens, identities } = settings.tokens === undefined ? {} : await openTokens(settings.tokens, metrics, clock);
  const feed = new FeedHealth();
  metrics.observeFeed(feed);
  const readiness = new Readiness(readinessConditions({ store, snapshots, feed, bulk: pool.bulk, policyFiles, adminKeysFile, tokens }), pool.describe);
  const audit = new AuditTrail(store);
  // Under reject, with schemas kept in the store, a write commits only against the schemas it was checked against.
  const checkedAgainst = (): CheckedAgainst | undefined =>
    config.schemaEnforcement !== 'reject' || settings.schemaFile !== undefined ? undefined : { schemasVersion: snapshots.schemas?.version };

  let stopBackgroundWork = async (): Promise<void> => snapshots.close();
  // With admin authentication on, no answer may say whether a supplied attribute matches the registry.
  const resolving = { identities, overruled: adminKeys === undefined ? undefined : () => metrics.attributeConflicts.inc() };
  const checks = new CheckService(snapshots, registered, config.maxAnswerSize, decisions, schemas, resolving, sideWordingOf(config));
  const plans = new PlanService(snapshots, registered, config, pool.bulk, schemas, resolving);
  const registry = new RegistryService(store, (uri) => entities.invalidate(uri), schemas, checkedAgainst);
  const changes = new ChangeFeed(snapshots, entities, clock);
  const policyRoles = policyFiles === undefined ? storePolicies(store) : filePolicies(policyFiles);
  const policies = new PolicyService(store, snapshots, config, audit, policyRoles, { inForce: schemas, enforcement: config.schemaEnforcement }, checkedAgainst);

  return {
    store,
    snapshots,
    metrics,
    readiness,
    live,
    liveWindow,
    checks,
    plans,
    policies,
    registry,
    shadows,
    impact: new ImpactService(snapshots, new PolicySetReader(config), policies, recentChecks, config.maxAnswerSize, decisionLogFile(config.decisionLog), config.decisionLogMask),
    schemas: new SchemaService(store, snapshots, audit, settings.schemaFile),
    audit,
    authzen: new AuthzenService(checks, config.bulkCheckMaxRequests),
    authzenSearch: new AuthzenSearch(checks, plans, registry, snapshots, config),
    bulks: new BulkChecks(checks, bulkLimitsOf(config), pool.placement),
    evaluation: pool.evaluation,
    workers: pool.workers,
    adminKeys,
    changes,
    ...(settings.extAuthz && { extAuthz: new ExtAuthzService(settings.extAuthz, tokens !== undefined, checks) }),
    ...(tracing && { tracing }),
    start: (log) => {
      stopBackgroundWork = startBackgroundWork({ config, store, snapshots, entities, feed, metrics, live, liveWindow, policyFiles, bulk: pool.bulk }, log);
    },
    close: async () => {
      readiness.beginShutdown();
      tokens?.close();
      changes.close();
      entities.close();
      await stopBackgroundWork();
      await pool.bulk?.close();
      await store.close();
      await decisionLog?.close();
      await tracing?.tracing.shutdown();
    },
  };
}

/** The settings files a start reads before the store opens: one that cannot be used stops the start. */
interface SettingsFiles {
  /** The attribute schema file (`--schemas`), and its document when policies are in the store (with policy files, the directory reads it with them). */
  schemaFile: SchemaFile | undefined;
  fileSchemas: SchemaDocument | undefined;
  tokens: TokenSettings | undefined;
  extAuthz: ExtAuthzMapping | undefined;
}

function readSettingsFiles(config: Config): SettingsFiles {
  const schemaFile = schemaFileOf(config);
  const tokens = config.tokens === '' ? undefined : readTokenSettings(config.tokens);
  return {
    schemaFile,
    // With policies in the store, a schema file is read once, at start.
    fileSchemas: config.policiesDir === '' && schemaFile !== undefined ? loadSchemaDocument(schemaFile) : undefined,
    tokens,
    extAuthz: config.extAuthz === '' ? undefined : ExtAuthzMapping.read(config.extAuthz, tokens?.keySets.map((set) => set.name)),
  };
}

/**
 * The policy snapshots, from the store or from a directory of files when one is given (the registry
 * stays in the store), with the schemas that travel with the policies: from the store, the policy
 * directory, or their file. The directory's code is loaded only then: a start without `--policies`
 * need not load the YAML parser.
 */
async function loadPolicies(config: Config, store: Store, { schemaFile, fileSchemas }: SettingsFiles, metrics: Metrics): Promise<{ policyFiles: PolicyDirectory | undefined; snapshots: PolicySnapshots }> {
  const directory = config.policiesDir === '' ? undefined : (await import('../policy-files/policy-directory.js')).PolicyDirectory;
  // With policy files, the directory reads the schema file with them, at start and at every change.
  const policyFiles = directory?.open(config.policiesDir, store, config, schemaFile && { file: schemaFile, enforcement: config.schemaEnforcement });
  const policySource = policyFiles ?? store;
  const snapshots = await PolicySnapshots.load(fileSchemas === undefined ? policySource : withSchemasFromFile(policySource, fileSchemas));
  metrics.observeSnapshots(snapshots);
  if (policyFiles !== undefined) metrics.observePolicyFiles(policyFiles);
  return { policyFiles, snapshots };
}

/** Where every decision is told (see DecisionObserver), and what it tells. */
function decisionObservers(config: Config, metrics: Metrics, snapshots: PolicySnapshots, clock: Clock) {
  const recentDenials = config.recentDenials === 0 ? undefined : new RecentDenials(config.recentDenials, config.recentDenialsValues, config.recentDenialsRate, clock);
  if (recentDenials !== undefined) metrics.observeRecentDenials(recentDenials);
  const live = new LiveCounters(new RuleTally(Date.now()), recentDenials);
  metrics.observeRules(live.rules);
  const decisionLog =
    config.decisionLog === '' ? undefined : DecisionLog.open(config.decisionLog, (lines) => metrics.decisionLogDropped.inc(lines), { mask: config.decisionLogMask });
  if (decisionLog !== undefined) metrics.observeDecisionLog(decisionLog);
  const recentChecks = new RecentChecks(config.recentChecks, config.recentChecksRate, clock);
  metrics.observeRecentChecks(recentChecks);
  const shadows = new ShadowDecisions(snapshots, metrics, config.shadowSamplePercent, config.decisionLogMask, clock);
  return { live, decisionLog, recentChecks, shadows, decisions: new DecisionObserver(metrics, live, decisionLog, recentChecks, shadows) };
}

/**
 * The worker pool (none under `--evaluation inline`), sized to the pod, and where bulks may go: the
 * placement BulkChecks follows, and what `/ready?verbose=true` and the start's log say of it.
 */
function workerPool(config: Config, snapshots: PolicySnapshots, decisions: DecisionObserver, metrics: Metrics, workerFile: URL | undefined) {
  const parallelism = detectParallelism();
  const workers = workerSizing(config.workers, parallelism);
  const placement = bulkPlacement(config.evaluation, parallelism, workers.threads);
  const bulk = config.evaluation === 'inline' ? undefined : bulkPool(config, workers, snapshots, decisions, workerFile);
  if (bulk !== undefined) metrics.observePool(bulk);
  const measured = bulk && placement.measured ? new MeasuredPlacement({ workers: workers.threads }) : undefined;
  return {
    bulk,
    placement: bulk && placement.poolMinimumBodyLength !== undefined ? { bulk, minimumBodyLength: placement.poolMinimumBodyLength, placement: measured } : undefined,
    evaluation: placement.description,
    workers: workers.description,
    describe: () => ({ evaluation: placement.description, worker_threads: workers.description, ...(measured && { placement: measured.describe() }) }),
  };
}

/**
 * The token verifier of `--tokens` and the identity source on it: its files read, its URLs being fetched
 * (the start does not wait for them; /ready says how they fare). Loaded only then: a start without
 * tokens loads no JOSE library and no HTTP client.
 */
async function openTokens(settings: TokenSettings, metrics: Metrics, clock: Clock): Promise<{ tokens: TokenVerifier; identities: IdentitySource }> {
  const [{ TokenVerifier }, { jwtIdentities }] = await Promise.all([import('../identity/verifier.js'), import('../identity/jwt-source.js')]);
  const tokens = TokenVerifier.open(settings, {
    verification: (outcome) => metrics.tokenOutcomes[outcome].inc(),
    refresh: (set, outcome) => metrics.keySetRefreshes.inc({ key_set: set, outcome }),
  }, clock);
  metrics.observeKeySets(() => tokens.status());
  return { tokens, identities: jwtIdentities(tokens) };
}

/** The pool of worker threads that decide bulks off the front thread. */
function bulkPool(config: Config, sizing: WorkerSizing, snapshots: PolicySnapshots, decisions: DecisionObserver, workerFile: URL | undefined): BulkPool {
  return new BulkPool(snapshots, {
    workers: sizing.threads,
    idleThreads: sizing.idleThreads,
    limits: bulkLimitsOf(config),
    timeoutMillis: config.workerTimeoutMs,
    observe: decisions.decidedInWorker,
    checksWanted: decisions.checksWanted,
    denialsWanted: decisions.denialsWanted,
    workerFile,
    schemaEnforcement: config.schemaEnforcement,
    shadowSamplePercent: config.shadowSamplePercent,
    settleMemory: config.settleMemory,
  });
}

/** Tracing, for the spans of the requests that decide. */
export interface TracedRequests {
  tracing: Tracing;
}

/** Where spans are posted: `--otlp-traces-endpoint` as it is, else `--otlp-endpoint`'s `/v1/traces`; '' for nowhere. */
const tracesEndpoint = (config: Config): string => config.otlpTracesEndpoint || config.otlpEndpoint;

/** Tracing as `--otlp-endpoint` says, its losses on /metrics. Loaded only then: a start without it loads no OpenTelemetry code. */
async function openTracedRequests(config: Config, metrics: Metrics): Promise<TracedRequests> {
  const { openTracing } = await import('../tracing/tracing.js');
  const tracing = await openTracing({ endpoint: tracesEndpoint(config), sampleRatio: config.traceSampleRatio, serviceName: config.otelServiceName });
  metrics.observeTracing(tracing.counts);
  return { tracing };
}
