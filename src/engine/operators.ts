import { OPERATORS, type Operator } from '../schemas/policy.js';
import { jsonEqual } from './json-equal.js';

/** Tests an attribute's value (never MISSING: the caller handles absence) against a condition. */
export type Predicate = (attribute: unknown) => boolean;

interface OperatorDefinition {
  /** Why a condition value (undefined when none is given) is unusable with this operator, or undefined when it is fine. */
  checkValue(value: unknown): string | undefined;
  build(value: unknown): Predicate;
  /** Whether the condition holds where its path leads nowhere: only `not_exists` does. */
  holdsWhenMissing?: true;
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

const anyValue = (): undefined => undefined;
const noValue = (value: unknown) => (value === undefined ? undefined : "takes no value: leave 'value' out");
const needsNumber = (value: unknown) => (isNumber(value) ? undefined : 'needs a number value');
const needsString = (value: unknown) => (isString(value) ? undefined : 'needs a string value');
const needsList = (value: unknown) => (Array.isArray(value) ? undefined : 'needs a list value');

function equalTo(value: unknown): Predicate {
  if (typeof value !== 'object' || value === null) return (attribute) => attribute === value;
  return (attribute) => jsonEqual(attribute, value);
}

function memberOf(list: readonly unknown[]): Predicate {
  if (list.every((item) => typeof item !== 'object' || item === null)) {
    const members = new Set(list);
    return (attribute) => members.has(attribute);
  }
  return (attribute) => list.some((item) => jsonEqual(attribute, item));
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

function notContains(value: unknown): Predicate {
  const holds = contains(value);
  return (attribute) => (isString(attribute) || Array.isArray(attribute)) && !holds(attribute);
}

function compareNumbers(test: (attribute: number, value: number) => boolean) {
  return (value: unknown): Predicate => {
    const bound = value as number;
    return (attribute) => isNumber(attribute) && test(attribute, bound);
  };
}

const equals: OperatorDefinition = { checkValue: anyValue, build: equalTo };
const notEquals: OperatorDefinition = {
  checkValue: anyValue,
  build(value) {
    const isEqual = equalTo(value);
    return (attribute) => !isEqual(attribute);
  },
};
const greater: OperatorDefinition = { checkValue: needsNumber, build: compareNumbers((a, v) => a > v) };
const greaterOrEqual: OperatorDefinition = { checkValue: needsNumber, build: compareNumbers((a, v) => a >= v) };
const less: OperatorDefinition = { checkValue: needsNumber, build: compareNumbers((a, v) => a < v) };
const lessOrEqual: OperatorDefinition = { checkValue: needsNumber, build: compareNumbers((a, v) => a <= v) };

/**
 * Every wire operator, synonyms included. Comparisons read naturally: `gt` with value 18 holds
 * when the attribute is greater than 18.
 */
export const OPERATOR_DEFINITIONS: Readonly<Record<Operator, OperatorDefinition>> = {
  '==': equals,
  equals,
  '!=': notEquals,
  not_equals: notEquals,
  contains: { checkValue: anyValue, build: contains },
  not_contains: { checkValue: anyValue, build: notContains },
  startswith: {
    checkValue: needsString,
    build: (value) => (attribute) => isString(attribute) && attribute.startsWith(value as string),
  },
  endswith: {
    checkValue: needsString,
    build: (value) => (attribute) => isString(attribute) && attribute.endsWith(value as string),
  },
  gt: greater,
  '>': greater,
  gte: greaterOrEqual,
  '>=': greaterOrEqual,
  lt: less,
  '<': less,
  lte: lessOrEqual,
  '<=': lessOrEqual,
  in: { checkValue: needsList, build: (value) => memberOf(value as unknown[]) },
  not_in: {
    checkValue: needsList,
    build(value) {
      const isMember = memberOf(value as unknown[]);
      return (attribute) => !isMember(attribute);
    },
  },
  // Presence: any value there (null included) is present; a missing path holds only for not_exists.
  exists: { checkValue: noValue, build: () => () => true },
  not_exists: { checkValue: noValue, build: () => () => false, holdsWhenMissing: true },
};

/** Each operator's first spelling in OPERATORS (`equals` → `==`, `>` → `gt`): synonyms share one definition. */
export const CANONICAL_OPERATOR = Object.fromEntries(
  OPERATORS.map((operator) => [operator, OPERATORS.find((first) => OPERATOR_DEFINITIONS[first] === OPERATOR_DEFINITIONS[operator])!]),
) as Readonly<Record<Operator, Operator>>;
