import type { Operator, Policy, Rule } from '../schemas/policy.js';
import type { Location, ValidationIssue } from '../schemas/errors.js';
import { ConditionCompiler, conditionKey as keyOf, type CompiledCondition } from './compile.js';
import { CANONICAL_OPERATOR } from './operators.js';
import { parseReference } from './references.js';
import type { RequestPart } from './entity.js';
import { formatCondition } from './condition-tree.js';
import { slugify } from './slug.js';
import { AnswerBudget } from './answer-budget.js';

type SideKey = 'principal_conditions' | 'resource_conditions' | 'action_conditions' | 'context_conditions';
const SIDES: readonly SideKey[] = ['principal_conditions', 'resource_conditions', 'action_conditions', 'context_conditions'];
const WHOSE: Readonly<Record<SideKey, string>> = {
  principal_conditions: "the principal's",
  resource_conditions: "the resource's",
  action_conditions: "the action's",
  context_conditions: "the context's",
};
const NO_CONDITIONS: readonly never[] = [];
const conditionsOf = (rule: Rule, side: SideKey) => rule[side] ?? NO_CONDITIONS;

const COMPARISONS = new Set<Operator>(['gt', '>', 'gte', '>=', 'lt', '<', 'lte', '<=']);

/** Each compiled condition's key, made once (the checks compare conditions many times); synonyms spelled one way, so that `==` and `equals` on the same value count as the same condition. */
const keys = new WeakMap<CompiledCondition, string>();
function conditionKey(condition: CompiledCondition): string {
  let key = keys.get(condition);
  if (key === undefined) {
    key = keyOf({ ...condition.source, operator: CANONICAL_OPERATOR[condition.source.operator] });
    keys.set(condition, key);
  }
  return key;
}

const describe = ({ source }: CompiledCondition) => formatCondition(source);

/** `exists` and `not_exists`: conditions on whether a value is there at all. */
const isPresenceTest = ({ source }: CompiledCondition) => source.operator === 'exists' || source.operator === 'not_exists';

/** The values a condition lets through by equality (`==`, or `in` a list), if it is such a condition (not one whose value each request brings). */
function demandedValues({ source }: CompiledCondition): readonly unknown[] | undefined {
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
class ReportStopped extends Error {
  constructor(readonly warning: ValidationIssue) {
    super(warning.msg);
  }
}

/** Counts the work and the length of one report as it is made; stops it (ReportStopped) past either. */
class Checking {
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

type Sides<T> = Record<SideKey, T>;

/** Conditions as `implied` looks them up: by key, and by path. */
interface ConditionIndex {
  keys: ReadonlySet<string>;
  byPath: ReadonlyMap<string, readonly CompiledCondition[]>;
}

function indexOf(conditions: readonly CompiledCondition[]): ConditionIndex {
  const byPath = new Map<string, CompiledCondition[]>();
  for (const condition of conditions) {
    const list = byPath.get(condition.source.path);
    if (list === undefined) byPath.set(condition.source.path, [condition]);
    else list.push(condition);
  }
  return { keys: new Set(conditions.map(conditionKey)), byPath };
}

const NONE: readonly CompiledCondition[] = [];

/** Whether every entity that satisfies the `indexed` conditions satisfies `condition` as well. */
function implied(condition: CompiledCondition, indexed: ConditionIndex, checking?: Checking): boolean {
  checking?.step();
  if (indexed.keys.has(conditionKey(condition))) return true;
  if (condition.reference !== undefined) return false;
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
interface CompiledRuleConditions {
  rule: Rule;
  actions: ReadonlySet<string>;
  sides: Sides<readonly CompiledCondition[]>;
  indexed: Sides<ConditionIndex>;
}

function compileRule(rule: Rule, compiler: ConditionCompiler): CompiledRuleConditions {
  const sides = Object.fromEntries(SIDES.map((side) => [side, compiler.list(conditionsOf(rule, side))])) as Sides<readonly CompiledCondition[]>;
  const indexed = Object.fromEntries(SIDES.map((side) => [side, indexOf(sides[side])])) as Sides<ConditionIndex>;
  return { rule, actions: new Set(rule.actions), sides, indexed };
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
  const onName = conditions.filter(({ source }) => source.path === 'name' && source.value_from === undefined);
  if (onName.length === 0) return undefined;
  checking.step(rule.actions.length * onName.length);
  if (rule.actions.some((action) => onName.every((condition) => !condition.holdsWhenMissing && condition.test(action)))) return undefined;
  return `no action it names (${rule.actions.map((action) => JSON.stringify(action)).join(', ')}) satisfies ${onName.map(describe).join(' and ')}`;
}

function neverMatches({ rule, sides }: CompiledRuleConditions, at: Location, checking: Checking): ValidationIssue[] {
  const unnamed = noActionNamed(rule, sides.action_conditions, checking);
  if (unnamed !== undefined) return [{ loc: [...at, 'action_conditions'], msg: `this rule can never match: ${unnamed}`, type: 'never_matches' }];
  for (const side of SIDES) {
    for (const condition of sides[side]) {
      const impossible = impossibleRelation(condition);
      if (impossible !== undefined) return [{ loc: [...at, side], msg: `this rule can never match: ${impossible}`, type: 'never_matches' }];
    }
    const byPath = new Map<string, CompiledCondition[]>();
    for (const condition of sides[side]) {
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

function duplicates({ sides }: CompiledRuleConditions, at: Location): ValidationIssue[] {
  return SIDES.flatMap((side) => {
    const seen = new Set<string>();
    return sides[side].flatMap((condition, index) => {
      const key = conditionKey(condition);
      const repeated = seen.has(key);
      seen.add(key);
      if (!repeated) return [];
      return [{ loc: [...at, side, index], msg: `duplicate condition: ${describe(condition)} is already in this rule`, type: 'duplicate_condition' }];
    });
  });
}

/** Whether every entity that satisfies the conditions of `later` satisfies those of `earlier`. */
function covers(earlier: CompiledRuleConditions, later: CompiledRuleConditions, checking: Checking): boolean {
  return SIDES.every((side) => earlier.sides[side].every((condition) => implied(condition, later.indexed[side], checking)));
}

/** The rules of one policy by the actions they name: which earlier rules share an action with a later one. */
class RulesByAction {
  private readonly rules = new Map<string, number[]>();

  add(rule: CompiledRuleConditions, index: number): void {
    for (const action of rule.actions) append(this.rules, action, index);
  }

  /** The indexes of the rules added so far that name one of `actions`, in increasing order. */
  sharing(actions: ReadonlySet<string>, checking: Checking): number[] {
    const lists = [...actions].map((action) => this.rules.get(action) ?? []);
    if (lists.length === 1) return lists[0]!;
    const indexes = new Set<number>();
    for (const list of lists) {
      checking.step(list.length);
      for (const index of list) indexes.add(index);
    }
    return [...indexes].sort((a, b) => a - b);
  }
}

/**
 * Within a policy the first matching rule decides: a later rule whose every match is also a match
 * of an earlier rule (for the actions they share) never decides them. `earlierRules` holds the
 * rules before `index`.
 */
function shadowing(rules: readonly CompiledRuleConditions[], index: number, earlierRules: RulesByAction, at: Location, checking: Checking): ValidationIssue[] {
  const later = rules[index]!;
  for (const earlierIndex of earlierRules.sharing(later.actions, checking)) {
    const earlier = rules[earlierIndex]!;
    if (!covers(earlier, later, checking)) continue;
    checking.step(later.rule.actions.length);
    const shared = later.rule.actions.filter((action) => earlier.actions.has(action));
    const actions = shared.length === later.rule.actions.length ? '' : ` for ${shared.map((action) => `'${action}'`).join(', ')}`;
    const effect =
      earlier.rule.effect === later.rule.effect
        ? `it is shadowed by rule '${earlier.rule.name}' above, of the same effect`
        : `rule '${earlier.rule.name}' above matches whenever it does and ${earlier.rule.effect}s`;
    return [{ loc: at, msg: `this rule never decides${actions}: ${effect}`, type: 'shadowed' }];
  }
  return [];
}

/** The rows of withinEdits, reused: a report may compare thousands of actions. */
let scratch = new Int32Array(0);

/**
 * Whether two actions are at most `limit` single-character edits apart (a swap of neighbours
 * counts as one). Only the cells within `limit` of the diagonal are computed, in three rows that
 * are reused: linear in the length, however long the actions are.
 */
export function withinEdits(left: string, right: string, limit: number): boolean {
  if (Math.abs(left.length - right.length) > limit) return false;
  const beyond = limit + 1;
  const width = right.length + 1;
  if (scratch.length < 3 * width) scratch = new Int32Array(3 * width);
  let twoBack = scratch.subarray(0, width).fill(beyond);
  let previous = scratch.subarray(width, 2 * width).fill(beyond);
  let current = scratch.subarray(2 * width, 3 * width).fill(beyond);
  for (let j = 0; j <= Math.min(limit, right.length); j++) previous[j] = j;
  for (let i = 1; i <= left.length; i++) {
    const low = Math.max(1, i - limit);
    const high = Math.min(right.length, i + limit);
    // Left of the band: column 0 (i deletions), or a cell no cheaper path reaches.
    current[low - 1] = low === 1 && i <= limit ? i : beyond;
    let rowBest = current[low - 1]!;
    for (let j = low; j <= high; j++) {
      let best = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (left[i - 1] === right[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && left[i - 1] === right[j - 2] && left[i - 2] === right[j - 1]) best = Math.min(best, twoBack[j - 2]! + 1);
      current[j] = Math.min(best, beyond);
      rowBest = Math.min(rowBest, current[j]!);
    }
    if (rowBest > limit) return false;
    [twoBack, previous, current] = [previous, current, twoBack];
  }
  return previous[right.length]! <= limit;
}

const folded = (action: string) => action.toLowerCase().replace(/[-_ ]/g, '');

/** Where an action is named: in order across the set, its first naming and the first by another policy than the first's. */
interface Naming {
  first: number;
  firstPolicy: number;
  second: number | undefined;
}

/** Every action the policies name, for finding likely typos: by name, by folded spelling and by length, each looked up at once. */
class ActionIndex {
  private readonly namings = new Map<string, Naming>();
  private readonly byFolded = new Map<string, string[]>();
  private readonly byLength = new Map<number, string[]>();

  constructor(policies: readonly Policy[]) {
    let order = 0;
    policies.forEach((policy, policyIndex) => {
      for (const rule of policy.rules) {
        for (const action of rule.actions) {
          order++;
          const naming = this.namings.get(action);
          if (naming === undefined) {
            this.namings.set(action, { first: order, firstPolicy: policyIndex, second: undefined });
            append(this.byFolded, folded(action), action);
            append(this.byLength, action.length, action);
          } else if (naming.second === undefined && naming.firstPolicy !== policyIndex) {
            naming.second = order;
          }
        }
      }
    });
  }

  /** Where a policy other than `policyIndex` first names `action`, in order across the set; undefined when none does. */
  namedElsewhere(action: string, policyIndex: number): number | undefined {
    const naming = this.namings.get(action);
    if (naming === undefined) return undefined;
    return naming.firstPolicy === policyIndex ? naming.second : naming.first;
  }

  /**
   * The first action, in order across the set, that a policy other than `policyIndex` names and
   * that is `action` spelled differently (case, `-`, `_`, spaces) or a few edits away from it.
   */
  nearest(action: string, policyIndex: number, checking: Checking): string | undefined {
    const limit = action.length > 4 ? 2 : 1;
    let best: { order: number; action: string } | undefined;
    const consider = (other: string, near: () => boolean) => {
      checking.step();
      const order = this.namedElsewhere(other, policyIndex);
      if (order === undefined || (best !== undefined && order >= best.order) || !near()) return;
      best = { order, action: other };
    };
    for (const other of this.byFolded.get(folded(action)) ?? []) consider(other, () => true);
    for (let length = action.length - limit; length <= action.length + limit; length++) {
      for (const other of this.byLength.get(length) ?? []) {
        consider(other, () => {
          checking.step(other.length * (2 * limit + 1));
          return withinEdits(action, other, limit);
        });
      }
    }
    return best?.action;
  }
}

function append<Key, Value>(map: Map<Key, Value[]>, key: Key, value: Value): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

/** Actions a rule names that no rule of any other policy names, when one that is nearly the same is named: likely a typo. */
function lonelyActions(rule: Rule, policyIndex: number, actions: ActionIndex, at: Location, checking: Checking): ValidationIssue[] {
  return rule.actions.flatMap((action, index) => {
    if (actions.namedElsewhere(action, policyIndex) !== undefined) return [];
    const near = actions.nearest(action, policyIndex, checking);
    if (near === undefined) return [];
    return [{ loc: [...at, 'actions', index], msg: `no rule of any other policy names action '${action}': did you mean '${near}'?`, type: 'unknown_action' }];
  });
}

/** A compiled rule and where it stands: its policy's index in the set, and its own in the policy. */
interface PlacedRule extends CompiledRuleConditions {
  policy: number;
  index: number;
}

/** The compiled rules of policy i of the set, compiled when first asked for. */
type CompiledPolicies = (policyIndex: number) => readonly CompiledRuleConditions[];

const sideKey = (side: SideKey, path: string) => JSON.stringify([side, path]);

const SIDE_OF_PART: Readonly<Record<RequestPart, SideKey>> = {
  principal: 'principal_conditions',
  resource: 'resource_conditions',
  action: 'action_conditions',
  context: 'context_conditions',
};

/**
 * The values a condition on `side` needs, each as the side and path a request could leave out: its
 * own path, and the value its `value_from` reads (but an action's name, which every check has). None
 * for `exists` and `not_exists`, which are about presence.
 */
function valuesNeeded(condition: CompiledCondition, side: SideKey): [SideKey, string][] {
  if (isPresenceTest(condition)) return [];
  const own: [SideKey, string] = [side, condition.source.path];
  const { referenced } = condition;
  if (referenced === undefined || (referenced.part === 'action' && referenced.path === 'name')) return [own];
  return [own, [SIDE_OF_PART[referenced.part], referenced.path]];
}

/** Whether `condition`, on `conditionSide`, can hold only when `path` of `side` is there: it tests it or refers to it. */
const needs = (condition: CompiledCondition, conditionSide: SideKey, side: SideKey, path: string): boolean =>
  (conditionSide === side && condition.source.path === path) ||
  (condition.referenced !== undefined && SIDE_OF_PART[condition.referenced.part] === side && condition.referenced.path === path);

/**
 * Conditions compared, at most, in looking for the rules that close the gaps of one validation:
 * past that, a gap is reported as open (a warning too many, never one missed), so that a body
 * crafted to make every rule a candidate for every other costs no more than this.
 */
const CLOSING_WORK_BUDGET = 1_000_000;

/** Omission warnings given in one validation at most; one more says how many others there are. */
export const MAX_OMISSION_WARNINGS = 100;

/** Longest closing rule a warning spells out as JSON; a longer one is described instead. */
const MAX_CLOSING_RULE_TEXT = 1000;

/** The deny rule that denies what `denying` lets through when `path` is left out, as JSON, or described when that is long. */
function closingRuleText(denying: CompiledRuleConditions, side: SideKey, path: string): string {
  const text = JSON.stringify(closingRule(denying, side, path));
  if (text.length <= MAX_CLOSING_RULE_TEXT) return text;
  return `a deny rule with this rule's actions and conditions, but {"path":${JSON.stringify(path)},"operator":"not_exists"} in place of those on ${path}`;
}

function closingRule({ rule, sides }: CompiledRuleConditions, side: SideKey, path: string): Record<string, unknown> {
  const conditions = (each: SideKey) => {
    const kept = sides[each]
      .filter((condition) => !needs(condition, each, side, path))
      .map(({ source }) => (source.value_from === undefined ? { path: source.path, operator: source.operator, value: source.value } : { path: source.path, operator: source.operator, value_from: source.value_from }));
    return each === side ? [...kept, { path, operator: 'not_exists' }] : kept;
  };
  const left = path === 'uri' ? 'uri' : path.slice('attributes.'.length);
  const others = (each: SideKey) => (each === side || sides[each].length > 0 ? { [each]: conditions(each) } : {});
  return {
    name: slugify(`${rule.name}-without-${left}`).slice(0, 256),
    effect: 'deny',
    principal_conditions: conditions('principal_conditions'),
    resource_conditions: conditions('resource_conditions'),
    ...others('action_conditions'),
    ...others('context_conditions'),
    actions: rule.actions,
  };
}

/**
 * A missing attribute makes any condition on it false, so a request that leaves out an attribute a
 * deny rule tests is not denied by it. For each deny rule, one warning per path it tests (but with
 * `exists` and `not_exists`, which are about presence), with the rule that would deny such requests,
 * unless a deny rule of the set does (see closes).
 */
function omissionWarnings(policies: readonly Policy[], compiledOf: CompiledPolicies): { of(rule: PlacedRule, at: Location): ValidationIssue[]; more(): ValidationIssue[] } {
  /** Deny rules holding a `not_exists` condition, by side and path: the only ones that can close a gap (only their policies are compiled). */
  const closers = new Map<string, PlacedRule[]>();
  const mayClose = (rule: Rule) => rule.effect === 'deny' && SIDES.some((side) => conditionsOf(rule, side).some((condition) => condition.operator === 'not_exists'));
  policies.forEach(({ rules: sources }, policy) =>
    sources.forEach((source, index) => {
      if (!mayClose(source)) return;
      const rule = compiledOf(policy)[index]!;
      for (const side of SIDES) {
        for (const path of new Set(rule.sides[side].filter((condition) => condition.holdsWhenMissing).map((condition) => condition.source.path))) {
          const key = sideKey(side, path);
          const placed = { ...rule, policy, index };
          const list = closers.get(key);
          if (list === undefined) closers.set(key, [placed]);
          else list.push(placed);
        }
      }
    }),
  );
  let work = 0;
  let given = 0;
  let notGiven: Location | undefined;
  let notGivenCount = 0;

  /**
   * Whether `closer` denies every request that meets `denying`'s conditions but those on `path` of
   * `side`, which it leaves out: it covers the actions, holds when the path leads nowhere, demands
   * nothing more than `denying` does, and no allow rule of its policy can decide such a request first.
   */
  const closes = (closer: PlacedRule, denying: PlacedRule, side: SideKey, path: string): boolean => {
    const actions = denying.rule.actions;
    work += actions.length * closer.rule.actions.length;
    if (work > CLOSING_WORK_BUDGET || !actions.every((action) => closer.rule.actions.includes(action))) return false;
    const demandsNoMore = SIDES.every((each) => {
      const others = denying.sides[each].filter((condition) => !needs(condition, each, side, path));
      work += others.length * closer.sides[each].length;
      if (work > CLOSING_WORK_BUDGET) return false;
      const othersIndexed = indexOf(others);
      return closer.sides[each].every((condition) => (each === side && condition.source.path === path && condition.holdsWhenMissing) || implied(condition, othersIndexed));
    });
    if (!demandsNoMore) return false;
    // The rules of its policy before it, but those before `denying` in the same policy, which would decide before either.
    const from = closer.policy === denying.policy ? denying.index + 1 : 0;
    const before = policies[closer.policy]!.rules.slice(from, closer.index);
    work += before.length;
    return work <= CLOSING_WORK_BUDGET && !before.some((rule) => rule.effect === 'allow' && rule.actions.some((action) => actions.includes(action)));
  };

  const of = (denying: PlacedRule, at: Location): ValidationIssue[] => {
    if (denying.rule.effect !== 'deny') return [];
    // A rule that holds only when a value is absent is not escaped by leaving it out.
    const absent = new Set(SIDES.flatMap((side) => denying.sides[side].filter((condition) => condition.holdsWhenMissing).map((condition) => sideKey(side, condition.source.path))));
    const warned = new Set<string>();
    return SIDES.flatMap((conditionSide) =>
      denying.sides[conditionSide].flatMap((condition, index) =>
        valuesNeeded(condition, conditionSide).flatMap(([side, path]) => {
          const key = sideKey(side, path);
          if (absent.has(key) || warned.has(key)) return [];
          warned.add(key);
          const candidates = closers.get(key);
          if (candidates !== undefined && work <= CLOSING_WORK_BUDGET && candidates.some((closer) => closes(closer, denying, side, path))) return [];
          const loc = [...at, conditionSide, index];
          if (given === MAX_OMISSION_WARNINGS) {
            notGiven ??= loc;
            notGivenCount++;
            return [];
          }
          given++;
          const msg =
            `a request that leaves out ${WHOSE[side]} ${path} escapes this deny rule (a missing attribute makes any condition on it false); ` +
            `to deny such requests too, add this rule next to it, with no allow rule between them: ${closingRuleText(denying, side, path)}`;
          return [{ loc, msg, type: 'escaped_by_omission' }];
        }),
      ),
    );
  };
  const more = (): ValidationIssue[] =>
    notGiven === undefined
      ? []
      : [{ loc: notGiven, msg: `${notGivenCount} more attributes of deny rules, from here on, let a request escape by leaving them out: the first ${MAX_OMISSION_WARNINGS} are listed`, type: 'escaped_by_omission' }];
  return { of, more };
}

/**
 * What is valid but probably not meant, in the policies at `checked` (positions in `policies`, the
 * whole set in creation order): rules that can never match, rules that never decide, actions that
 * look like typos of another policy's, duplicate conditions, deny rules a request escapes by
 * leaving an attribute out. Reasons on the compiled conditions that evaluation uses. `locate(i)`
 * says where policy i sits in the request. The report is held to `maxLength` characters of JSON
 * and its checks to `workLimit` steps: past either, it stops with a last warning of type
 * `incomplete` saying so. It pauses (yields) between rules after each slice of work, so that a
 * caller can let other work run meanwhile; the result is the generator's return value.
 */
export function* reportWarnings(
  policies: readonly Policy[],
  checked: readonly number[],
  locate: (index: number) => Location,
  { maxLength = Infinity, workLimit = VALIDATION_WORK_LIMIT } = {},
): Generator<void, ValidationIssue[], void> {
  const checking = new Checking(new AnswerBudget(maxLength), workLimit);
  const compiler = new ConditionCompiler();
  const compiled = new Map<number, readonly CompiledRuleConditions[]>();
  const compiledOf = (policyIndex: number) => {
    let rules = compiled.get(policyIndex);
    if (rules === undefined) compiled.set(policyIndex, (rules = policies[policyIndex]!.rules.map((rule) => compileRule(rule, compiler))));
    return rules;
  };
  const actions = new ActionIndex(policies);
  const escapesByOmission = omissionWarnings(policies, compiledOf);
  const warnings: ValidationIssue[] = [];
  try {
    for (const policyIndex of checked) {
      const rules = compiledOf(policyIndex);
      const earlierRules = new RulesByAction();
      for (const [ruleIndex, rule] of rules.entries()) {
        const at = [...locate(policyIndex), 'rules', ruleIndex];
        checking.step(rule.sides.principal_conditions.length + rule.sides.resource_conditions.length);
        checking.report(warnings, neverMatches(rule, at, checking));
        checking.report(warnings, shadowing(rules, ruleIndex, earlierRules, at, checking));
        earlierRules.add(rule, ruleIndex);
        checking.report(warnings, lonelyActions(rule.rule, policyIndex, actions, at, checking));
        checking.report(warnings, duplicates(rule, at));
        checking.report(warnings, escapesByOmission.of({ ...rule, policy: policyIndex, index: ruleIndex }, at));
        // A pause between rules, once a slice of work is done: whoever runs the report may let others run.
        if (checking.sliceDone()) yield;
      }
    }
    checking.report(warnings, escapesByOmission.more());
  } catch (error) {
    if (!(error instanceof ReportStopped)) throw error;
    warnings.push(error.warning);
  }
  return warnings;
}

/** The warnings of reportWarnings, made without pausing. */
export function policyWarnings(...args: Parameters<typeof reportWarnings>): ValidationIssue[] {
  const report = reportWarnings(...args);
  for (;;) {
    const next = report.next();
    if (next.done) return next.value;
  }
}
