import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { MongoServerError, type AnyBulkWriteOperation, type ClientSession } from 'mongodb';
import type { Counter, StoreCollections, StoredEntity } from './collections.js';
import { createIndexes, missingIndexes, raiseCounters } from './set-up.js';
import { recountDue, recountEntities } from './entity-count.js';
import { queryableFields } from './queryable.js';
import type { Entity } from '../../schemas/entity.js';

// The MongoDB store's maintenance: what a database needs that may take as long as its registry is
// large (index builds, the queryable-copy backfill, the exact entity count), run in the background
// once the store is open, so that no start of a fleet's pods waits on it (a start that did would
// outlast its timeouts on a large registry, and every pod of a rollout would crash-loop). Index
// builds are asked of every process (each returns at once once the indexes exist); the backfill and
// the recount run under a lease in the database, so that one process of the fleet does them.

/** The lease's counter document: who holds it, until when (epoch ms by the primary's clock, in `value`), and the backfill's checkpoint. */
export const MAINTENANCE_LEASE = 'maintenance-lease';
/** A lease lasts this long unless renewed; its holder renews it before each batch. */
export const LEASE_MS = 30_000;
/** Rows the backfill reads and writes at once: one bounded read, then one batch of updates. */
export const BACKFILL_BATCH = 500;
/** The longest one maintenance read may run on the server (`maxTimeMS`): past it, the step is tried again later. */
export const MAINTENANCE_READ_MS = 5_000;
/** Pauses between attempts at a step that failed: doubling from the first to the last. */
const RETRY_MS = { first: 1_000, max: 60_000 };
/** How often the steps are taken again once done: each is a few indexed reads when nothing is left to do. */
const RERUN_MS = 60 * 60_000;

export type MaintenanceStep = 'indexes' | 'counters' | 'backfill' | 'recount';

/** The primary's time, in epoch milliseconds, where a write reads it. */
const SERVER_NOW = { $toLong: '$$NOW' };
/** When a lease taken or renewed now ends, by the primary's time. */
const LEASE_END = { $add: [SERVER_NOW, LEASE_MS] };

/** Why a step stops when its holder finds the lease no longer its own. */
const LEASE_LOST = 'the maintenance lease was taken over by another Verdict process (this one was too slow to renew it)';

/** Another process of the fleet holds the lease and does the step: this one waits, which is no failure. */
class LeaseHeld extends Error {}

interface MaintenanceEvents {
  /** A step failed and will be tried again (a log line's worth). */
  failed: [{ step: MaintenanceStep; error: Error }];
  /** Every step done (by this process, or the lease's holder). */
  done: [];
}

/** A connection for index builds: the store's collections through it, and how to close it. */
export interface BuildConnection {
  collections: Pick<StoreCollections, 'policies' | 'entities' | 'audit'>;
  close(): Promise<void>;
}

/** A lease document as it is stored: a counter whose value is when the lease ends. */
type LeaseRow = Counter & { holder?: string; checkpoint?: string; done?: string[] };

/**
 * The background maintenance of one store. `status` says, for `/ready`, what is not done yet or
 * failing. `stop` ends it at the next step (none is left half-written: each batch is a write of
 * its own, and the lease's checkpoint names the last row done).
 */
export class StoreMaintenance extends EventEmitter<MaintenanceEvents> {
  private readonly holder = randomUUID();
  private readonly stopping = new AbortController();
  private running: Promise<void> | undefined;
  /** The steps are to be taken (again) from the first: set by start. */
  private again = false;
  private pending: MaintenanceStep | undefined;
  private rerun: NodeJS.Timeout | undefined;
  private lastFailure: { step: MaintenanceStep; error: Error; since: number } | undefined;

  constructor(
    private readonly collections: StoreCollections,
    private readonly withSession: <T>(use: (session: ClientSession) => Promise<T>) => Promise<T>,
    private readonly retryMs: number,
    /** A connection of its own for index builds, with no socket timeout (see createIndexes). */
    private readonly buildConnection: () => Promise<BuildConnection>,
    private readonly clock: () => number = Date.now,
  ) {
    super();
  }

  /**
   * Starts the steps in the background; while they run, has them taken again from the first once
   * they end (the database was dropped under the store, and what they made with it).
   */
  start(): void {
    this.again = true;
    // Taken again now and then: what a process of an earlier release wrote meanwhile is made right.
    this.rerun ??= setInterval(() => this.start(), RERUN_MS).unref();
    if (this.running !== undefined) return;
    this.running = (async () => {
      while (this.again && !this.stopping.signal.aborted) {
        this.again = false;
        await this.run();
      }
    })().finally(() => (this.running = undefined));
  }

  /** What `/ready` reports while maintenance is not done: the step under way, and its last failure. */
  status(): string | undefined {
    if (this.pending === undefined) return undefined;
    const failure = this.lastFailure;
    const failing =
      failure === undefined ? '' : failure.error instanceof LeaseHeld ? `: ${failure.error.message}` : `; failing since ${new Date(failure.since).toISOString()}: ${failure.error.message}`;
    return `${DESCRIPTIONS[this.pending]} not done yet${failing}`;
  }

  async stop(): Promise<void> {
    clearInterval(this.rerun);
    this.stopping.abort();
    await this.running;
  }

  private async run(): Promise<void> {
    for (const step of ['indexes', 'counters', 'backfill', 'recount'] as const) {
      this.pending = step;
      if (!(await this.untilDone(step))) return;
    }
    this.pending = undefined;
    this.lastFailure = undefined;
    this.emit('done');
  }

  /** Runs `step` until it succeeds, pausing longer after each failure; false once stopped. */
  private async untilDone(step: MaintenanceStep): Promise<boolean> {
    for (let pause = RETRY_MS.first; !this.stopping.signal.aborted; pause = Math.min(pause * 2, RETRY_MS.max)) {
      try {
        await this.runStep(step);
        this.lastFailure = undefined;
        return true;
      } catch (error) {
        if (this.stopping.signal.aborted) return false;
        this.lastFailure = { step, error: error as Error, since: this.lastFailure?.since ?? this.clock() };
        if (!(error instanceof LeaseHeld)) this.emit('failed', { step, error: error as Error });
        await sleep(pause, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      }
    }
    return false;
  }

  private async runStep(step: MaintenanceStep): Promise<void> {
    switch (step) {
      case 'indexes':
        return this.indexesBuilt();
      case 'counters':
        return raiseCounters(this.collections, MAINTENANCE_READ_MS);
      case 'backfill':
        // Never marked done: a row written later without its copy (by a process of an earlier release) is found on the next run.
        if (!(await this.backfillPending())) return;
        return this.underLease('backfill', (checkpoint) => this.backfill(checkpoint), false);
      case 'recount':
        // Never marked done either: a count moved by hand, or by a process of an earlier release, is found by its drift from the estimate.
        if (!(await recountDue(this.collections))) return;
        return this.underLease('recount', () => this.withSession((session) => this.recount(session)), false);
    }
  }

  /**
   * Does `work` once the lease is this process's, unless a holder has marked `step` done. While
   * another holds it, waits (a failure, so that the step is tried again after a pause): its holder
   * works, and should it stop, the lease runs out and another process takes it up at the checkpoint.
   */
  private async underLease(step: 'indexes' | 'backfill' | 'recount', work: (checkpoint: string | undefined) => Promise<void>, markedDone = true): Promise<void> {
    const lease = await this.acquire();
    if (lease === undefined) {
      const held = await this.collections.counters.findOne({ _id: MAINTENANCE_LEASE });
      if (markedDone && (held as LeaseRow | null)?.done?.includes(step)) return;
      throw new LeaseHeld(`another Verdict process holds the maintenance lease (until ${new Date(held?.value ?? 0).toISOString()}) and does it`);
    }
    if (markedDone && lease.done?.includes(step)) return;
    await work(lease.checkpoint);
    if (markedDone) await this.collections.counters.updateOne({ _id: MAINTENANCE_LEASE, holder: this.holder } as object, { $addToSet: { done: step }, $unset: { checkpoint: '' } } as object);
  }

  /**
   * Done once the collections list every index the store needs (never marked done: a drop takes
   * indexes along, and each run lists them again); the lease's holder alone builds what is missing,
   * while the others wait for it to be listed.
   */
  private async indexesBuilt(): Promise<void> {
    if ((await missingIndexes(this.collections)).length === 0) return;
    await this.underLease('indexes', () => this.buildIndexes(), false);
  }

  /**
   * Builds the indexes a store lacks, on a connection of its own that never cuts a build short, and
   * keeps the lease while it waits: one process of a fleet sends each build once, however long it takes.
   */
  private async buildIndexes(): Promise<void> {
    const connection = await this.buildConnection();
    const renewal = setInterval(() => void this.renewLease().catch(() => undefined), LEASE_MS / 3);
    // A store closing stops waiting for a build (the server finishes it, and the next holder finds it listed).
    const closeOnStop = () => void connection.close().catch(() => undefined);
    this.stopping.signal.addEventListener('abort', closeOnStop);
    try {
      await createIndexes(connection.collections, await missingIndexes(connection.collections));
    } finally {
      clearInterval(renewal);
      this.stopping.signal.removeEventListener('abort', closeOnStop);
      await connection.close().catch(() => undefined);
    }
  }

  /** Moves the end of this process's lease LEASE_MS on (by the server's clock); false when it no longer holds it. */
  private async renewLease(): Promise<boolean> {
    const renewed = await this.collections.counters.updateOne({ _id: MAINTENANCE_LEASE, holder: this.holder } as object, [{ $set: { value: LEASE_END } }]);
    return renewed.matchedCount > 0;
  }

  /**
   * The lease, taken or renewed until LEASE_MS from now; undefined while another process holds it.
   * Its end is the primary's time, written and compared there: the pods' clocks never meet.
   */
  private async acquire(): Promise<LeaseRow | undefined> {
    try {
      const row = await this.collections.counters.findOneAndUpdate(
        { _id: MAINTENANCE_LEASE, $or: [{ $expr: { $lt: ['$value', SERVER_NOW] } }, { holder: this.holder }] } as object,
        [{ $set: { value: LEASE_END, holder: { $literal: this.holder } } }],
        { upsert: true, returnDocument: 'after' },
      );
      return (row ?? undefined) as LeaseRow | undefined;
    } catch (error) {
      // The upsert found the lease held by another (its filter did not match, and the _id is taken).
      if (error instanceof MongoServerError && error.code === 11000) return undefined;
      throw error;
    }
  }

  /** Whether a row lacks its queryable copy: one indexed read. */
  private async backfillPending(): Promise<boolean> {
    const row = await this.collections.entities.findOne({ attributes_version: { $exists: false } }, { projection: { _id: 1 }, maxTimeMS: MAINTENANCE_READ_MS });
    return row !== null;
  }

  /** Counts the registry again (see recountEntities), renewing the lease after each batch. */
  private async recount(session: ClientSession): Promise<void> {
    const renewed = async () => {
      if (!(await this.renewLease())) throw new Error(LEASE_LOST);
    };
    await recountEntities(this.collections, session, { retryMs: this.retryMs, maxTimeMS: MAINTENANCE_READ_MS }, renewed, () => this.stopping.signal.aborted);
  }

  /**
   * Gives every entity row written before queryable copies were kept (see queryable.ts) its
   * copy, BACKFILL_BATCH rows at a time in uri order from `checkpoint`, each read bounded by
   * MAINTENANCE_READ_MS. Each update names the text and version it read, so a row rewritten meanwhile
   * is left to the write that rewrote it. After each batch the lease is renewed and the checkpoint
   * moved, so that a process taking the lease over goes on from there.
   */
  private async backfill(checkpoint: string | undefined): Promise<void> {
    const { entities, counters } = this.collections;
    let after = checkpoint;
    while (!this.stopping.signal.aborted) {
      const pending = { attributes_version: { $exists: false }, ...(after === undefined ? {} : { _id: { $gt: after } }) };
      const rows = await entities
        .find(pending, { projection: { document: 1, version: 1 }, maxTimeMS: MAINTENANCE_READ_MS })
        .sort({ _id: 1 })
        .limit(BACKFILL_BATCH)
        .toArray();
      if (rows.length === 0) return;
      const updates: AnyBulkWriteOperation<StoredEntity>[] = rows.map(({ _id, document, version }) => ({
        updateOne: {
          filter: { _id, document, version: version ?? { $exists: false }, attributes_version: { $exists: false } },
          update: { $set: queryableFields(JSON.parse(document) as Entity, document, version ?? 0) },
        },
      }));
      await entities.bulkWrite(updates, { ordered: false });
      after = rows.at(-1)!._id;
      const renewed = await counters.updateOne(
        { _id: MAINTENANCE_LEASE, holder: this.holder } as object,
        [{ $set: { value: LEASE_END, checkpoint: { $literal: after } } }],
      );
      if (renewed.matchedCount === 0) throw new Error(LEASE_LOST);
      if (rows.length < BACKFILL_BATCH) return;
    }
  }
}

const DESCRIPTIONS: Record<MaintenanceStep, string> = {
  indexes: 'index builds',
  counters: 'the counter check',
  backfill: "the backfill of the entities' queryable copies",
  recount: 'the exact entity count',
};
