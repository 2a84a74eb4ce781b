import { randomInt } from 'node:crypto';
import { MongoServerError, type AnyBulkWriteOperation, type ClientSession, type Collection, type Document } from 'mongodb';
import { ENTITY_COUNT, type Counter, type StoreCollections, type StoredEntity } from './mongodb-collections.js';
import { queryableFields } from './mongodb-queryable.js';
import type { Entity } from '../schemas/entity.js';
import { runTransaction } from './mongodb-transaction.js';
import { SCHEMAS_TARGET } from '../audit/record.js';

// What the MongoDB store needs of a database besides its documents, made sure of at start and
// again whenever the change feed loses track (a collection or the database dropped): every step
// is idempotent, and processes taking them at once agree.

const INDEX_OPTIONS_CONFLICT = 85;

/** Unique positions and the audit trail's query indexes. */
export async function createIndexes({ policies, entities, audit }: StoreCollections): Promise<void> {
  // Positions are unique: a non-unique index from an earlier release is replaced.
  for (const collection of [policies, entities]) {
    try {
      await collection.createIndex({ position: 1 }, { unique: true });
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === INDEX_OPTIONS_CONFLICT)) throw error;
      await collection.dropIndex('position_1');
      await collection.createIndex({ position: 1 }, { unique: true });
    }
  }
  // Finds the rows the backfill has yet to reach without reading the others (see backfillQueryableFields).
  await entities.createIndex({ attributes_version: 1, _id: 1 });
  await audit.createIndex({ target: 1, _id: -1 });
  await audit.createIndex({ actor: 1, _id: -1 });
  await audit.createIndex({ time: 1 });
  await audit.createIndex({ target: 1, policy_version: 1 }, { unique: true, partialFilterExpression: { policy_version: { $exists: true } } });
}

/** The greatest value of `field` in `collection`, 0 when it is empty. */
async function greatest<T extends Document>(collection: Collection<T>, field: string): Promise<number> {
  const [row] = await collection.find({}, { projection: { [field]: 1 } }).sort({ [field]: -1 }).limit(1).toArray();
  return Number((row as Document | undefined)?.[field] ?? 0);
}

/** Raises each counter to `floor` when it is below it (`$max` never lowers one, so processes doing this at once agree). */
async function raise(counters: Collection<Counter>, floors: Map<string, number>): Promise<void> {
  const raises: AnyBulkWriteOperation<Counter>[] = [...floors]
    .filter(([, floor]) => floor > 0)
    .map(([counter, floor]) => ({ updateOne: { filter: { _id: counter }, update: { $max: { value: floor } }, upsert: true } }));
  if (raises.length > 0) await counters.bulkWrite(raises, { ordered: false });
}

/**
 * Raises the revision, position and audit counters to at least the greatest value their
 * collections hold, so that counters reset (dropped, or restored from an older copy) never hand
 * one out again: a revision handed out twice would be taken by other processes for one they hold.
 */
export async function raiseCounters({ policies, entities, counters, audit, policyChanges }: StoreCollections): Promise<void> {
  const floors = new Map([
    ['policy-revision', await greatest(policyChanges, '_id')],
    ['audit-sequence', await greatest(audit, '_id')],
    ['policy-position', await greatest(policies, 'position')],
    ['entity-position', await greatest(entities, 'position')],
  ]);
  await raise(counters, floors);
}

/** The counter of the versions of a versioned target's audit records (`policy:<name>`, `schemas`). */
export const versionCounter = (target: string): string => (target === SCHEMAS_TARGET ? 'schemas-version' : `policy-version:${target.slice('policy:'.length)}`);

/**
 * Raises each policy's version counter, and the schema document's, to the greatest version its audit
 * records hold: done only once a version was handed out again, which the unique index on (target, version) refuses.
 */
export async function raisePolicyVersions({ counters, audit }: StoreCollections): Promise<void> {
  const newest = audit.aggregate<{ _id: string; version: number }>([
    { $match: { policy_version: { $exists: true } } },
    { $group: { _id: '$target', version: { $max: '$policy_version' } } },
  ]);
  const floors = new Map<string, number>();
  for await (const { _id: target, version } of newest) floors.set(versionCounter(target), version);
  await raise(counters, floors);
}

/** Tells this database's revisions from those of one that replaced it (dropped and refilled): see MongoStore.loadPolicies. */
export async function ensureEpoch({ counters }: StoreCollections): Promise<void> {
  await counters.updateOne({ _id: 'store-epoch' }, { $setOnInsert: { value: randomInt(2 ** 47) } }, { upsert: true });
}

/**
 * Makes the kept entity count exact (see MongoStore.countEntities): counted again, in a snapshot,
 * unless it is exact already and agrees with the collection's own estimate. Every registration
 * and deletion moves the count in its transaction, so one committed meanwhile conflicts with the
 * recount, which then runs again.
 */
export async function countEntities({ entities, counters }: StoreCollections, session: ClientSession, retryMs: number): Promise<void> {
  const kept = await counters.findOne({ _id: ENTITY_COUNT });
  if (kept?.exact && kept.value === (await entities.estimatedDocumentCount())) return;
  await runTransaction(
    session,
    async () => {
      const value = await entities.countDocuments({}, { session });
      await counters.updateOne({ _id: ENTITY_COUNT }, { $set: { value, exact: true } }, { upsert: true, session });
    },
    retryMs,
    { readConcern: { level: 'snapshot' } },
  );
}

/** Rows the backfill reads and writes at once: one bounded read, then one batch of updates. */
export const BACKFILL_BATCH = 500;

/**
 * Gives every entity row written before queryable copies were kept (see mongodb-queryable.ts) its
 * copy, BACKFILL_BATCH rows at a time in uri order, each row once. Each update names the text and
 * version it read, so a row rewritten meanwhile is left to the write that rewrote it; processes
 * doing this at once write the same fields, and a row done already is not found again.
 */
export async function backfillQueryableFields({ entities }: StoreCollections, batch = BACKFILL_BATCH): Promise<void> {
  let after: string | undefined;
  for (;;) {
    const pending = { attributes_version: { $exists: false }, ...(after === undefined ? {} : { _id: { $gt: after } }) };
    const rows = await entities.find(pending, { projection: { document: 1, version: 1 } }).sort({ _id: 1 }).limit(batch).toArray();
    if (rows.length === 0) return;
    const updates: AnyBulkWriteOperation<StoredEntity>[] = rows.map(({ _id, document, version }) => ({
      updateOne: {
        filter: { _id, document, version: version ?? { $exists: false }, attributes_version: { $exists: false } },
        update: { $set: queryableFields(JSON.parse(document) as Entity, document, version ?? 0) },
      },
    }));
    await entities.bulkWrite(updates, { ordered: false });
    if (rows.length < batch) return;
    after = rows.at(-1)!._id;
  }
}
