import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import type { BulkPool } from '../pool/bulk-pool.js';
import type { AuditObserver } from '../store/store.js';
import type { RuleTally } from './rule-tally.js';
import { PlainCounter, PlainHistogram } from './plain-metrics.js';
import type { PolicyDirectory } from '../policy-files/policy-directory.js';
import type { KeyRing } from '../admin-keys.js';
import type { FeedHealth } from '../snapshot/follow-changes.js';
import type { EntityAttributeCache } from '../registry/entity-cache.js';

/** Request latencies are mostly tens of microseconds; the upper buckets catch stalls. */
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** The embedded store's feed polls every 25 ms; MongoDB's change streams are usually faster, stalls slower. */
const FEED_LAG_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const BULK_SIZE_BUCKETS = [1, 10, 50, 100, 250, 500, 1000, 5000, 10000];

/**
 * Everything GET /metrics reports, in a registry of this server's own (so servers in one process
 * do not share counters). Gauges are read at scrape time; counters are moved by the code that counts,
 * those of every request and decision as plain numbers (see plain-metrics.ts).
 */
export class Metrics {
  readonly registry = new Registry();
  /** Bound per method, route and status code (see instrumentRoutes). */
  readonly requestDuration = new PlainHistogram(
    'verdict_http_request_duration_seconds',
    'HTTP requests by method, route and status code, and how long they took',
    LATENCY_BUCKETS,
    this.registry,
  );
  /** Calls of the gRPC doors (`--ext-authz-grpc`), by method and gRPC status code. */
  readonly grpcCallDuration = new PlainHistogram(
    'verdict_grpc_call_duration_seconds',
    "gRPC calls (Envoy's external authorization) by method and status code (0 OK, 7 PERMISSION_DENIED, 16 UNAUTHENTICATED), and how long they took",
    LATENCY_BUCKETS,
    this.registry,
  );
  private readonly decisions = new PlainCounter('verdict_decisions_total', 'Decisions made, by outcome', this.registry);
  private readonly shadowDecisions = new PlainCounter(
    'verdict_shadow_decisions_total',
    'Checks the shadow policies decided beside the live ones, by outcome: agree, allow_to_deny (the shadows would deny what is allowed) or deny_to_allow',
    this.registry,
  );
  readonly shadowOutcomes = {
    agree: this.shadowDecisions.bind({ outcome: 'agree' }),
    allow_to_deny: this.shadowDecisions.bind({ outcome: 'allow_to_deny' }),
    deny_to_allow: this.shadowDecisions.bind({ outcome: 'deny_to_allow' }),
  };
  private readonly tokenVerifications = new PlainCounter(
    'verdict_token_verifications_total',
    "Principals' bearer tokens read, by outcome: verified (a signature checked), cached (verified lately) or rejected",
    this.registry,
  );
  readonly tokenOutcomes = {
    verified: this.tokenVerifications.bind({ outcome: 'verified' }),
    cached: this.tokenVerifications.bind({ outcome: 'cached' }),
    rejected: this.tokenVerifications.bind({ outcome: 'rejected' }),
  };
  readonly keySetRefreshes = new Counter({
    name: 'verdict_token_key_set_refreshes_total',
    help: 'Fetches of a key set from its JWKS URL, by key set and outcome (loaded, or failed: the keys fetched before stay in use)',
    labelNames: ['key_set', 'outcome'],
    registers: [this.registry],
  });
  readonly allowed = this.decisions.bind({ allowed: 'true' });
  readonly denied = this.decisions.bind({ allowed: 'false' });
  readonly bulkSize = new PlainHistogram('verdict_bulk_checks', 'Checks per POST /check/bulk call', BULK_SIZE_BUCKETS, this.registry).unlabelled();
  readonly changeFeedErrors = new Counter({
    name: 'verdict_change_feed_errors_total',
    help: 'Changes from the store that could not be applied (the last good snapshot kept serving)',
    registers: [this.registry],
  });
  readonly changeFeedLag = new Histogram({
    name: 'verdict_change_feed_lag_seconds',
    help: 'From a write committed by another process to this process serving it (snapshot rebuilt, cache entry dropped)',
    buckets: FEED_LAG_BUCKETS,
    registers: [this.registry],
  });
  readonly snapshotRebuildFailures = new Counter({
    name: 'verdict_snapshot_rebuild_failures_total',
    help: 'Policy snapshot rebuilds that could not read the store (each is retried; GET /ready says since when)',
    registers: [this.registry],
  });
  /** Registered only while attribute schemas are enforced (see observeSchemaViolations). */
  readonly schemaViolations = new Counter({
    name: 'verdict_schema_violations_total',
    help: 'Checks and plans whose attributes broke the attribute schemas (decided under --schema-enforcement warn, refused under reject)',
    registers: [],
  });
  readonly attributeConflicts = new Counter({
    name: 'verdict_attribute_conflicts_total',
    help: 'Supplied attributes that disagreed with the registered ones and gave way to them (admin authentication on: the caller is not told)',
    registers: [this.registry],
  });
  readonly decisionLogDropped = new Counter({
    name: 'verdict_decision_log_dropped_total',
    help: 'Decision log lines dropped because the buffer was full (the sink could not keep up)',
    registers: [this.registry],
  });

  private readonly auditRecords = new Counter({
    name: 'verdict_audit_records_total',
    help: 'Audit records committed with their admin writes, by operation',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });
  readonly auditWriteFailures = new Counter({
    name: 'verdict_audit_write_failures_total',
    help: 'Admin writes that failed in the store: neither the write nor its audit record was committed',
    registers: [this.registry],
  });
  readonly auditWritesUnconfirmed = new Counter({
    name: 'verdict_audit_writes_unconfirmed_total',
    help: 'Admin writes the store did not confirm in time (answered 503): each, with its audit record, may have been committed or not',
    registers: [this.registry],
  });
  readonly auditPruned = new Counter({
    name: 'verdict_audit_records_pruned_total',
    help: 'Audit records deleted by the retention (--audit-retention)',
    registers: [this.registry],
  });
  readonly auditPruneFailures = new Counter({
    name: 'verdict_audit_prune_failures_total',
    help: 'Retention runs that failed (retried at the next run)',
    registers: [this.registry],
  });

  /** The store's audit observer: counts records and failed writes. */
  readonly auditObserver: AuditObserver = {
    recorded: (operation) => this.auditRecords.labels(operation).inc(),
    failed: () => this.auditWriteFailures.inc(),
    unconfirmed: () => this.auditWritesUnconfirmed.inc(),
  };

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** Adds the gauges of the policy snapshot (made after the store opens, which already counts audit records). */
  observeSnapshots(snapshots: PolicySnapshots): void {
    snapshots.on('rebuildFailed', () => this.snapshotRebuildFailures.inc());
    this.gauge('verdict_snapshot_revision', 'Revision of the policy snapshot that decisions use', () => snapshots.current.revision);
    this.gauge('verdict_snapshot_age_seconds', 'Seconds since the policy snapshot in use was built', () => (Date.now() - snapshots.builtAt) / 1000);
    this.gauge('verdict_policies', 'Policies in the snapshot in use', () => snapshots.policies.length);
  }

  /** Adds how long the store's change feed has been interrupted. */
  observeFeed(feed: FeedHealth): void {
    this.gauge(
      'verdict_change_feed_interrupted_seconds',
      "Seconds since this process lost the store's change feed, 0 while it follows (meanwhile writes by other processes are not applied here)",
      () => (feed.interruption === undefined ? 0 : (Date.now() - feed.interruption.since) / 1000),
    );
  }

  /** Adds what tracing lost to an exporter down or slow. */
  observeTracing(counts: { dropped: number; failedExports: number }): void {
    this.gauge('verdict_tracing_spans_dropped', 'Spans dropped since the start because the export queue was full (the collector down or slow)', () => counts.dropped);
    this.gauge('verdict_tracing_exports_failed', 'Span exports to the collector that failed since the start', () => counts.failedExports);
  }

  /** What the entity cache holds, and its bounds. */
  observeEntityCache(cache: Pick<EntityAttributeCache, 'size' | 'heldBytes' | 'maxBytes'>): void {
    this.gauge('verdict_entity_cache_entries', 'Registry entities held by the entity cache', () => cache.size);
    this.gauge('verdict_entity_cache_bytes', "What the entity cache holds, in bytes of its entities as JSON (an estimate)", () => cache.heldBytes);
    this.gauge('verdict_entity_cache_bytes_limit', 'The most the entity cache may hold, in the same bytes (--entity-cache-bytes)', () => cache.maxBytes);
  }

  /** What the recent checks kept for impact previews hold, and their bound. */
  observeRecentChecks(recent: { readonly heldBytes: number; readonly boundBytes: number }): void {
    this.gauge('verdict_recent_checks_bytes', 'What the recent checks kept for impact previews hold, in bytes of JSON (an estimate)', () => recent.heldBytes);
    this.gauge('verdict_recent_checks_bytes_limit', 'The most they may hold: --recent-checks × 16 KB', () => recent.boundBytes);
  }

  /** What the live view's recent denials hold, their bound, and the denials not kept for their size. */
  observeRecentDenials(denials: { readonly heldBytes: number; readonly boundBytes: number; readonly skipped: number }): void {
    this.gauge('verdict_recent_denials_bytes', "What the live view's recent denials hold, in bytes of their checks' JSON (an estimate)", () => denials.heldBytes);
    this.gauge('verdict_recent_denials_bytes_limit', 'The most they may hold: --recent-denials × 16 KB', () => denials.boundBytes);
    this.gauge('verdict_recent_denials_skipped', 'Denials not kept since the start, their checks larger than 16 KB', () => denials.skipped);
  }

  /** Adds the gauges of the decision log's queue: the lines waiting to be written and what they hold, against their bounds. */
  observeDecisionLog(log: { readonly queued: { lines: number; bytes: number }; readonly capacity: number; readonly capacityBytes: number }): void {
    this.gauge('verdict_decision_log_queue_lines', 'Decision log lines waiting to be written or delivered', () => log.queued.lines);
    this.gauge('verdict_decision_log_queue_lines_limit', 'The most that may wait; past it, lines are dropped and counted', () => log.capacity);
    this.gauge('verdict_decision_log_queue_bytes', 'What the waiting lines hold, in bytes (an estimate)', () => log.queued.bytes);
    this.gauge('verdict_decision_log_queue_bytes_limit', 'The most they may hold; past it, lines are dropped and counted', () => log.capacityBytes);
  }

  /** Adds the gauges of the bulk worker pool. */
  observePool(pool: BulkPool): void {
    this.gauge('verdict_worker_pool_threads', 'Worker threads of the bulk pool', () => pool.threads);
    this.gauge('verdict_worker_pool_queue_size', 'Bulk tasks waiting for a worker thread', () => pool.queueSize);
    this.gauge('verdict_worker_pool_utilization', 'Share of the pool capacity in use since start (0 to 1)', () => pool.utilization);
    this.countedWhenScraped(
      'verdict_worker_pool_copies_total',
      'Copies made for worker threads that hold other policies than a task: of the policy set, the shadow policies, or the policies changed since what a worker holds; one copy serves every task in flight',
      ['of'],
      () => pool.copies.kinds.map((kind) => [{ of: kind }, pool.copies.madeOf(kind)]),
    );
    this.gauge('verdict_worker_pool_copies_bytes', 'What the latest copy of each kind kept for worker threads holds, in bytes', () => pool.copies.bytes);
  }

  /**
   * Adds the decisions by rule and by default effect, read from the live view's tally when scraped
   * (so the hot path pays nothing more for them). Bounded: see MAX_COUNTED_RULES.
   */
  observeRules(tally: RuleTally): void {
    this.countedWhenScraped(
      'verdict_rule_decisions_total',
      'Decisions by the rule that gave them (policy and rule "(other)": rules past the first 1000 counted)',
      ['policy', 'rule', 'effect'],
      () => tally.totals().flatMap(({ decider, total }) => (decider.kind === 'rule' ? [[{ policy: decider.policy, rule: decider.rule, effect: decider.effect }, total]] : [])),
    );
    this.countedWhenScraped(
      'verdict_default_effect_decisions_total',
      'Decisions given by the default effect: no rule matched (or there are no policies)',
      ['effect'],
      () => tally.totals().flatMap(({ decider, total }) => (decider.kind === 'default' ? [[{ effect: decider.effect }, total]] : [])),
    );
  }

  /** Attribute schemas are enforced on checks: their violations are served. */
  observeSchemaViolations(): void {
    this.registry.registerMetric(this.schemaViolations);
  }

  /** Adds what says whether the policy files on disk are in force (`--policies`). */
  observePolicyFiles(directory: PolicyDirectory): void {
    this.observeReloads(
      directory,
      'verdict_policy_files',
      'Whether the policy files on disk are the policies in force (1), or a change was refused and the last good set serves (0)',
      'Changes to the policy files that were not applied because a file was not valid',
    );
  }

  /** Adds what says whether the admin keys file on disk is in force (`--admin-keys-file`). */
  observeAdminKeysFile(keys: KeyRing): void {
    this.observeReloads(
      keys,
      'verdict_admin_keys_file',
      'Whether the admin keys in force are those of the keys file on disk (1), or a change was refused and the last good keys stay (0)',
      'Changes to the admin keys file that were not applied because it could not be read or parsed',
    );
  }

  /** For a file reloaded when it changes: `<name>_in_force`, 0 while a change is refused, and `<name>_rejected_total`. */
  private observeReloads(source: { rejected: unknown; on(event: 'rejected', listener: () => void): unknown }, name: string, inForceHelp: string, rejectedHelp: string): void {
    this.gauge(`${name}_in_force`, inForceHelp, () => (source.rejected === undefined ? 1 : 0));
    const rejected = new Counter({ name: `${name}_rejected_total`, help: rejectedHelp, registers: [this.registry] });
    source.on('rejected', () => rejected.inc());
  }

  /** Adds the keys each token key set holds, read when scraped. */
  observeKeySets(status: () => { name: string; keys: number }[]): void {
    new Gauge({
      name: 'verdict_token_key_set_keys',
      help: 'Keys each token key set holds (0 until a JWKS URL was fetched once)',
      labelNames: ['key_set'],
      registers: [this.registry],
      collect() {
        for (const { name, keys } of status()) this.set({ key_set: name }, keys);
      },
    });
  }

  /** A counter whose totals are read from where they are kept when scraped: `read` gives each label set's. */
  private countedWhenScraped<Label extends string>(name: string, help: string, labelNames: readonly Label[], read: () => [Record<Label, string>, number][]): void {
    new Counter({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [labels, total] of read()) this.inc(labels, total);
      },
    });
  }

  /** A gauge read when /metrics is scraped. */
  private gauge(name: string, help: string, read: () => number): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }
}
