import { ANY_ACTION } from '../actions.js';
import type { Operator, Rule } from '../../schemas/policy.js';
import type { Location, ValidationIssue } from '../../schemas/errors.js';
import type { CompiledCondition } from '../compiled-rule.js';
import { CANONICAL_OPERATOR } from '../operators/index.js';
import { parseReference } from '../references.js';
import { COMPARISONS, Checking, type CompiledRuleConditions, SIDES, conditionsAmong, demandedValues, describe } from './shared.js';

// Rules that can never match: conditions on one path no value satisfies together, relations whose
// two values can never have the types their operator takes, conditions on the action's name that
// none of the rule's actions satisfies.

/**
 * Values among which, if the conditions on one path can hold together at all, one satisfies them
 * all: the values an equality admits (the attribute must be one of them), else every number the
 * conditions name with the midpoints between them and a number beyond each end (comparisons need a
 * number, and between two named numbers every value behaves alike). Undefined when no such finite
 * set exists (no equality and no comparison: some other value always gets through).
 */
function witnesses(conditions: readonly CompiledCondition[]): readonly unknown[] | undefined {
  for (const condition of conditions) {
    const values = demandedValues(condition);
    if (values !== undefined) return values;
  }
  if (!conditions.some(({ source }) => COMPARISONS.has(source.operator))) return undefined;
  const named = conditions.flatMap(({ source }) => (Array.isArray(source.value) ? source.value : [source.value]));
  const numbers = [...new Set(named.filter((value): value is number => typeof value === 'number'))].sort((a, b) => a - b);
  const between = numbers.slice(1).map((value, index) => (numbers[index]! + value) / 2);
  return [...numbers, ...between, numbers[0]! - 1, numbers.at(-1)! + 1];
}

/** The conditions on one path of one side that no value can satisfy together, if any. */
function contradiction(all: readonly CompiledCondition[], checking: Checking): readonly CompiledCondition[] | undefined {
  // A relation's value comes with each request: only presence says anything of it here.
  const conditions = all.filter((condition) => condition.reference === undefined || condition.holdsWhenMissing);
  // Every condition but not_exists needs a value there.
  const absent = conditions.find((condition) => condition.holdsWhenMissing);
  const present = conditions.find((condition) => !condition.holdsWhenMissing);
  if (absent !== undefined) return present === undefined ? undefined : conditions.filter((condition) => condition === absent || condition === present);
  const candidates = witnesses(conditions);
  if (candidates === undefined) return undefined;
  checking.step(candidates.length * conditions.length);
  const holdsForSome = candidates.some((value) => conditions.every(({ test }) => test(value)));
  return holdsForSome ? undefined : conditions;
}

/** A uri and an action's name are always strings. */
const isAlwaysText = (path: string) => path === 'uri' || path === 'name';

const NEEDS_NUMBERS = new Set<Operator>(['gt', 'gte', 'lt', 'lte']);

/** Why a relation can never hold whatever the check sends (its two values can never be of the types its operator takes), if it cannot. */
function impossibleRelation(condition: CompiledCondition): string | undefined {
  const { source } = condition;
  if (source.value_from === undefined) return undefined;
  const operator = CANONICAL_OPERATOR[source.operator];
  const reference = parseReference(source.value_from);
  const other = 'error' in reference ? undefined : reference.path;
  if (NEEDS_NUMBERS.has(operator) && (isAlwaysText(source.path) || (other !== undefined && isAlwaysText(other)))) {
    return `${describe(condition)} never holds: '${operator}' compares numbers, and ${isAlwaysText(source.path) ? source.path : source.value_from} is always a string`;
  }
  if ((operator === 'in' || operator === 'not_in') && other !== undefined && isAlwaysText(other)) {
    return `${describe(condition)} never holds: '${operator}' needs a list, and ${source.value_from} is always a string`;
  }
  return undefined;
}

/** Why the rule's conditions on the action's name hold for none of the actions it names (the only ones it is ever looked at for), if they do not. */
function noActionNamed(rule: Rule, conditions: readonly CompiledCondition[], checking: Checking): string | undefined {
  const onName = conditions.filter(({ source, reference }) => source.path === 'name' && reference === undefined);
  // A rule of every action is looked at for any name.
  if (onName.length === 0 || rule.actions.includes(ANY_ACTION)) return undefined;
  checking.step(rule.actions.length * onName.length);
  if (rule.actions.some((action) => onName.every((condition) => !condition.holdsWhenMissing && condition.test(action)))) return undefined;
  return `no action it names (${rule.actions.map((action) => JSON.stringify(action)).join(', ')}) satisfies ${onName.map(describe).join(' and ')}`;
}

export function neverMatches({ rule, sides }: CompiledRuleConditions, at: Location, checking: Checking): ValidationIssue[] {
  const unnamed = noActionNamed(rule, conditionsAmong(sides.action_conditions).map(([condition]) => condition), checking);
  if (unnamed !== undefined) return [{ loc: [...at, 'action_conditions'], msg: `this rule can never match: ${unnamed}`, type: 'never_matches' }];
  for (const side of SIDES) {
    for (const [condition] of conditionsAmong(sides[side])) {
      const impossible = impossibleRelation(condition);
      if (impossible !== undefined) return [{ loc: [...at, side], msg: `this rule can never match: ${impossible}`, type: 'never_matches' }];
    }
    const byPath = new Map<string, CompiledCondition[]>();
    for (const [condition] of conditionsAmong(sides[side])) {
      const list = byPath.get(condition.source.path);
      if (list === undefined) byPath.set(condition.source.path, [condition]);
      else list.push(condition);
    }
    for (const [path, conditions] of byPath) {
      const clash = contradiction(conditions, checking);
      if (clash === undefined) continue;
      const which = clash.length === 1 ? `${describe(clash[0]!)} holds for no value` : `no value of ${path} satisfies ${clash.map(describe).join(' and ')}`;
      return [{ loc: [...at, side], msg: `this rule can never match: ${which}`, type: 'never_matches' }];
    }
  }
  return [];
}
