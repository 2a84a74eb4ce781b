import { MongoServerError, type ClientSession } from 'mongodb';
import { StoreUnavailableError } from '../errors.js';
import { ENTITY_COUNT, type Counter, type StoreCollections } from './collections.js';
import { MAX_TIME_EXPIRED, rethrowStoreError } from './errors.js';
import { runTransaction } from './transaction.js';

// The registry's size on MongoDB. Every registration and deletion moves a kept count in its own
// transaction, so that `$count` reads one document. The maintenance makes that count exact by
// counting the rows again in uri order, RECOUNT_BATCH rows a transaction, resuming where the last
// batch ended (whichever process holds the lease): a registry of any size is counted by reads each
// bounded. While it counts, a write to a uri it has passed moves its running count as well. A batch
// and a write both update the counter document, so two committed at once conflict, and one of them
// runs again on what the other wrote.

/** Rows one batch of the recount reads (their uris only, from the `_id` index). */
export const RECOUNT_BATCH = 10_000;
/** How long `$count` may count the rows itself, while the kept count is not exact yet. */
export const COUNT_READ_BOUND_MS = 1_000;

/** The registry is too large to count on request, and its kept count is not exact yet: answered 503. */
export class CountNotReady extends StoreUnavailableError {}

/**
 * The kept count, one document read, once it is exact; until then the rows counted, within
 * COUNT_READ_BOUND_MS, or CountNotReady.
 */
export async function countEntities({ entities, counters }: Pick<StoreCollections, 'entities' | 'counters'>): Promise<number> {
  let kept: Counter | null = null;
  try {
    kept = await counters.findOne({ _id: ENTITY_COUNT });
    if (kept?.exact) return kept.value;
    return await entities.countDocuments({}, { maxTimeMS: COUNT_READ_BOUND_MS });
  } catch (error) {
    if (error instanceof MongoServerError && error.code === MAX_TIME_EXPIRED) {
      const counted = kept?.recount === undefined ? 'its count has not begun' : `${kept.recount.value} counted so far`;
      throw new CountNotReady(`the registry is too large to count on request, and the count the store keeps is being made exact (${counted}); ask again once it is`);
    }
    return rethrowStoreError(error);
  }
}

/**
 * Within a write: moves the kept count by `change` for each of `uris` (registered: 1, deleted: -1),
 * and the recount's running count for those it has passed.
 */
export async function moveEntityCount(counters: StoreCollections['counters'], session: ClientSession, change: 1 | -1, uris: readonly string[]): Promise<void> {
  const recount = (await counters.findOne({ _id: ENTITY_COUNT }, { session, projection: { recount: 1 } }))?.recount;
  const passed = recount === undefined ? 0 : uris.filter((uri) => uri <= recount.after).length;
  const moves = { value: change * uris.length, ...(passed > 0 && { 'recount.value': change * passed }) };
  await counters.updateOne({ _id: ENTITY_COUNT }, { $inc: moves }, { upsert: true, session });
}

/** Whether the kept count should be made exact: it never was, a recount is under way, or the collection's estimate has moved away from it since it was. */
export async function recountDue({ entities, counters }: Pick<StoreCollections, 'entities' | 'counters'>): Promise<boolean> {
  const kept = await counters.findOne({ _id: ENTITY_COUNT });
  if (kept?.exact !== true || kept.recount !== undefined) return true;
  return (await entities.estimatedDocumentCount()) - kept.value !== (kept.drift ?? 0);
}

/**
 * Counts the rows again, from where the last batch ended, until every row is counted or `stopped`;
 * `batchDone` is told after each batch (the lease is renewed there). Each batch reads at most
 * RECOUNT_BATCH uris within `maxTimeMS`. Once done, the count is exact, and the collection's
 * estimate is noted beside it: an estimate that drifts from the count (as it may after an unclean
 * shutdown) starts no recount until it drifts again.
 */
export async function recountEntities(
  { entities, counters }: Pick<StoreCollections, 'entities' | 'counters'>,
  session: ClientSession,
  bounds: { retryMs: number; maxTimeMS: number },
  batchDone: () => Promise<void>,
  stopped: () => boolean,
): Promise<void> {
  await counters.updateOne({ _id: ENTITY_COUNT, recount: { $exists: false } } as object, { $set: { recount: { after: '', value: 0 } } }, { upsert: true }).catch((error: unknown) => {
    // Another process began the recount between the two: it goes on from there.
    if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
  });
  for (let finished = false; !finished && !stopped(); ) {
    finished = await runTransaction(
      session,
      async () => {
        const recount = (await counters.findOne({ _id: ENTITY_COUNT }, { session }))?.recount;
        // Another process finished it meanwhile.
        if (recount === undefined) return true;
        const rows = await entities
          .find({ _id: { $gt: recount.after } }, { session, projection: { _id: 1 }, sort: { _id: 1 }, limit: RECOUNT_BATCH, maxTimeMS: bounds.maxTimeMS })
          .toArray();
        const value = recount.value + rows.length;
        const last = rows.length < RECOUNT_BATCH;
        const update = last ? { $set: { value, exact: true as const }, $unset: { recount: '' as const } } : { $set: { recount: { after: rows.at(-1)!._id, value } } };
        await counters.updateOne({ _id: ENTITY_COUNT }, update, { session });
        return last;
      },
      bounds.retryMs,
      { readConcern: { level: 'snapshot' } },
    );
    if (!finished) await batchDone();
  }
  if (stopped()) return;
  const [estimate, kept] = await Promise.all([entities.estimatedDocumentCount(), counters.findOne({ _id: ENTITY_COUNT })]);
  // Noted only while no write moved the count between the two reads: otherwise the next run compares again.
  if (kept?.exact) await counters.updateOne({ _id: ENTITY_COUNT, value: kept.value, recount: { $exists: false } } as object, { $set: { drift: estimate - kept.value } });
}
