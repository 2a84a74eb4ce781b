import { randomInt } from 'node:crypto';
import { MongoServerError, type AnyBulkWriteOperation, type Collection, type Document } from 'mongodb';
import { type Counter, type StoreCollections } from './collections.js';
import { SCHEMAS_TARGET } from '../../audit/record.js';

// What the MongoDB store needs of a database besides its documents: the steps made at start and
// again whenever the change feed loses track (a collection or the database dropped), and those the
// background maintenance takes (see maintenance.ts). Every step is idempotent, and processes
// taking them at once agree.

const INDEX_OPTIONS_CONFLICT = 85;

/**
 * An index build commits once a majority of the voting members have built it, not all of them (the
 * server's default): with a member down, a build would otherwise never commit.
 */
const BUILD = { commitQuorum: 'majority' } as const;
/** MongoDB's code for a collection that does not exist. */
const NAMESPACE_NOT_FOUND = 26;

/** The index builds the store needs, by collection: the key, and the options. */
const INDEXES: readonly { collection: 'policies' | 'entities' | 'audit'; key: Document; options?: Document }[] = [
  // Positions are unique: a non-unique index from an earlier release is replaced (see createIndexes).
  { collection: 'policies', key: { position: 1 }, options: { unique: true } },
  { collection: 'entities', key: { position: 1 }, options: { unique: true } },
  // Finds the rows the backfill has yet to reach without reading the others (see StoreMaintenance.backfill).
  { collection: 'entities', key: { attributes_version: 1, _id: 1 } },
  { collection: 'audit', key: { target: 1, _id: -1 } },
  { collection: 'audit', key: { actor: 1, _id: -1 } },
  { collection: 'audit', key: { time: 1 } },
  { collection: 'audit', key: { target: 1, policy_version: 1 }, options: { unique: true, partialFilterExpression: { policy_version: { $exists: true } } } },
];

/** The name MongoDB gives an index of `key` (`position_1`, `target_1__id_-1`). */
const indexName = (key: Document) => Object.entries(key).map(([field, order]) => `${field}_${String(order)}`).join('_');

type IndexedCollections = Pick<StoreCollections, 'policies' | 'entities' | 'audit'>;

/** The indexes (see INDEXES) the collections do not list yet, or list with other options (`listIndexes`: a few reads). */
export async function missingIndexes(collections: IndexedCollections): Promise<typeof INDEXES> {
  const listed = new Map<string, Document[]>();
  const missing: (typeof INDEXES)[number][] = [];
  for (const index of INDEXES) {
    if (!listed.has(index.collection)) listed.set(index.collection, await collections[index.collection].listIndexes().toArray().catch(noneWhenMissing));
    const existing = listed.get(index.collection)!.find((each) => each.name === indexName(index.key));
    if (existing === undefined || (index.options?.unique !== undefined && existing.unique !== index.options.unique)) missing.push(index);
  }
  return missing;
}

/**
 * Builds `indexes` (see missingIndexes), one at a time. A build of a large collection takes as long
 * as it takes: the connection of `collections` must not cut it (MongoDB goes on building for a client
 * that left, and a retry would queue another).
 */
export async function createIndexes(collections: IndexedCollections, indexes: typeof INDEXES): Promise<void> {
  for (const { collection, key, options } of indexes) {
    const target = collections[collection];
    try {
      await target.createIndex(key, { ...options, ...BUILD });
    } catch (error) {
      // An index of that name with other options (a non-unique position index from an earlier release) is replaced.
      if (!(error instanceof MongoServerError && error.code === INDEX_OPTIONS_CONFLICT)) throw error;
      await target.dropIndex(indexName(key));
      await target.createIndex(key, { ...options, ...BUILD });
    }
  }
}

/** A collection not created yet lists no index. */
function noneWhenMissing(error: unknown): Document[] {
  if (error instanceof MongoServerError && error.code === NAMESPACE_NOT_FOUND) return [];
  throw error;
}

/** The greatest value of `field` in `collection`, 0 when it is empty; a read of at most `maxTimeMS` when given. */
async function greatest<T extends Document>(collection: Collection<T>, field: string, maxTimeMS?: number): Promise<number> {
  const [row] = await collection.find({}, { projection: { [field]: 1 }, ...(maxTimeMS && { maxTimeMS }) }).sort({ [field]: -1 }).limit(1).toArray();
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
export async function raiseCounters({ policies, entities, counters, audit, policyChanges }: StoreCollections, maxTimeMS?: number): Promise<void> {
  const floors = new Map([
    ['policy-revision', await greatest(policyChanges, '_id', maxTimeMS)],
    ['audit-sequence', await greatest(audit, '_id', maxTimeMS)],
    ['policy-position', await greatest(policies, 'position', maxTimeMS)],
    ['entity-position', await greatest(entities, 'position', maxTimeMS)],
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
