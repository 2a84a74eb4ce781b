import type { Settled } from '../settle-memory.js';
import type { Policy } from '../schemas/policy.js';
import type { ChangedPolicy, DecisionRequest } from '../engine/index.js';
import type { ValidationIssue } from '../schemas/errors.js';
import type { BulkLimits } from '../requests/bulk-request.js';
import type { BulkTally } from '../live/live-counters.js';
import type { PlanSettings, PlanWork } from '../decide/plan-answers.js';
import type { ItemViolations } from '../attribute-schemas/enforcement.js';
import type { SchemaDocument } from '../attribute-schemas/schema-document.js';
import type { SchemaEnforcement } from '../config/config.js';
import type { ShadowedBulk } from '../decide/shadowed.js';
import type { DeciderAttributes } from '../decision-log/line.js';
import type { SharedCopy } from './shared-copy.js';

/** Work for a worker, with the snapshot revision it must be done at. */
export interface TaskAtRevision {
  /** Never 0; unique among the tasks in flight. */
  id: number;
  revision: number;
  /** The generation of the front's snapshot (see PolicySnapshots.generation): with `revision`, which policies to decide by. */
  generation: number;
  /**
   * The policies written since the revision a worker that answered `stale` holds (`from`, of the
   * task's generation), up to `revision`: it derives its snapshot from them (see PolicySnapshots.changesBetween).
   */
  changes?: { from: number; policies: SharedCopy<readonly ChangedPolicy[]> };
  /** The whole policy set of `revision`: sent to a worker that answered `stale` when changes cannot be. */
  whole?: SharedCopy<PolicySet>;
  /**
   * While shadow policies are written: the version of the set they are decided by (see
   * PolicySnapshots.shadowVersion), and that set's policies when a worker that answered `stale` may not hold it.
   */
  shadow?: { version: number; policies?: SharedCopy<readonly Policy[]> };
}

/** What a worker needs to hold a snapshot whatever it holds. */
export interface PolicySet {
  policies: readonly Policy[];
  /** Each policy's position (see compile). */
  positions: readonly number[];
  /** When schemas are enforced: the attribute schema document that came with the policies (none: undefined). */
  schemas?: SchemaDocument;
}

/** A bulk check body to decide. */
export interface BulkTask extends TaskAtRevision {
  kind: 'checks';
  /** The body's bytes, valid UTF-8 (the front checked), moved to the worker (a transferred buffer). */
  body: ArrayBuffer;
  limits: BulkLimits;
  /** Each decision carries its explanation. */
  explain: boolean;
  /** How many of the bulk's checks, the first ones, to send back as they were decided (for the recent checks; see RecentChecks.wanted). */
  keepChecks: number;
  /** How many of the bulk's denials, the last ones, to send back as they were sent (for the recent denials; see RecentDenials.wanted). */
  keepDenials: number;
  /** Say what decided each check (its items are traced: see DecisionTally.tracesItems). */
  traceItems: boolean;
}

/** Plans to make, their principals resolved on the front; answered as one plan's JSON (`single`) or a list's. */
export interface PlanTask extends TaskAtRevision {
  kind: 'plans';
  work: PlanWork[];
  settings: PlanSettings;
  single: boolean;
}

export type PoolTask = BulkTask | PlanTask;

export type PoolOutcome =
  /**
   * The decisions, serialized, in request order, what decided them and what the items that broke the
   * attribute schemas broke (warn: decided all the same), at the worker's snapshot revision, in elapsedMs;
   * the first `keepChecks` checks, as decided; and, with shadow policies, what they said of its sampled checks.
   */
  | {
      kind: 'decided';
      json: string;
      tally: BulkTally;
      violations: ItemViolations;
      revision: number;
      elapsedMs: number;
      kept: DecisionRequest[];
      shadowed?: ShadowedBulk;
      /** When its items are traced: what decided each, in order. */
      traced?: DeciderAttributes[];
    }
  /** The worker holds another snapshot than the task's (`holds`; none yet: undefined): send the changes or the policies along. */
  | { kind: 'stale'; holds: { revision: number; generation: number } | undefined }
  /** An item names a registered entity or a credential: the front, which holds the entity cache and verifies credentials, decides (see onlyTheFrontDecides). */
  | { kind: 'needs-front' }
  /** An item breaks the attribute schemas under `reject`: the front decides the bulk, refusing such items as it refuses any check. */
  | { kind: 'breaks-schema' }
  | { kind: 'refused'; statusCode: number; detail: string | ValidationIssue[] }
  /** The plans' answers, serialized. */
  | { kind: 'planned'; json: string };

/** What a worker is given when it starts (Piscina's workerData). */
export interface WorkerStart {
  /** The buffer of a RunningTasks: where the worker says which task it runs. */
  runningTasks: SharedArrayBuffer;
  /** How the attribute schemas that come with the policies are enforced. */
  schemaEnforcement: SchemaEnforcement;
  /** The share of checks the shadow policies decide (`--shadow-sample-percent`). */
  shadowSamplePercent: number;
  /** Whether the worker settles its memory when it goes quiet (`--settle-memory`), telling the front each time with a WorkerSettled. */
  settleMemory: boolean;
}

/** What a worker posts to the front when it settled its memory. */
export interface WorkerSettled {
  settled: Settled;
}

export const isWorkerSettled = (message: unknown): message is WorkerSettled =>
  typeof message === 'object' && message !== null && 'settled' in message;
