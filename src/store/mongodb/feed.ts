import type { Document, Timestamp } from 'mongodb';
import type { FeedPosition } from '../store.js';
import { COLLECTION_NAMES } from './collections.js';

/** A position in a MongoDB change feed: an operation time, where a change stream can start. */
export const feedPosition = (operationTime: Timestamp) => ({ operationTime }) as unknown as FeedPosition;
export const operationTimeAt = (position: FeedPosition) => (position as unknown as { operationTime: Timestamp }).operationTime;

/** The followed collections; every other collection's events are filtered out on the server, but for their drops and renames. */
const FOLLOWED = ['policies', 'entities', 'schemas'];

/** The fields of an entity row that only its queryable copy is made of: an update of these alone changes nothing a follower reads. */
const QUERYABLE_COPY_FIELDS = ['attributes', 'attributes_version'];

/**
 * The change stream's pipeline, run on the server: the events of the followed collections and those
 * that end a history (a collection of the store dropped, renamed or renamed onto, the database
 * dropped), but updates that only wrote an entity's queryable copy (the backfill's), each cut to what
 * the follower reads (see changeOf in change-stream-follower.ts): its operation, namespace, key, the
 * rename's target, and times. Never a document: an event then stays small whatever an entity holds,
 * and far below MongoDB's 16 MiB, past which an event would break the stream.
 */
export function feedPipeline(): Document[] {
  const updatedFieldNames = { $map: { input: { $objectToArray: { $ifNull: ['$updateDescription.updatedFields', {}] } }, as: 'field', in: '$$field.k' } };
  return [
    {
      $match: {
        $or: [
          { 'ns.coll': { $in: FOLLOWED } },
          { operationType: { $in: ['drop', 'rename'] }, 'ns.coll': { $in: COLLECTION_NAMES } },
          { 'to.coll': { $in: COLLECTION_NAMES } },
          { operationType: { $in: ['dropDatabase', 'invalidate'] } },
        ],
      },
    },
    {
      $match: {
        $expr: {
          $not: {
            $and: [
              { $eq: ['$operationType', 'update'] },
              { $setIsSubset: [updatedFieldNames, QUERYABLE_COPY_FIELDS] },
              { $eq: [{ $size: { $ifNull: ['$updateDescription.removedFields', []] } }, 0] },
            ],
          },
        },
      },
    },
    { $project: { operationType: 1, ns: 1, documentKey: 1, to: 1, clusterTime: 1, wallTime: 1 } },
  ];
}
