import type { Entity } from '../../schemas/entity.js';
import type { MongoFilter, MongoFilterOptions } from '../../engine/mongodb-filter.js';

// Beside its JSON text, an entity row holds a copy of its attributes as an embedded document,
// `attributes` ({key: value}), so that a plan's MongoDB filter can select rows in the database, and
// `attributes_version`: the row's `version` that copy was made at. The copy is null where MongoDB
// could not hold the attributes exactly as the text does (see queryableKey and queryableValue).
// A filtered listing also returns every row the copy cannot vouch for: a null copy, none yet (a row
// written before copies were kept, until the backfill reaches it), or a copy of another version (a
// row rewritten since by a release that writes only the text). So a filter only leaves out rows whose
// attributes, as stored, it does not select.

/** Where a plan's MongoDB filter finds an entity row's fields. */
export const ENTITY_ROW_LAYOUT: MongoFilterOptions = { attributesPrefix: 'attributes.', uriField: '_id' };

/** The fields of an entity row that queries read. */
export interface QueryableFields {
  attributes: Record<string, unknown> | null;
  attributes_version: number;
}

/**
 * Past this many bytes of JSON text, no copy is kept: the text and its copy together must stay well
 * within MongoDB's 16 MiB per document.
 */
export const MAX_COPIED_TEXT_BYTES = 4 * 1024 * 1024;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * A key MongoDB stores and queries as written, in every release Verdict supports: not empty, no dot
 * (a path separator in queries), no leading `$` (an operator), no NUL (which ends a BSON key), and
 * valid Unicode (BSON holds UTF-8, which has no lone surrogates).
 */
const queryableKey = (key: string) => key !== '' && !key.includes('.') && !key.startsWith('$') && !key.includes('\u0000') && !LONE_SURROGATE.test(key);

/** Whether MongoDB holds `value` as JSON does, every key and text as written (walked without recursion). */
function queryableValue(value: unknown): boolean {
  const pending = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'string' && LONE_SURROGATE.test(item)) return false;
    if (item === null || typeof item !== 'object') continue;
    if (!Array.isArray(item) && !Object.keys(item).every(queryableKey)) return false;
    pending.push(...Object.values(item));
  }
  return true;
}

/** The queryable fields of the row holding `entity` as `text`, at `version`. */
export function queryableFields(entity: Entity, text: string, version: number): QueryableFields {
  const copyable =
    Buffer.byteLength(text) <= MAX_COPIED_TEXT_BYTES && entity.attributes.every(({ key, value }) => queryableKey(key) && queryableValue(value));
  // fromEntries defines each key as the object's own, `__proto__` too.
  const attributes = copyable ? Object.fromEntries(entity.attributes.map(({ key, value }) => [key, value])) : null;
  return { attributes, attributes_version: version };
}

/** Rows whose copy of the attributes cannot vouch for them: none, null, or of another version of the row. */
const UNVOUCHED: MongoFilter = {
  $expr: { $or: [{ $ne: [{ $type: '$attributes' }, 'object'] }, { $ne: ['$attributes_version', { $ifNull: ['$version', 0] }] }] },
};

/**
 * The rows of `range` that `filter` (written for ENTITY_ROW_LAYOUT) selects, with every row of it
 * whose copy cannot vouch for its attributes; the whole range without a filter.
 */
export function narrowedRange(range: MongoFilter, filter: MongoFilter | undefined): MongoFilter {
  return filter === undefined ? range : { $and: [range, { $or: [filter, UNVOUCHED] }] };
}

/** The levels of narrowedRange's query that a filter is placed in (two documents, two lists), as mongoFilter counts them. */
export const NARROWED_NESTING = 4;
