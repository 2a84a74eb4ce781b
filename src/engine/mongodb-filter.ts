import { DEFAULT_MONGO_FILTER_OPTIONS } from '../schemas/plan.js';
import type { Comparison, ConditionTree } from './condition-tree.js';
import { formatCondition, jsonLength } from './condition-tree.js';
import { arrayIndex, parsePath } from './paths.js';
import { CANONICAL_OPERATOR, OPERATOR_DEFINITIONS } from './operators/index.js';

/** Where a resource's fields live in its MongoDB document. */
export interface MongoFilterOptions {
  /** Prepended to an `attributes.` path's keys: `attributes.` (the default) or `""` (attributes at the top level) or `meta.attributes.`. */
  attributesPrefix: string;
  /** The field holding the resource's uri (default `uri`). */
  uriField: string;
}

export { DEFAULT_MONGO_FILTER_OPTIONS };

export type MongoFilter = Record<string, unknown>;
export type MongoFilterResult = { filter: MongoFilter } | { unsupported: string };

/** MongoDB refuses documents, filters included, nested deeper than this. */
const MONGODB_MAX_DEPTH = 100;

/** Selects no document: the filter of a plan that allows nothing. */
export const SELECTS_NOTHING: MongoFilter = Object.freeze({ _id: Object.freeze({ $in: Object.freeze([]) }) });

/**
 * A field name step that MongoDB's query language reads as written: not all digits (MongoDB would
 * also read it as an array position), no leading `$` (an operator), no NUL (ends a BSON key).
 */
export function isPlainFieldStep(step: string): boolean {
  return step !== '' && !/^[0-9]+$/.test(step) && !step.startsWith('$') && !step.includes('\u0000');
}

/** Why an option is unusable as a field prefix or field path, or undefined when it is fine. */
export function mongoOptionIssue(name: keyof MongoFilterOptions, value: string): string | undefined {
  const plain = 'each dot-separated step non-empty, not all digits, not starting with $';
  if (name === 'attributesPrefix') {
    if (value === '') return undefined;
    if (!value.endsWith('.') || !value.slice(0, -1).split('.').every(isPlainFieldStep)) return `must be "" or field names each followed by a dot (${plain})`;
    return undefined;
  }
  return value.split('.').every(isPlainFieldStep) ? undefined : `must be a field path (${plain})`;
}

class NoExactFilter extends Error {}

const isScalar = (value: unknown): value is string | number | boolean =>
  typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Text MongoDB cannot hold as sent: BSON strings are UTF-8, which has no lone surrogates. */
function hasLoneSurrogate(value: unknown): boolean {
  if (typeof value === 'string') return LONE_SURROGATE.test(value);
  if (Array.isArray(value)) return value.some(hasLoneSurrogate);
  if (typeof value === 'object' && value !== null) return Object.entries(value).some(([key, item]) => LONE_SURROGATE.test(key) || hasLoneSurrogate(item));
  return false;
}

/** The text as a regular expression that matches it literally, alike in MongoDB (PCRE) and JavaScript. */
function literalPattern(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&').replace(/\u0000/g, '\\x00');
}

/** `(?![\s\S])` is the end of the text in both dialects; PCRE's `$` would also match before a final newline. */
const patternOf = {
  contains: (text: string) => literalPattern(text),
  startswith: (text: string) => `^${literalPattern(text)}`,
  endswith: (text: string) => `${literalPattern(text)}(?![\\s\\S])`,
};

function depthOf(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  let deepest = 0;
  if (Array.isArray(value)) for (const item of value) deepest = Math.max(deepest, depthOf(item));
  else for (const key in value) deepest = Math.max(deepest, depthOf((value as Record<string, unknown>)[key]));
  return deepest + 1;
}

/** Filters that must all hold, as one document when their fields differ (easier to read), else `$and`. */
function allOf(filters: readonly MongoFilter[]): MongoFilter {
  const parts = filters.flatMap((filter) => (Object.keys(filter).length === 1 && Array.isArray(filter.$and) ? (filter.$and as MongoFilter[]) : [filter]));
  const merged: MongoFilter = {};
  for (const part of parts) {
    for (const key of Object.keys(part)) if (Object.hasOwn(merged, key)) return { $and: parts };
    Object.assign(merged, part);
  }
  return merged;
}

/**
 * Aggregation expressions that compute exactly what the engine computes, for `$expr`: paths walked
 * step by step with `$getField`/`$arrayElemAt` (no implicit walk through lists), JSON equality
 * built from type tests and scalar `$eq` (MongoDB compares embedded documents by field order; the
 * engine does not), and every operator guarded by a type test so that nothing raises an error.
 */
class ExactExpressions {
  private variables = 0;

  /** `body` of an expression that `expression` names; bound to a variable unless it is one. */
  private bind(expression: unknown, body: (reference: string) => unknown): unknown {
    if (typeof expression === 'string' && expression.startsWith('$$')) return body(expression);
    const name = `v${this.variables++}`;
    return { $let: { vars: { [name]: expression }, in: body(`$$${name}`) } };
  }

  /** The value at `steps` below `root`, or missing where the engine's lookup finds nothing. */
  valueAt(root: string, steps: readonly string[]): unknown {
    let expression: unknown = root;
    for (const step of steps) {
      expression = this.bind(expression, (container) => {
        const index = arrayIndex(step);
        // $arrayElemAt takes 32-bit positions; no list is that long.
        const inList = index === undefined || index > 2 ** 31 - 1 ? '$$REMOVE' : { $cond: [{ $isArray: container }, { $arrayElemAt: [container, index] }, '$$REMOVE'] };
        return { $cond: [isType(container, 'object'), { $getField: { field: { $literal: step }, input: container } }, inList] };
      });
    }
    return expression;
  }

  equals(expression: unknown, value: unknown): unknown {
    if (value === null) return isType(expression, 'null');
    return this.bind(expression, (found) => {
      // Typed first: mingo's aggregation $eq tests a list's elements (MongoDB's does not).
      if (typeof value === 'string') return { $cond: [isType(found, 'string'), { $eq: [found, { $literal: value }] }, false] };
      if (typeof value === 'boolean') return { $cond: [isType(found, 'bool'), { $eq: [found, value] }, false] };
      if (typeof value === 'number') return { $cond: [{ $isNumber: found }, { $eq: [found, value] }, false] };
      if (Array.isArray(value)) {
        const items = value.map((item, index) => this.equals({ $arrayElemAt: [found, index] }, item));
        return { $cond: [{ $isArray: found }, conjunction([{ $eq: [{ $size: found }, value.length] }, ...items]), false] };
      }
      const entries = Object.entries(value as Record<string, unknown>);
      const fields = entries.map(([key, item]) => this.equals({ $getField: { field: { $literal: key }, input: found } }, item));
      return { $cond: [isType(found, 'object'), conjunction([{ $eq: [{ $size: { $objectToArray: found } }, entries.length] }, ...fields]), false] };
    });
  }

  /** `found` must be a variable: the predicate reads it more than once. */
  holds(found: string, operator: Comparison['operator'], value: unknown): unknown {
    switch (operator) {
      case '==':
        return this.equals(found, value);
      case 'in':
        return disjunction((value as unknown[]).map((item) => this.equals(found, item)));
      case 'contains': {
        const inText = typeof value === 'string' ? { $regexMatch: { input: found, regex: patternOf.contains(value) } } : false;
        const element = `e${this.variables++}`;
        const inList = { $anyElementTrue: [{ $map: { input: found, as: element, in: this.equals(`$$${element}`, value) } }] };
        return { $cond: [isType(found, 'string'), inText, { $cond: [{ $isArray: found }, inList, false] }] };
      }
      case 'startswith':
      case 'endswith':
        return { $cond: [isType(found, 'string'), { $regexMatch: { input: found, regex: patternOf[operator](value as string) } }, false] };
      case 'gt':
      case 'gte':
      case 'lt':
      case 'lte':
        return { $cond: [{ $isNumber: found }, { [`$${operator}`]: [found, value] }, false] };
      case '!=':
        return { $and: [isPresent(found), { $not: [this.equals(found, value)] }] };
      case 'not_in':
        return { $and: [isPresent(found), { $not: [this.holds(found, 'in', value)] }] };
      case 'not_contains':
        return { $and: [{ $in: [{ $type: found }, ['string', 'array']] }, { $not: [this.holds(found, 'contains', value)] }] };
      case 'exists':
        return isPresent(found);
      default:
        throw new Error(`operator '${operator}' is not canonical`);
    }
  }
}

const isType = (expression: unknown, type: string) => ({ $eq: [{ $type: expression }, type] });
const isPresent = (expression: unknown) => ({ $ne: [{ $type: expression }, 'missing'] });
const conjunction = (items: unknown[]) => (items.length === 1 ? items[0] : { $and: items });
const disjunction = (items: unknown[]) => (items.length === 0 ? false : items.length === 1 ? items[0] : { $or: items });

const NOT_A_LIST = { $not: { $type: 'array' } };

/**
 * Whether two present values are equal as JSON, as the engine's equality says: the same type (any
 * two numbers compare by value), lists item by item, embedded documents with the same keys in any
 * order. MongoDB's own `$eq` compares documents field by field in order, and an expression cannot
 * recurse: so the two values are walked level by level, each level's pairs of values (`a`, `b`)
 * compared by type and size (scalars by `$eq`), and their children paired for the next level (a
 * document's by key, a list's by position). A value in a document is nested at most
 * MONGODB_MAX_DEPTH levels, so that many levels reach every leaf; once the pairs run out, or one
 * differs, the rest is skipped.
 */
function jsonEquals(left: unknown, right: unknown): unknown {
  const alike = {
    $switch: {
      branches: [
        { case: { $and: [{ $isNumber: '$$a' }, { $isNumber: '$$b' }] }, then: { $eq: ['$$a', '$$b'] } },
        { case: { $ne: [{ $type: '$$a' }, { $type: '$$b' }] }, then: false },
        // As many keys: each of `a`'s is then paired with `b`'s value there, which a key `b` lacks leaves missing, unlike any value.
        { case: isType('$$a', 'object'), then: { $eq: [{ $size: { $objectToArray: '$$a' } }, { $size: { $objectToArray: '$$b' } }] } },
        { case: { $isArray: '$$a' }, then: { $eq: [{ $size: '$$a' }, { $size: '$$b' }] } },
      ],
      // Strings, booleans, null: scalars of one type, which $eq compares as the engine does.
      default: { $eq: ['$$a', '$$b'] },
    },
  };
  const valueOfKeyInB = { $getField: { field: 'v', input: { $arrayElemAt: [{ $filter: { input: { $objectToArray: '$$b' }, as: 'match', cond: { $eq: ['$$match.k', '$$entry.k'] } } }, 0] } } };
  const children = {
    $cond: [
      { $and: [isType('$$a', 'object'), isType('$$b', 'object')] },
      { $map: { input: { $objectToArray: '$$a' }, as: 'entry', in: { a: '$$entry.v', b: valueOfKeyInB } } },
      {
        $cond: [
          { $and: [{ $isArray: '$$a' }, { $isArray: '$$b' }] },
          { $map: { input: { $range: [0, { $size: '$$a' }] }, as: 'index', in: { a: { $arrayElemAt: ['$$a', '$$index'] }, b: { $arrayElemAt: ['$$b', '$$index'] } } } },
          [],
        ],
      },
    ],
  };
  const ofPair = (body: unknown) => ({ $map: { input: '$$state.pairs', as: 'pair', in: { $let: { vars: { a: '$$pair.a', b: '$$pair.b' }, in: body } } } });
  const level = {
    $cond: [
      { $and: ['$$state.equal', { $gt: [{ $size: '$$state.pairs' }, 0] }] },
      {
        pairs: { $reduce: { input: ofPair(children), initialValue: [], in: { $concatArrays: ['$$value', '$$this'] } } },
        equal: { $allElementsTrue: [ofPair(alike)] },
      },
      '$$state',
    ],
  };
  const walked = {
    $reduce: {
      input: { $range: [0, MONGODB_MAX_DEPTH] },
      initialValue: { pairs: [{ a: '$$left', b: '$$right' }], equal: { $literal: true } },
      in: { $let: { vars: { state: '$$value' }, in: level } },
    },
  };
  return { $let: { vars: { left, right }, in: { $getField: { field: 'equal', input: walked } } } };
}

/** Whether some item of the list `list` is equal to `value` as JSON. */
const hasEqualItem = (list: string, value: string) => ({ $anyElementTrue: [{ $map: { input: list, as: 'item', in: jsonEquals('$$item', value) } }] });

/**
 * Whether `found` relates to `other` (two variables, either missing) as the engine's relation says:
 * both present, and of the types the operator takes.
 */
function relates(found: string, operator: Comparison['operator'], other: string): unknown {
  const whenBothPresent = (test: unknown) => ({ $and: [isPresent(found), isPresent(other), test] });
  switch (operator) {
    case '==':
      return whenBothPresent(jsonEquals(found, other));
    case '!=':
      return whenBothPresent({ $not: [jsonEquals(found, other)] });
    case 'in':
      return whenBothPresent({ $cond: [{ $isArray: other }, hasEqualItem(other, found), false] });
    case 'not_in':
      return whenBothPresent({ $cond: [{ $isArray: other }, { $not: [hasEqualItem(other, found)] }, false] });
    case 'contains':
    case 'not_contains': {
      // A substring of bytes of valid UTF-8 (MongoDB holds no other) is one of code points, and of UTF-16 units as the engine compares.
      const inText = { $cond: [isType(other, 'string'), { $ne: [{ $indexOfBytes: [found, other] }, -1] }, false] };
      const contains = { $cond: [isType(found, 'string'), inText, hasEqualItem(found, other)] };
      return whenBothPresent({ $cond: [{ $or: [isType(found, 'string'), { $isArray: found }] }, operator === 'contains' ? contains : { $not: [contains] }, false] });
    }
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return { $cond: [{ $and: [{ $isNumber: found }, { $isNumber: other }] }, { [`$${operator}`]: [found, other] }, false] };
    case 'startswith':
    case 'endswith': {
      // Whole code points on both sides: a prefix (suffix) of code points is one of UTF-16 units, as the engine compares.
      const [text, part] = [{ $strLenCP: found }, { $strLenCP: other }];
      const start = operator === 'startswith' ? 0 : { $subtract: [text, part] };
      const fits = { $gte: [text, part] };
      return { $cond: [{ $and: [isType(found, 'string'), isType(other, 'string')] }, { $cond: [fits, { $eq: [{ $substrCP: [found, start, part] }, other] }, false] }, false] };
    }
    default:
      throw new Error(`operator '${operator}' takes no value to relate`);
  }
}

/**
 * Query operators (they can use indexes), where they say exactly what the engine says: plain field
 * steps, each step's container required not to be a list (MongoDB would walk into it), scalar
 * values, and the leaf required not to be a list (MongoDB would test its elements). Otherwise,
 * undefined: the comparison goes to $expr.
 */
function queryFilter(field: string, operator: Comparison['operator'], value: unknown): MongoFilter | undefined {
  switch (operator) {
    case '==':
      return isScalar(value) ? { [field]: { $eq: value, ...NOT_A_LIST } } : undefined;
    case 'in':
      return (value as unknown[]).every(isScalar) ? { [field]: { $in: value, ...NOT_A_LIST } } : undefined;
    case 'startswith':
    case 'endswith':
      return { [field]: { $regex: patternOf[operator](value as string), ...NOT_A_LIST } };
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return { [field]: { [`$${operator}`]: value, ...NOT_A_LIST } };
    case 'exists':
      // A list is a value like any other: no guard against MongoDB testing its elements.
      return { [field]: { $exists: true } };
    case '!=':
      return negation(field, queryFilter(field, '==', value));
    case 'not_in':
      return negation(field, queryFilter(field, 'in', value));
    default:
      // contains and not_contains test a list's elements: with $expr, since mingo's $eq on a list
      // at a dotted path also tests the elements of nested lists (MongoDB's does not).
      return undefined;
  }
}

/** Negative operators need the field (`!=` never holds for a missing one): present, and not the positive. */
function negation(field: string, positive: MongoFilter | undefined): MongoFilter | undefined {
  return positive === undefined ? undefined : { [field]: { $exists: true }, $nor: [positive] };
}

/** At least the characters a junction adds around each child's filter (`{"$nor":[`…`]}`, commas). */
const JUNCTION_FRAME = 12;

/**
 * How many times longer than its comparison an `$expr` filter may be (a list of numbers, each
 * compared with a type test, comes to about 50), and what each step of its path adds: an estimate,
 * made before writing it, of what writing it costs.
 */
const EXPR_GROWTH = 64;
const EXPR_STEP = 400;

class FilterWriter {
  /** Each comparison's filter with its own depth, to name the culprit when the whole is too deep. */
  private readonly depths: { comparison: Comparison; depth: number }[] = [];
  /** At least the JSON length of what has been written. */
  private written = 0;

  constructor(
    private readonly options: MongoFilterOptions,
    private readonly maxLength: number,
  ) {}

  write(tree: ConditionTree): MongoFilter {
    if (tree === true) return {};
    if (tree === false) return SELECTS_NOTHING;
    if ('and' in tree) return allOf(tree.and.map((child) => this.writeChild(child)));
    if ('or' in tree) return { $or: tree.or.map((child) => this.writeChild(child)) };
    if ('not' in tree) return { $nor: [this.writeChild(tree.not)] };
    const filter = this.comparison(tree);
    this.spend(JSON.stringify(filter).length);
    this.depths.push({ comparison: tree, depth: depthOf(filter) });
    return filter;
  }

  private writeChild(tree: ConditionTree): MongoFilter {
    this.spend(JUNCTION_FRAME);
    return this.write(tree);
  }

  private spend(characters: number): void {
    this.written += characters;
    if (this.written > this.maxLength) throw this.tooLong();
  }

  private tooLong(): NoExactFilter {
    return new NoExactFilter(`the filter would be longer than ${this.maxLength} characters`);
  }

  /**
   * Refuses to write a comparison whose filter, by an estimate made before writing it, would be
   * far longer than the whole budget: its length is measured once written, so this only bounds
   * what writing it may cost.
   */
  private affordable(estimate: number): void {
    if (estimate > 4 * this.maxLength) throw this.tooLong();
  }

  deepestComparison(): Comparison | undefined {
    return this.depths.reduce<{ comparison?: Comparison; depth: number }>((deepest, item) => (item.depth > deepest.depth ? item : deepest), { depth: -1 }).comparison;
  }

  /** Where the value at `path` is found in a resource document: a field, or a path walked step by step. */
  private valueAt(expressions: ExactExpressions, path: string): { field: string; steps: readonly string[]; found: () => unknown } {
    const parsed = parsePath(path);
    if ('error' in parsed) throw new Error(`invalid path '${path}': ${parsed.error}`);
    const { attributesPrefix, uriField } = this.options;
    if (parsed.kind === 'uri') return { field: uriField, steps: [], found: () => `$${uriField}` };
    const root = attributesPrefix === '' ? '$$ROOT' : `$${attributesPrefix.slice(0, -1)}`;
    return { field: attributesPrefix + parsed.steps.join('.'), steps: parsed.steps, found: () => expressions.valueAt(root, parsed.steps) };
  }

  /**
   * A relation between two values of the resource, as `$expr`: both present, and related as the
   * engine relates them (equality walks both values, see jsonEquals).
   */
  private relation(comparison: Comparison & { value_from: string }): MongoFilter {
    const operator = CANONICAL_OPERATOR[comparison.operator];
    if (hasLoneSurrogate(comparison.path) || hasLoneSurrogate(comparison.value_from)) {
      throw new NoExactFilter(`condition ${formatCondition(comparison)} holds text that is not valid Unicode (a lone surrogate), which MongoDB cannot store`);
    }
    const other = comparison.value_from.slice('resource.'.length);
    const steps = comparison.path.split('.').length + other.split('.').length;
    this.affordable(EXPR_GROWTH * jsonLength(comparison) + EXPR_STEP * steps);
    const expressions = new ExactExpressions();
    const vars = { found: this.valueAt(expressions, comparison.path).found(), other: this.valueAt(expressions, other).found() };
    return { $expr: { $let: { vars, in: relates('$$found', operator, '$$other') } } };
  }

  private comparison(comparison: Comparison): MongoFilter {
    const { mongodb } = OPERATOR_DEFINITIONS[comparison.operator];
    if (mongodb !== 'exact') throw new NoExactFilter(`condition ${formatCondition(comparison)} has no exact MongoDB filter: ${mongodb.none}`);
    if (comparison.value_from !== undefined) return this.relation(comparison as Comparison & { value_from: string });
    const { path, value } = comparison;
    const operator = CANONICAL_OPERATOR[comparison.operator];
    // Where the engine finds nothing, MongoDB may find a value (through a list on the way): the exact complement of `exists`.
    if (operator === 'not_exists') return { $nor: [this.comparison({ path, operator: 'exists' })] };
    if (hasLoneSurrogate(path) || hasLoneSurrogate(value)) {
      throw new NoExactFilter(`condition ${formatCondition(comparison)} holds text that is not valid Unicode (a lone surrogate), which MongoDB cannot store`);
    }
    const { attributesPrefix } = this.options;
    const expressions = new ExactExpressions();
    const { field, steps, found } = this.valueAt(expressions, path);
    if (steps.every(isPlainFieldStep)) {
      const leaf = queryFilter(field, operator, value);
      if (leaf !== undefined) {
        // Each container names the path up to it: as long as the path, escapes and all, and a type test.
        this.affordable(steps.length * (6 * field.length + 40));
        const containers = steps.slice(0, -1).map((_, index) => ({ [attributesPrefix + steps.slice(0, index + 1).join('.')]: NOT_A_LIST }));
        return allOf([...containers, leaf]);
      }
    }
    this.affordable(EXPR_GROWTH * jsonLength(comparison) + EXPR_STEP * steps.length);
    return { $expr: { $let: { vars: { found: found() }, in: expressions.holds('$$found', operator, value) } } };
  }
}

/**
 * The plan's condition as a MongoDB filter over resource documents (`{uri, attributes: {...}}` by
 * default) that selects exactly the documents the condition holds for, or why none can. The
 * documents' values must be JSON's (strings, numbers, booleans, null, lists, embedded documents)
 * and the query must use the simple (binary) collation. Operators may come in either spelling
 * (`==` or `equals`); a reason naming a condition spells it as the tree does. A filter whose JSON
 * text would be longer than `maxLength` characters is not written: its reason says so. `nestedIn`:
 * the levels (documents and lists) of the query the filter is to be placed in, which count towards
 * MongoDB's limit of depth.
 */
export function mongoFilter(condition: ConditionTree, options: MongoFilterOptions = DEFAULT_MONGO_FILTER_OPTIONS, maxLength = Infinity, nestedIn = 0): MongoFilterResult {
  const writer = new FilterWriter(options, maxLength);
  let filter: MongoFilter;
  try {
    filter = writer.write(condition);
  } catch (error) {
    if (error instanceof NoExactFilter) return { unsupported: error.message };
    throw error;
  }
  const depth = nestedIn + depthOf(filter);
  if (depth > MONGODB_MAX_DEPTH) {
    const culprit = writer.deepestComparison();
    const named = culprit === undefined ? '' : ` (condition ${formatCondition(culprit)} is the deepest)`;
    return { unsupported: `the filter would nest ${depth} levels deep, beyond MongoDB's ${MONGODB_MAX_DEPTH}${named}` };
  }
  return { filter };
}
