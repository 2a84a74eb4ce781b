import type { Decision } from '../engine/index.js';
import type { BulkPool } from '../pool/bulk-pool.js';
import type { MeasuredPlacement } from '../pool/measured-placement.js';
import { compileBulkValidator, plainlyNamesToken, plainlyNamesUri, readBulkBody, type BulkLimits, type BulkValidator } from '../requests/bulk-request.js';
import type { RequestOrigin } from '../decision-log/line.js';
import type { CheckService } from './checks.js';

/** Where bulks may go besides the front thread (see bulkPlacement): bodies of at least `minimumBodyLength` bytes, or, with `placement`, those that come while it chooses the pool. */
export interface PoolPlacement {
  bulk: BulkPool;
  minimumBodyLength: number;
  placement?: MeasuredPlacement;
}

/** A bulk's decisions: the JSON text a worker wrote, or the front's own (as CheckService.checkMany gives them). */
export type DecidedBulk = { json: string } | { decisions: Decision[] | Promise<Decision[]> };

/** How a bulk was asked: with explanations; refused whole (422) when an item cannot be decided as asked. */
export interface BulkAsked {
  explain: boolean;
  refuseConflicts: boolean;
}

/**
 * Decides bulk check bodies, choosing where: on the front thread, or by a worker of the pool. The
 * route hands over the body's bytes and answers what comes back; it places nothing. A bulk the front
 * decides from its caches is decided without a promise.
 */
export class BulkChecks {
  private readonly validator: BulkValidator = compileBulkValidator();

  constructor(
    private readonly checks: CheckService,
    private readonly limits: BulkLimits,
    private readonly pool: PoolPlacement | undefined,
  ) {}

  /** Throws (or rejects with) the client errors the body deserves, as CheckService.checkMany and BulkPool.decide do. */
  decide(bytes: Buffer, asked: BulkAsked, origin: RequestOrigin): DecidedBulk | Promise<DecidedBulk> {
    const placed = this.placed(bytes, asked.explain);
    if (placed.pool === undefined) {
      const decided = this.onFront(bytes, asked, origin);
      placed.measured?.decidedInline(bytes.length);
      return decided;
    }
    return this.inPool(placed.pool, placed.measured, bytes, asked, origin);
  }

  private onFront(bytes: Buffer, asked: BulkAsked, origin: RequestOrigin): DecidedBulk {
    return { decisions: this.checks.checkMany(readBulkBody(bytes.toString('utf8'), this.validator, this.limits), asked.explain, origin, asked.refuseConflicts) };
  }

  /** By a worker; on the front when the worker hands the bulk back (an item only the front can decide) or failed. */
  private async inPool(pool: BulkPool, measured: MeasuredPlacement | undefined, bytes: Buffer, asked: BulkAsked, origin: RequestOrigin): Promise<DecidedBulk> {
    const json = measured === undefined ? await pool.decide(bytes, asked.explain, undefined, origin) : await measuredInPool(pool, measured, bytes, origin);
    return json === undefined ? this.onFront(bytes, asked, origin) : { json };
  }

  /**
   * A bulk's path: the front's unless there is a pool and the bulk is explained (worth a worker at
   * any size: explanations may be as long as the answer budget) or big, and names no `uri` (the front
   * holds the entity cache) and no token (the front verifies them); a worker decides by the shadow
   * policies too. Big bulks take the path measured faster, when it is measured; `measured` is the
   * placement to tell what the path cost.
   */
  private placed(bytes: Buffer, explain: boolean): { pool?: BulkPool; measured?: MeasuredPlacement } {
    const { pool } = this;
    if (pool === undefined || (!explain && bytes.length < pool.minimumBodyLength) || plainlyNamesUri(bytes) || plainlyNamesToken(bytes)) return {};
    const measured = explain ? undefined : pool.placement;
    if (measured === undefined) return { pool: pool.bulk };
    return measured.path() === 'pool' ? { pool: pool.bulk, measured } : { measured };
  }
}

/** A bulk's decisions from the pool, as BulkPool.decide gives them, with what it cost told to `placement`. */
async function measuredInPool(bulk: BulkPool, placement: MeasuredPlacement, bytes: Buffer, origin: RequestOrigin): Promise<string | undefined> {
  let workerMs: number | undefined;
  placement.handedOff();
  try {
    return await bulk.decide(bytes, false, (took) => (workerMs = took), origin);
  } finally {
    placement.answeredByPool(bytes.length, workerMs);
  }
}
