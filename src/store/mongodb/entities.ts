import { MongoServerError, ReadPreference, type ClientSession, type Collection } from 'mongodb';
import type { Entity } from '../../schemas/entity.js';
import type { MongoFilter } from '../../engine/mongodb-filter.js';
import { uriRange } from '../store.js';
import { NarrowingTimedOut, StoreUnavailableError } from '../errors.js';
import type { StoredEntity } from './collections.js';
import { MAX_TIME_EXPIRED, rethrowStoreError } from './errors.js';
import { narrowedRange, queryableFields } from './queryable.js';

// The registry's rows on MongoDB: how an entity is stored, and how it is read: by a check, by the
// entity cache's warm-up, by the admin listing, by a search.

/** What entity reads fetch of a row: its JSON text, not the queryable copy beside it. */
export const ENTITY_TEXT = { projection: { document: 1 } } as const;

/**
 * The most a secondary read from may lag its primary, in seconds (the least MongoDB takes): a member
 * further behind is not read from. It bounds how stale a read can be; reads that fill a cache are
 * also held to be after the change feed's position (see ReadsAfterFeed), which this alone would not.
 */
export const MAX_STALENESS_SECONDS = 90;
/** From a secondary when one is there, taking the primary's load off; never one further behind than MAX_STALENESS_SECONDS. */
export const SECONDARY_READ = new ReadPreference(ReadPreference.SECONDARY_PREFERRED, undefined, { maxStalenessSeconds: MAX_STALENESS_SECONDS });

/**
 * An entity read on a check's path (a uri the entity cache does not hold): from the primary, or while
 * there is none (an election) from a secondary no further behind than MAX_STALENESS_SECONDS, at
 * majority read concern as always, so that checks naming uris go on through an election.
 */
const CHECK_PATH_READ = { ...ENTITY_TEXT, readPreference: new ReadPreference(ReadPreference.PRIMARY_PREFERRED, undefined, { maxStalenessSeconds: MAX_STALENESS_SECONDS }) } as const;

/**
 * Runs reads that fill a cache in a causally consistent session advanced to the change feed's position
 * (a `readConcern.afterClusterTime`): whichever member answers, it has applied every change the feed has
 * delivered, so an entity the feed said was written is never read, and cached, as it was before.
 */
export type ReadsAfterFeed = <T>(read: (session: ClientSession | undefined) => Promise<T>) => Promise<T>;
/**
 * The longest a check waits for an entity read: past it, 503. Without a member to read from at all,
 * the driver would wait for one for the whole server selection timeout (10 s).
 */
export const ENTITY_READ_BOUND_MS = 2000;

/** A new entity's row: its text and queryable fields at version 1. */
export function entityRow(entity: Entity, position: number): StoredEntity {
  const document = JSON.stringify(entity);
  return { _id: entity.uri, position, document, version: 1, ...queryableFields(entity, document, 1) };
}

/** The longest a narrowed listing may run in the database (see listEntitiesUnder). */
export const NARROWED_LISTING_MS = 2000;

const entityOf = (row: { document: string }) => JSON.parse(row.document) as Entity;

/** An entity a check names (see CHECK_PATH_READ), after the feed's position, within ENTITY_READ_BOUND_MS. */
export async function readEntityOnCheckPath(entities: Collection<StoredEntity>, uri: string, afterFeed: ReadsAfterFeed): Promise<Entity | undefined> {
  const read = afterFeed((session) => entities.findOne({ _id: uri }, { ...CHECK_PATH_READ, ...(session !== undefined && { session }) }));
  let bound: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    bound = setTimeout(() => reject(new StoreUnavailableError(`MongoDB is unavailable (no member answered a read of entity '${uri}' within ${ENTITY_READ_BOUND_MS} ms)`)), ENTITY_READ_BOUND_MS);
  });
  try {
    const row = await Promise.race([read, timedOut]);
    return row === null ? undefined : entityOf(row);
  } catch (error) {
    read.catch(() => undefined);
    return rethrowStoreError(error);
  } finally {
    clearTimeout(bound);
  }
}

/** The warm-up's pages (see Store.listEntitiesAfter): by the _id index, from a secondary (see SECONDARY_READ), after the feed's position. */
export async function listEntitiesAfter(entities: Collection<StoredEntity>, after: string, limit: number, afterFeed: ReadsAfterFeed): Promise<Entity[]> {
  if (limit === 0) return [];
  const rows = await afterFeed((session) =>
    entities
      .find({ _id: { $gt: after } }, { ...ENTITY_TEXT, readPreference: SECONDARY_READ, ...(session !== undefined && { session }) })
      .sort({ _id: 1 })
      .limit(limit)
      .toArray(),
  ).catch(rethrowStoreError);
  return rows.map(entityOf);
}

/** The admin listing: in registration order, from `offset`. */
export async function listEntities(entities: Collection<StoredEntity>, offset: number, limit: number): Promise<Entity[]> {
  // The server reads a limit of 0 as "no limit".
  if (limit === 0) return [];
  const rows = await entities
    .find({}, ENTITY_TEXT)
    .sort({ position: 1 })
    .skip(Math.min(offset, Number.MAX_SAFE_INTEGER))
    .limit(limit)
    .toArray()
    .catch(rethrowStoreError);
  return rows.map(entityOf);
}

/**
 * A search's slices (see Store.listEntitiesUnder). `narrowedBy` selects among the rows of the uri
 * range, with every row whose queryable copy cannot vouch for its attributes (see narrowedRange),
 * within NARROWED_LISTING_MS in the database: a filter that selects few rows of a large range may scan
 * the range that long.
 */
export async function listEntitiesUnder(entities: Collection<StoredEntity>, prefix: string, after: string, limit: number, narrowedBy?: MongoFilter): Promise<Entity[]> {
  if (limit === 0) return [];
  const { from, to } = uriRange(prefix);
  // _id is the uri; with no collation, strings compare by their UTF-8 bytes, as in the embedded store.
  const range = { _id: { $gte: from, $lt: to, $gt: after } };
  const rows = await entities
    .find(narrowedRange(range, narrowedBy), narrowedBy === undefined ? ENTITY_TEXT : { ...ENTITY_TEXT, maxTimeMS: NARROWED_LISTING_MS })
    .sort({ _id: 1 })
    .limit(limit)
    .toArray()
    .catch((error: unknown) => {
      if (error instanceof MongoServerError && error.code === MAX_TIME_EXPIRED) throw new NarrowingTimedOut(error.message);
      return rethrowStoreError(error);
    });
  return rows.map(entityOf);
}
