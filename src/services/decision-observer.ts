import type { Metrics } from '../live/metrics.js';
import { loggedOrigin } from '../decision-log/line.js';
import type { LiveCounters } from '../live/live-counters.js';
import type { DecisionLog } from '../decision-log/decision-log.js';
import type { BulkObserver } from '../pool/bulk-pool.js';
import type { CheckObservers } from './checks.js';
import type { RecentChecks } from './recent-checks.js';
import type { ShadowDecisions } from './shadow-decisions.js';

/**
 * Where every decision is counted and recorded, whichever path made it: the decision counters of
 * /metrics, the live view, and the decision log when there is one. Checks and bulk items decided on
 * the front (CheckService) and bulks decided by a worker (BulkPool) are told to this one observer.
 */
export class DecisionObserver implements Required<CheckObservers> {
  constructor(
    private readonly metrics: Metrics,
    private readonly live: LiveCounters,
    private readonly decisionLog: DecisionLog | undefined,
    /** Where checks decided here are kept for impact previews to replay. */
    private readonly recent?: RecentChecks,
    /** The shadow policies, deciding beside the live ones. */
    private readonly shadows?: ShadowDecisions,
  ) {}

  /** Only the decision log reads how long a decision took. */
  get timed(): boolean {
    return this.decisionLog !== undefined;
  }

  /** A decision made on this thread: a check, or one item of a bulk decided here. */
  readonly decision: Required<CheckObservers>['decision'] = (input, request, decision, revision, startedAt, violations, origin) => {
    (decision.allowed ? this.metrics.allowed : this.metrics.denied).inc();
    this.live.decided(input, decision, revision, violations);
    this.recent?.record(request);
    this.shadows?.observe(request, decision);
    origin?.trace?.decided(decision);
    this.decisionLog?.record({ time: Date.now(), input, request, decision, revision, latencyMs: performance.now() - startedAt, violations, origin: loggedOrigin(origin) });
  };

  /** A check refused for breaking the attribute schemas (reject): counted where violations are, and logged with its refusal. */
  readonly refused: Required<CheckObservers>['refused'] = (input, request, refusal, revision, startedAt, origin) => {
    const decision = { allowed: false, reason: refusal.message };
    this.decisionLog?.record({ time: Date.now(), input, request, decision, revision, latencyMs: performance.now() - startedAt, violations: refusal.violations, origin: loggedOrigin(origin), refused: true });
  };

  /** Checks or plans that broke the attribute schemas (decided under warn, refused under reject), here or in a worker. */
  readonly schemaViolated = (checks = 1): void => {
    this.metrics.schemaViolations.inc(checks);
    this.live.schemaViolated(checks);
  };

  /** The size of a bulk, decided here or by a worker. */
  readonly bulk = (size: number): void => this.metrics.bulkSize.observe(size);

  /** How many of a bulk's checks a worker should send back for the recent checks (see RecentChecks.wanted). */
  readonly checksWanted = (): number => this.recent?.wanted() ?? 0;

  /** How many of a bulk's denials a worker should send back for the live view's recent denials (see RecentDenials.wanted). */
  readonly denialsWanted = (): number => this.live.denials?.wanted() ?? 0;

  /** A bulk a worker thread decided, with its counts by what decided them, and the checks of it the recent checks asked for. */
  readonly decidedInWorker: BulkObserver = ({ body, json, tally, violations, revision, elapsedMs, origin, kept, shadowed, traced }) => {
    this.metrics.allowed.inc(tally.allowed);
    this.metrics.denied.inc(tally.denied);
    this.live.decidedInWorker(tally, revision);
    for (const request of kept) this.recent?.record(request);
    if (shadowed !== undefined) this.shadows?.observeBulk(shadowed);
    origin?.trace?.decidedInPool(tally.allowed, tally.denied, traced);
    if (violations.length > 0) this.schemaViolated(violations.length);
    const count = tally.allowed + tally.denied;
    this.bulk(count);
    this.decisionLog?.recordBulk({ time: Date.now(), body: body.toString('utf8'), decisions: json, count, revision, latencyMs: elapsedMs / count, violations, origin: loggedOrigin(origin) });
  };
}
