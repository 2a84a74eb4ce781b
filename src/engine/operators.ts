import { OPERATORS, type Operator } from '../schemas/policy.js';
import { jsonEqual } from './json-equal.js';
import { addressRanges, rangesIssue } from './address-ranges.js';
import { linearRegExp, PatternError } from './linear-regexp.js';
import { inWindow, instantOf, nearnessIssue, nearTo, type Nearness, windowIssue } from './time.js';

/**
 * Tests an attribute's value (never MISSING: the caller handles absence) against a condition:
 * undefined when the condition cannot be evaluated on that value (an evaluation error: see
 * OperatorDefinition.undecidable), which the condition then counts as holding or not by the rule it
 * stands in (CompiledCondition.undecidableHolds).
 */
export type Predicate = (attribute: unknown) => boolean | undefined;

/**
 * Tests an attribute's value against a value read from the request (`value_from`; neither is
 * MISSING): false when the operator could not take that value as a condition's `value`, or, for an
 * operator whose tests may be undecidable, undefined.
 */
export type Relation = (attribute: unknown, value: unknown) => boolean | undefined;

interface OperatorDefinition {
  /** Why a condition value (undefined when none is given) is unusable with this operator, or undefined when it is fine. */
  checkValue(value: unknown): string | undefined;
  build(value: unknown): Predicate;
  relate: Relation;
  /** Whether the condition holds where its path leads nowhere: only `not_exists` does. */
  holdsWhenMissing?: true;
  /** Why the operator takes no `value_from`, when it takes none. */
  refusesValueFrom?: string;
  /** For an operator whose value is relative to another value of the check, its anchor (see Anchored). */
  anchored?: Anchored;
  /**
   * Only for an operator whose tests may answer undefined (it cannot be evaluated on the value it
   * reads: a network operator on what is not an address, a pattern on what is not a string, a time
   * operator on what is not a date-time): why, for an explanation, given the value at the path and
   * the condition's value (or the value its reference read).
   */
  undecidable?: (attribute: unknown, value: unknown) => string;
}

/**
 * An operator whose `value` says how the path's value relates to an anchor (`within` a span of an
 * instant): the anchor is written in the value, or read by `value_from`, or a reference the operator
 * names. The condition then takes both `value` and `value_from`.
 */
export interface Anchored {
  /** The reference read when the value holds no anchor and the condition no `value_from`; undefined when the value holds one. */
  defaultReference(value: unknown): string | undefined;
  /** The relation of the path's value to the anchor read from the check, for a value without an anchor. */
  relation(value: unknown): Relation;
  /** The value with `anchor` written in it: what the condition says once the anchor is known (in a plan, an explanation). */
  pin(value: unknown, anchor: unknown): unknown;
  /** The value that relates the anchor to the path's value as `value` relates the path's value to the anchor. */
  mirror(value: unknown): unknown;
}

export const OPERATOR_STYLES = ['spec', 'eunomia'] as const;
/** How operators are spelled in answers: `spec` as stored, `eunomia` with the names Eunomia's clients parse. */
export type OperatorStyle = (typeof OPERATOR_STYLES)[number];

/** Eunomia's name for each symbolic spelling; its Python SDK refuses any policy holding a symbol. */
const EUNOMIA_NAMES: Partial<Record<Operator, Operator>> = { '==': 'equals', '!=': 'not_equals', '>': 'gt', '>=': 'gte', '<': 'lt', '<=': 'lte' };

/** `operator` as an answer in `style` spells it; both spellings mean the same to the engine. */
export function spellOperator(operator: Operator, style: OperatorStyle): Operator {
  return style === 'eunomia' ? (EUNOMIA_NAMES[operator] ?? operator) : operator;
}

const isNumber = (value: unknown): value is number => typeof value === 'number';
const isString = (value: unknown): value is string => typeof value === 'string';

/** A value as an explanation quotes it: its JSON, cut short. */
function quoted(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 60 ? `${json.slice(0, 60)}…` : json;
}

const anyValue = (): undefined => undefined;
const noValue = (value: unknown) => (value === undefined ? undefined : "takes no value: leave 'value' out");
const needsNumber = (value: unknown) => (isNumber(value) ? undefined : 'needs a number value');
const needsString = (value: unknown) => (isString(value) ? undefined : 'needs a string value');
const needsList = (value: unknown) => (Array.isArray(value) ? undefined : 'needs a list value');

const isMemberOf = (attribute: unknown, list: readonly unknown[]) => list.some((item) => jsonEqual(attribute, item));

function equalTo(value: unknown): Predicate {
  if (typeof value !== 'object' || value === null) return (attribute) => attribute === value;
  return (attribute) => jsonEqual(attribute, value);
}

function memberOf(list: readonly unknown[]): Predicate {
  if (list.every((item) => typeof item !== 'object' || item === null)) {
    const members = new Set(list);
    return (attribute) => members.has(attribute);
  }
  return (attribute) => isMemberOf(attribute, list);
}

/** `contains` on a string is a substring test; on a list it is membership. Other types never match. */
function contains(value: unknown): Predicate {
  const isMember = equalTo(value);
  return (attribute) => {
    if (isString(attribute)) return isString(value) && attribute.includes(value);
    if (Array.isArray(attribute)) return attribute.some(isMember);
    return false;
  };
}

const containsValue: Relation = (attribute, value) => {
  if (isString(attribute)) return isString(value) && attribute.includes(value);
  return Array.isArray(attribute) && attribute.some((item) => jsonEqual(item, value));
};

function notContains(value: unknown): Predicate {
  const holds = contains(value);
  return (attribute) => (isString(attribute) || Array.isArray(attribute)) && !holds(attribute);
}

function compareNumbers(test: (attribute: number, value: number) => boolean): OperatorDefinition {
  return {
    checkValue: needsNumber,
    build(value) {
      const bound = value as number;
      return (attribute) => isNumber(attribute) && test(attribute, bound);
    },
    relate: (attribute, value) => isNumber(attribute) && isNumber(value) && test(attribute, value),
  };
}

function compareStrings(test: (attribute: string, value: string) => boolean): OperatorDefinition {
  return {
    checkValue: needsString,
    build: (value) => (attribute) => isString(attribute) && test(attribute, value as string),
    relate: (attribute, value) => isString(attribute) && isString(value) && test(attribute, value),
  };
}

/** A pattern is compiled once, with its policy: one read from the request would be compiled for every check. */
function needsPattern(value: unknown): string | undefined {
  if (!isString(value)) return 'needs a string value: a regular expression';
  try {
    linearRegExp(value);
    return undefined;
  } catch (error) {
    if (error instanceof PatternError) return `needs a regular expression: /${value.length > 60 ? `${value.slice(0, 60)}…` : value}/ ${error.message}`;
    throw error;
  }
}

/**
 * Only a string is matched by a pattern or not, and only one no longer than the pattern can be
 * matched against within its bound (LinearRegExp.longestText): anything else is undecidable for both operators.
 */
function matching(negated: boolean): OperatorDefinition {
  return {
    checkValue: needsPattern,
    build(value) {
      const pattern = linearRegExp(value as string);
      return (attribute) => {
        const matched = isString(attribute) ? pattern.test(attribute) : undefined;
        return matched === undefined ? undefined : matched !== negated;
      };
    },
    relate: () => false,
    refusesValueFrom: 'its pattern is compiled once, with the policy; give it as the value',
    undecidable(attribute, value) {
      if (!isString(attribute)) return `${quoted(attribute)} is not a string, which a pattern is matched against`;
      return `the value is ${attribute.length} characters long, longer than the ${linearRegExp(value as string).longestText} this pattern can be matched against`;
    },
  };
}

/**
 * Only an address is in a range or outside it: anything else is undecidable for both operators, and
 * so are ranges read from the request (parsed for each check, within MAX_ADDRESS_RANGES) that do not parse.
 */
function inNetwork(negated: boolean): OperatorDefinition {
  const expected = !negated;
  const settled = (inside: boolean | undefined) => (inside === undefined ? undefined : inside === expected);
  return {
    checkValue: rangesIssue,
    build(value) {
      const test = addressRanges(value);
      return (attribute) => settled(test(attribute));
    },
    relate: (attribute, value) => (rangesIssue(value) === undefined ? settled(addressRanges(value)(attribute)) : undefined),
    undecidable(attribute, value) {
      const rangesWrong = rangesIssue(value);
      return rangesWrong === undefined ? `${quoted(attribute)} is not an IP address` : `the ranges read, ${quoted(value)}, are not CIDR ranges: ${rangesWrong}`;
    },
  };
}

const DATE_TIME = "an RFC 3339 date-time with its offset ('2026-12-31T23:59:59Z')";
const needsDateTime = (value: unknown) => (instantOf(value) === undefined ? `needs a date-time value, ${DATE_TIME.slice(3)}` : undefined);
/** Why a time operator cannot evaluate `attribute` against an anchor or bound read as `value`. */
const notDateTimes = (attribute: unknown, value: unknown) =>
  instantOf(attribute) === undefined ? `${quoted(attribute)} is not ${DATE_TIME}` : `the date-time read, ${quoted(value)}, is not ${DATE_TIME}`;

function compareInstants(test: (attribute: number, value: number) => boolean): OperatorDefinition {
  const holds = (attribute: unknown, bound: number) => {
    const instant = instantOf(attribute);
    return instant === undefined ? undefined : test(instant, bound);
  };
  return {
    checkValue: needsDateTime,
    build(value) {
      const bound = instantOf(value)!;
      return (attribute) => holds(attribute, bound);
    },
    relate(attribute, value) {
      const bound = instantOf(value);
      return bound === undefined ? undefined : holds(attribute, bound);
    },
    undecidable: notDateTimes,
  };
}

/** `within`: a date-time no further than `last` before the anchor and `next` after it. */
const within: OperatorDefinition = {
  checkValue: nearnessIssue,
  build(value) {
    const near = nearTo(value);
    const { of } = value as Nearness;
    return (attribute) => near(attribute, of);
  },
  relate: () => false,
  anchored: {
    defaultReference: (value) => ((value as Nearness | null | undefined)?.of === undefined ? 'context.time' : undefined),
    relation: nearTo,
    pin: (value, anchor) => ({ ...(value as Nearness), of: anchor }),
    mirror(value) {
      const { last, next } = value as Nearness;
      return { ...(next !== undefined && { last: next }), ...(last !== undefined && { next: last }) };
    },
  },
  undecidable: (attribute, value) => notDateTimes(attribute, (value as Nearness | undefined)?.of ?? value),
};

const equals: OperatorDefinition = { checkValue: anyValue, build: equalTo, relate: jsonEqual };
const notEquals: OperatorDefinition = {
  checkValue: anyValue,
  build(value) {
    const isEqual = equalTo(value);
    return (attribute) => !isEqual(attribute);
  },
  relate: (attribute, value) => !jsonEqual(attribute, value),
};
const greater = compareNumbers((a, v) => a > v);
const greaterOrEqual = compareNumbers((a, v) => a >= v);
const less = compareNumbers((a, v) => a < v);
const lessOrEqual = compareNumbers((a, v) => a <= v);
/** Presence takes no value, so never a value read from the request (validation refuses `value_from` with it). */
const neverRelated: Relation = () => false;

/**
 * Every wire operator, synonyms included. Comparisons read naturally: `gt` with value 18 holds
 * when the attribute is greater than 18.
 */
export const OPERATOR_DEFINITIONS: Readonly<Record<Operator, OperatorDefinition>> = {
  '==': equals,
  equals,
  '!=': notEquals,
  not_equals: notEquals,
  contains: { checkValue: anyValue, build: contains, relate: containsValue },
  not_contains: {
    checkValue: anyValue,
    build: notContains,
    relate: (attribute, value) => (isString(attribute) || Array.isArray(attribute)) && !containsValue(attribute, value),
  },
  startswith: compareStrings((a, v) => a.startsWith(v)),
  endswith: compareStrings((a, v) => a.endsWith(v)),
  gt: greater,
  '>': greater,
  gte: greaterOrEqual,
  '>=': greaterOrEqual,
  lt: less,
  '<': less,
  lte: lessOrEqual,
  '<=': lessOrEqual,
  in: { checkValue: needsList, build: (value) => memberOf(value as unknown[]), relate: (attribute, value) => Array.isArray(value) && isMemberOf(attribute, value) },
  not_in: {
    checkValue: needsList,
    build(value) {
      const isMember = memberOf(value as unknown[]);
      return (attribute) => !isMember(attribute);
    },
    relate: (attribute, value) => Array.isArray(value) && !isMemberOf(attribute, value),
  },
  matches: matching(false),
  not_matches: matching(true),
  in_cidr: inNetwork(false),
  not_in_cidr: inNetwork(true),
  before: compareInstants((attribute, value) => attribute < value),
  after: compareInstants((attribute, value) => attribute > value),
  during: {
    checkValue: windowIssue,
    build: inWindow,
    relate: () => false,
    refusesValueFrom: 'its window is compiled once, with the policy; give it as the value',
    undecidable: (attribute) => `${quoted(attribute)} is not ${DATE_TIME}`,
  },
  within,
  // Presence: any value there (null included) is present; a missing path holds only for not_exists.
  exists: { checkValue: noValue, build: () => () => true, relate: neverRelated, refusesValueFrom: "leave 'value_from' out" },
  not_exists: { checkValue: noValue, build: () => () => false, holdsWhenMissing: true, relate: neverRelated, refusesValueFrom: "leave 'value_from' out" },
};

/** Each operator's first spelling in OPERATORS (`equals` → `==`, `>` → `gt`): synonyms share one definition. */
export const CANONICAL_OPERATOR = Object.fromEntries(
  OPERATORS.map((operator) => [operator, OPERATORS.find((first) => OPERATOR_DEFINITIONS[first] === OPERATOR_DEFINITIONS[operator])!]),
) as Readonly<Record<Operator, Operator>>;
