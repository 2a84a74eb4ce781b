/**
 * The live view's whole per-request cost, in one place: plain numbers and preallocated buckets
 * that the request path increments, read and reset once a second by LiveWindow. Nothing here
 * allocates per request or does more than a lookup and a few increments.
 */
import type { Decision } from '../engine/index.js';
import type { CheckInput } from '../requests/check-request.js';
import { LatencyHistogram } from './latency-histogram.js';
import type { RecentDenials } from './recent-denials.js';
import type { CountedDecider, RuleTally } from './rule-tally.js';

/** Which latency a route's responses count in: single checks, bulk checks, or none. */
export type LatencyKind = 'check' | 'bulk' | undefined;

/** What a worker thread says it decided in one bulk: counts by what gave them, and its last denials. */
export interface BulkTally {
  allowed: number;
  denied: number;
  deciders: { decider: CountedDecider; decisions: number }[];
  /** Each with what it broke of the attribute schemas (warn; none: undefined or empty). */
  denials: { input: CheckInput; reason: string; violations: readonly string[] | undefined }[];
}

export class LiveCounters {
  allowed = 0;
  denied = 0;
  clientErrors = 0;
  serverErrors = 0;
  feedChanges = 0;
  feedLagMaxSeconds = 0;
  /** Checks and plans that broke the attribute schemas, decided (warn) or refused (reject). */
  schemaViolations = 0;
  readonly checkLatency = new LatencyHistogram();
  readonly bulkLatency = new LatencyHistogram();

  constructor(
    readonly rules: RuleTally,
    readonly denials: RecentDenials | undefined,
  ) {}

  /** A decision made on this thread (a single check, or one item of a bulk decided here), with what it broke of the schemas. */
  decided(input: CheckInput, decision: Decision, revision: number, violations?: readonly string[]): void {
    this.rules.count(decision);
    if (decision.allowed) {
      this.allowed++;
    } else {
      this.denied++;
      this.denials?.record(input, decision.reason, revision, violations);
    }
  }

  /** A bulk a worker thread decided (the worker pool's path). */
  decidedInWorker(tally: BulkTally, revision: number): void {
    this.allowed += tally.allowed;
    this.denied += tally.denied;
    for (const { decider, decisions } of tally.deciders) this.rules.countDecided(decider, decisions);
    for (const { input, reason, violations } of tally.denials) this.denials?.record(input, reason, revision, violations);
  }

  /** Checks or plans that broke the attribute schemas, here or in a worker. */
  schemaViolated(checks: number): void {
    this.schemaViolations += checks;
  }

  /** Every response: its status, and its latency when the route is a check route and the check was answered. */
  responded(statusCode: number, milliseconds: number, kind: LatencyKind): void {
    if (statusCode >= 500) this.serverErrors++;
    else if (statusCode >= 400) this.clientErrors++;
    else if (kind === 'check') this.checkLatency.record(milliseconds);
    else if (kind === 'bulk') this.bulkLatency.record(milliseconds);
  }

  /** A change from the store is served, `seconds` after it was committed. */
  feedApplied(seconds: number): void {
    this.feedChanges++;
    if (seconds > this.feedLagMaxSeconds) this.feedLagMaxSeconds = seconds;
  }

  /** Starts the next second (LiveWindow, after reading this one). */
  reset(): void {
    this.allowed = 0;
    this.denied = 0;
    this.clientErrors = 0;
    this.serverErrors = 0;
    this.feedChanges = 0;
    this.feedLagMaxSeconds = 0;
    this.schemaViolations = 0;
    this.checkLatency.reset();
    this.bulkLatency.reset();
  }
}
