import type { Condition, ConditionGroup, Operator, Rule } from '../../schemas/policy.js';
import { mapConditions, resolveSets, type SetsInReach } from '../condition-items.js';
import type { ValidationIssue } from '../../schemas/errors.js';
import { ConditionCompiler, itemKey } from '../compile.js';
import type { CompiledCondition, CompiledItem } from '../compiled-rule.js';
import { CANONICAL_OPERATOR } from '../operators/index.js';
import { formatCondition } from '../condition-tree.js';
import { AnswerBudget } from '../answer-budget.js';

// What the analyses of policyWarnings share: the sides of a rule, compiled conditions and their
// keys, implication between condition lists, and the budget of work and length a report is held to.

export type SideKey = 'principal_conditions' | 'resource_conditions' | 'action_conditions' | 'context_conditions';

export const SIDES: readonly SideKey[] = ['principal_conditions', 'resource_conditions', 'action_conditions', 'context_conditions'];

export const WHOSE: Readonly<Record<SideKey, string>> = {
  principal_conditions: "the principal's",
  resource_conditions: "the resource's",
  action_conditions: "the action's",
  context_conditions: "the context's",
};

const NO_CONDITIONS: readonly never[] = [];

export const conditionsOf = (rule: Rule, side: SideKey) => rule[side] ?? NO_CONDITIONS;

export const COMPARISONS = new Set<Operator>(['gt', '>', 'gte', '>=', 'lt', '<', 'lte', '<=']);

/** Each compiled condition's key, made once (the checks compare conditions many times); synonyms spelled one way, so that `==` and `equals` on the same value count as the same condition. */
const keys = new WeakMap<CompiledItem, string>();

export function conditionKey(item: CompiledItem): string {
  let key = keys.get(item);
  if (key === undefined) {
    key = item.group === undefined ? itemKey(canonical(item.source)) : itemKey(mapConditions(item.source, canonical) as ConditionGroup);
    keys.set(item, key);
  }
  return key;
}

const canonical = (condition: Condition): Condition => ({ ...condition, operator: CANONICAL_OPERATOR[condition.operator] });

/** The conditions of `items`, each with its position among them: groups are only compared whole (see implied). */
export const conditionsAmong = (items: readonly CompiledItem[]): [CompiledCondition, number][] =>
  items.flatMap((item, index) => (item.group === undefined ? [[item, index] as [CompiledCondition, number]] : []));

export const describe = ({ source }: CompiledCondition) => formatCondition(source);

/** `exists` and `not_exists`: conditions on whether a value is there at all. */
export const isPresenceTest = ({ source }: CompiledCondition) => source.operator === 'exists' || source.operator === 'not_exists';

/** The values a condition lets through by equality (`==`, or `in` a list), if it is such a condition (not one whose value each request brings). */
export function demandedValues({ source }: CompiledCondition): readonly unknown[] | undefined {
  if (source.value_from !== undefined) return undefined;
  if (source.operator === '==' || source.operator === 'equals') return [source.value];
  if (source.operator === 'in') return source.value as unknown[];
  return undefined;
}

/**
 * How far the checks of one report may go, in steps (a condition compared, a value tried, a cell
 * of an edit distance): the report stops there, saying so. Some tenths of a second of work, in
 * slices; far more than any policy a person writes needs.
 */
export const VALIDATION_WORK_LIMIT = 10_000_000;

/** Steps between two pauses of reportWarnings: some milliseconds of work. */
const SLICE_STEPS = 20_000;

/** Why a report stopped early: its last warning. */
export class ReportStopped extends Error {
  constructor(readonly warning: ValidationIssue) {
    super(warning.msg);
  }
}

/** Counts the work and the length of one report as it is made; stops it (ReportStopped) past either. */
export class Checking {
  private work = 0;
  private sinceSlice = 0;

  constructor(
    private readonly answer: AnswerBudget,
    private readonly workLimit: number,
  ) {}

  step(count = 1): void {
    this.work += count;
    this.sinceSlice += count;
    if (this.work > this.workLimit) {
      throw new ReportStopped({ loc: ['body'], msg: 'the checks stop here, unfinished: validate fewer or smaller policies at a time to check them all', type: 'incomplete' });
    }
  }

  /** Whether a slice of work is done since the last time this said so. */
  sliceDone(): boolean {
    if (this.sinceSlice < SLICE_STEPS) return false;
    this.sinceSlice = 0;
    return true;
  }

  report(into: ValidationIssue[], warnings: readonly ValidationIssue[]): void {
    for (const warning of warnings) {
      if (!this.answer.spend(JSON.stringify(warning).length + 1)) {
        const msg = `the report stops here: its warnings would be longer than ${this.answer.maxLength} characters; fix these, or validate fewer policies at a time, to see the rest`;
        throw new ReportStopped({ loc: ['body'], msg, type: 'incomplete' });
      }
      into.push(warning);
    }
  }
}

type Sides<T> = Record<SideKey, T>;

/** Conditions as `implied` looks them up: by key, and by path. */
interface ConditionIndex {
  keys: ReadonlySet<string>;
  byPath: ReadonlyMap<string, readonly CompiledCondition[]>;
}

export function indexOf(items: readonly CompiledItem[]): ConditionIndex {
  const byPath = new Map<string, CompiledCondition[]>();
  for (const [condition] of conditionsAmong(items)) {
    const list = byPath.get(condition.source.path);
    if (list === undefined) byPath.set(condition.source.path, [condition]);
    else list.push(condition);
  }
  return { keys: new Set(items.map(conditionKey)), byPath };
}

const NONE: readonly CompiledCondition[] = [];

/** Whether every entity that satisfies the `indexed` conditions satisfies `condition` as well. */
export function implied(condition: CompiledItem, indexed: ConditionIndex, checking?: Checking): boolean {
  checking?.step();
  if (indexed.keys.has(conditionKey(condition))) return true;
  if (condition.reference !== undefined || condition.group !== undefined) return false;
  for (const other of indexed.byPath.get(condition.source.path) ?? NONE) {
    // `exists` asks only that a value be there, as every condition but not_exists does.
    if (condition.source.operator === 'exists' && !other.holdsWhenMissing) return true;
    const values = demandedValues(other);
    if (values === undefined) continue;
    checking?.step(values.length);
    if (values.every((value) => condition.test(value))) return true;
  }
  return false;
}

/** A rule with its conditions compiled, and what the checks look up in them. */
export interface CompiledRuleConditions {
  rule: Rule;
  actions: ReadonlySet<string>;
  sides: Sides<readonly CompiledItem[]>;
  indexed: Sides<ConditionIndex>;
}

/** `rule` compiled, its references to condition sets resolved as `sets` finds them (a reference is compared whole, as a group). */
export function compileRule(sets: SetsInReach, rule: Rule, compiler: ConditionCompiler): CompiledRuleConditions {
  const sides = Object.fromEntries(SIDES.map((side) => [side, compiler.list(resolveSets(sets, conditionsOf(rule, side)), rule.effect === 'deny')])) as Sides<readonly CompiledItem[]>;
  const indexed = Object.fromEntries(SIDES.map((side) => [side, indexOf(sides[side])])) as Sides<ConditionIndex>;
  return { rule, actions: new Set(rule.actions), sides, indexed };
}

/** A compiled rule and where it stands: its policy's index in the set, and its own in the policy. */
export interface PlacedRule extends CompiledRuleConditions {
  policy: number;
  index: number;
}

/** The compiled rules of policy i of the set, compiled when first asked for. */
export type CompiledPolicies = (policyIndex: number) => readonly CompiledRuleConditions[];

/** Adds `value` to the list of `key` in `map`. */
export function append<Key, Value>(map: Map<Key, Value[]>, key: Key, value: Value): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}
