import type { Operator, Policy, Rule } from '../schemas/policy.js';
import type { ValidationIssue } from '../schemas/errors.js';
import { ConditionCompiler, conditionKey as keyOf, type CompiledCondition } from './compile.js';
import { CANONICAL_OPERATOR } from './operators.js';
import { formatCondition } from './condition-tree.js';
import { slugify } from './slug.js';

type Location = (string | number)[];
type SideKey = 'principal_conditions' | 'resource_conditions';
const SIDES: readonly SideKey[] = ['principal_conditions', 'resource_conditions'];

const COMPARISONS = new Set<Operator>(['gt', '>', 'gte', '>=', 'lt', '<', 'lte', '<=']);

/** Synonyms spelled one way, so that `==` and `equals` on the same value count as the same condition. */
const conditionKey = ({ source }: CompiledCondition) => keyOf({ ...source, operator: CANONICAL_OPERATOR[source.operator] });

const describe = ({ source }: CompiledCondition) => formatCondition(source);

/** `exists` and `not_exists`: conditions on whether a value is there at all. */
const isPresenceTest = ({ source }: CompiledCondition) => source.operator === 'exists' || source.operator === 'not_exists';

/** The values a condition lets through by equality (`==`, or `in` a list), if it is such a condition. */
function demandedValues({ source }: CompiledCondition): readonly unknown[] | undefined {
  if (source.operator === '==' || source.operator === 'equals') return [source.value];
  if (source.operator === 'in') return source.value as unknown[];
  return undefined;
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
function contradiction(conditions: readonly CompiledCondition[]): readonly CompiledCondition[] | undefined {
  // Every condition but not_exists needs a value there.
  const absent = conditions.find((condition) => condition.holdsWhenMissing);
  const present = conditions.find((condition) => !condition.holdsWhenMissing);
  if (absent !== undefined) return present === undefined ? undefined : conditions.filter((condition) => condition === absent || condition === present);
  const candidates = witnesses(conditions);
  if (candidates === undefined) return undefined;
  const holdsForSome = candidates.some((value) => conditions.every(({ test }) => test(value)));
  return holdsForSome ? undefined : conditions;
}

/** Whether every entity that satisfies `conditions` satisfies `condition` as well. */
function implied(condition: CompiledCondition, conditions: readonly CompiledCondition[]): boolean {
  const key = conditionKey(condition);
  return conditions.some((other) => {
    if (conditionKey(other) === key) return true;
    if (other.source.path !== condition.source.path) return false;
    // `exists` asks only that a value be there, as every condition but not_exists does.
    if (condition.source.operator === 'exists' && !other.holdsWhenMissing) return true;
    const values = demandedValues(other);
    return values !== undefined && values.every((value) => condition.test(value));
  });
}

interface CompiledRuleConditions {
  rule: Rule;
  sides: Record<SideKey, readonly CompiledCondition[]>;
}

function neverMatches({ sides }: CompiledRuleConditions, at: Location): ValidationIssue[] {
  for (const side of SIDES) {
    const byPath = new Map<string, CompiledCondition[]>();
    for (const condition of sides[side]) byPath.set(condition.source.path, [...(byPath.get(condition.source.path) ?? []), condition]);
    for (const [path, conditions] of byPath) {
      const clash = contradiction(conditions);
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

/**
 * Within a policy the first matching rule decides: a later rule whose every match is also a match
 * of an earlier rule (for the actions they share) never decides them.
 */
function shadowing(rules: readonly CompiledRuleConditions[], index: number, at: Location): ValidationIssue[] {
  const later = rules[index]!;
  for (const earlier of rules.slice(0, index)) {
    const shared = later.rule.actions.filter((action) => earlier.rule.actions.includes(action));
    if (shared.length === 0) continue;
    const covers = SIDES.every((side) => earlier.sides[side].every((condition) => implied(condition, later.sides[side])));
    if (!covers) continue;
    const actions = shared.length === later.rule.actions.length ? '' : ` for ${shared.map((action) => `'${action}'`).join(', ')}`;
    const effect =
      earlier.rule.effect === later.rule.effect
        ? `it is shadowed by rule '${earlier.rule.name}' above, of the same effect`
        : `rule '${earlier.rule.name}' above matches whenever it does and ${earlier.rule.effect}s`;
    return [{ loc: at, msg: `this rule never decides${actions}: ${effect}`, type: 'shadowed' }];
  }
  return [];
}

/** How many single-character edits (a swap of neighbours counts as one) turn one action into the other, up to 3. */
function editDistance(left: string, right: string): number {
  if (Math.abs(left.length - right.length) > 2) return 3;
  const rows = Array.from({ length: left.length + 1 }, (_, i) => Array.from({ length: right.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= left.length; i++) {
    for (let j = 1; j <= right.length; j++) {
      const substitution = rows[i - 1]![j - 1]! + (left[i - 1] === right[j - 1] ? 0 : 1);
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, substitution);
      if (i > 1 && j > 1 && left[i - 1] === right[j - 2] && left[i - 2] === right[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return Math.min(rows[left.length]![right.length]!, 3);
}

/** Actions a rule names that no rule of any other policy names, when one that is nearly the same is named: likely a typo. */
function lonelyActions(rule: Rule, elsewhere: ReadonlySet<string>, at: Location): ValidationIssue[] {
  return rule.actions.flatMap((action, index) => {
    if (elsewhere.has(action)) return [];
    const folded = action.toLowerCase().replace(/[-_ ]/g, '');
    const near = [...elsewhere].find((other) => other.toLowerCase().replace(/[-_ ]/g, '') === folded || editDistance(action, other) <= (action.length > 4 ? 2 : 1));
    if (near === undefined) return [];
    return [{ loc: [...at, 'actions', index], msg: `no rule of any other policy names action '${action}': did you mean '${near}'?`, type: 'unknown_action' }];
  });
}

/** A compiled rule and where it stands: its policy's index in the set, and its own in the policy. */
interface PlacedRule extends CompiledRuleConditions {
  policy: number;
  index: number;
}

type Compiled = readonly (readonly CompiledRuleConditions[])[];

const sideKey = (side: SideKey, path: string) => JSON.stringify([side, path]);

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
    const kept = sides[each].filter((condition) => each !== side || condition.source.path !== path).map(({ source }) => ({ path: source.path, operator: source.operator, value: source.value }));
    return each === side ? [...kept, { path, operator: 'not_exists' }] : kept;
  };
  const left = path === 'uri' ? 'uri' : path.slice('attributes.'.length);
  return {
    name: slugify(`${rule.name}-without-${left}`).slice(0, 256),
    effect: 'deny',
    principal_conditions: conditions('principal_conditions'),
    resource_conditions: conditions('resource_conditions'),
    actions: rule.actions,
  };
}

/**
 * A missing attribute makes any condition on it false, so a request that leaves out an attribute a
 * deny rule tests is not denied by it. For each deny rule, one warning per path it tests (but with
 * `exists` and `not_exists`, which are about presence), with the rule that would deny such requests,
 * unless a deny rule of the set does (see closes).
 */
function omissionWarnings(compiled: Compiled): { of(rule: PlacedRule, at: Location): ValidationIssue[]; more(): ValidationIssue[] } {
  /** Deny rules holding a `not_exists` condition, by side and path: the only ones that can close a gap. */
  const closers = new Map<string, PlacedRule[]>();
  compiled.forEach((rules, policy) =>
    rules.forEach((rule, index) => {
      if (rule.rule.effect !== 'deny') return;
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
      const others = denying.sides[each].filter((condition) => each !== side || condition.source.path !== path);
      work += others.length * closer.sides[each].length;
      return work <= CLOSING_WORK_BUDGET && closer.sides[each].every((condition) => (each === side && condition.source.path === path && condition.holdsWhenMissing) || implied(condition, others));
    });
    if (!demandsNoMore) return false;
    // The rules of its policy before it, but those before `denying` in the same policy, which would decide before either.
    const from = closer.policy === denying.policy ? denying.index + 1 : 0;
    const before = compiled[closer.policy]!.slice(from, closer.index);
    work += before.length;
    return work <= CLOSING_WORK_BUDGET && !before.some(({ rule }) => rule.effect === 'allow' && rule.actions.some((action) => actions.includes(action)));
  };

  const of = (denying: PlacedRule, at: Location): ValidationIssue[] => {
    if (denying.rule.effect !== 'deny') return [];
    return SIDES.flatMap((side) => {
      const conditions = denying.sides[side];
      const absent = new Set(conditions.filter((condition) => condition.holdsWhenMissing).map((condition) => condition.source.path));
      const warned = new Set<string>();
      return conditions.flatMap((condition, index) => {
        const { path } = condition.source;
        if (isPresenceTest(condition) || absent.has(path) || warned.has(path)) return [];
        warned.add(path);
        const candidates = closers.get(sideKey(side, path));
        if (candidates !== undefined && work <= CLOSING_WORK_BUDGET && candidates.some((closer) => closes(closer, denying, side, path))) return [];
        const loc = [...at, side, index];
        if (given === MAX_OMISSION_WARNINGS) {
          notGiven ??= loc;
          notGivenCount++;
          return [];
        }
        given++;
        const whose = side === 'principal_conditions' ? "the principal's" : "the resource's";
        const msg =
          `a request that leaves out ${whose} ${path} escapes this deny rule (a missing attribute makes any condition on it false); ` +
          `to deny such requests too, add this rule next to it, with no allow rule between them: ${closingRuleText(denying, side, path)}`;
        return [{ loc, msg, type: 'escaped_by_omission' }];
      });
    });
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
 * says where policy i sits in the request.
 */
export function policyWarnings(policies: readonly Policy[], checked: readonly number[], locate: (index: number) => Location): ValidationIssue[] {
  const compiler = new ConditionCompiler();
  const compiled = policies.map((policy) =>
    policy.rules.map((rule) => ({ rule, sides: { principal_conditions: compiler.list(rule.principal_conditions), resource_conditions: compiler.list(rule.resource_conditions) } })),
  );
  const escapesByOmission = omissionWarnings(compiled);
  const warnings = checked.flatMap((policyIndex) => {
    const elsewhere = new Set(policies.flatMap((policy, index) => (index === policyIndex ? [] : policy.rules.flatMap((rule) => rule.actions))));
    const rules = compiled[policyIndex]!;
    return rules.flatMap((rule, ruleIndex) => {
      const at = [...locate(policyIndex), 'rules', ruleIndex];
      const placed = { ...rule, policy: policyIndex, index: ruleIndex };
      return [
        ...neverMatches(rule, at),
        ...shadowing(rules, ruleIndex, at),
        ...lonelyActions(rule.rule, elsewhere, at),
        ...duplicates(rule, at),
        ...escapesByOmission.of(placed, at),
      ];
    });
  });
  return [...warnings, ...escapesByOmission.more()];
}
