import { coversAction } from '../actions.js';
import type { Policy, Rule } from '../../schemas/policy.js';
import type { Location, ValidationIssue } from '../../schemas/errors.js';
import type { CompiledCondition, CompiledItem } from '../compiled-rule.js';
import { writtenItem } from '../condition-items.js';
import type { RequestPart } from '../entity.js';
import { slugify } from '../slug.js';
import { type CompiledPolicies, type CompiledRuleConditions, type PlacedRule, SIDES, type SideKey, WHOSE, conditionsAmong, conditionsOf, implied, indexOf, isPresenceTest } from './shared.js';

// Deny rules a request escapes by leaving out an attribute they test (or one a reference reads), and
// the rule that would close each gap.

const sideKey = (side: SideKey, path: string) => JSON.stringify([side, path]);

const SIDE_OF_PART: Readonly<Record<RequestPart, SideKey>> = {
  principal: 'principal_conditions',
  resource: 'resource_conditions',
  action: 'action_conditions',
  context: 'context_conditions',
};

const PART_OF_SIDE = Object.fromEntries(Object.entries(SIDE_OF_PART).map(([part, side]) => [side, part])) as Readonly<Record<SideKey, RequestPart>>;

/**
 * Whether the value at `path` of `side` is a flag this deny rule denies when set (`== true`): leaving
 * it out is then the ordinary case, not a gap, and a rule on `not_exists` would deny the ordinary case.
 */
const isFlag = (condition: CompiledCondition, conditionSide: SideKey, side: SideKey, path: string): boolean =>
  conditionSide === side && condition.source.path === path && condition.source.operator === '==' && condition.source.value === true;

/** Whether every check has the value at `path` of `side`: an action's name, and the decision's time, which the server supplies. */
const alwaysThere = (side: SideKey, path: string) => (side === 'action_conditions' && path === 'name') || (side === 'context_conditions' && path === 'time');

/**
 * The values a condition on `side` needs, each as the side and path a request could leave out: its
 * own path, and the value its `value_from` reads (but those every check has). None for `exists` and
 * `not_exists`, which are about presence.
 */
function valuesNeeded(condition: CompiledCondition, side: SideKey): [SideKey, string][] {
  if (isPresenceTest(condition)) return [];
  const { referenced } = condition;
  const needed: [SideKey, string][] = [[side, condition.source.path]];
  if (referenced !== undefined) needed.push([SIDE_OF_PART[referenced.part], referenced.path]);
  return needed.filter(([each, path]) => !alwaysThere(each, path));
}

/** Whether `condition`, on `conditionSide`, can hold only when `path` of `side` is there: it tests it or refers to it. */
const needs = (condition: CompiledItem, conditionSide: SideKey, side: SideKey, path: string): boolean =>
  condition.group === undefined &&
  ((conditionSide === side && condition.source.path === path) ||
    (condition.referenced !== undefined && SIDE_OF_PART[condition.referenced.part] === side && condition.referenced.path === path));

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
      .map(({ source }) => {
        if (!('path' in source)) return writtenItem(source);
        const { path: conditionPath, operator, value, value_from } = source;
        return { path: conditionPath, operator, ...(value !== undefined && { value }), ...(value_from !== undefined && { value_from }) };
      });
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
export function omissionWarnings(policies: readonly Policy[], compiledOf: CompiledPolicies): { of(rule: PlacedRule, at: Location): ValidationIssue[]; more(): ValidationIssue[] } {
  /** Deny rules holding a `not_exists` condition, by side and path: the only ones that can close a gap (only their policies are compiled). */
  const closers = new Map<string, PlacedRule[]>();
  const mayClose = (rule: Rule) => rule.effect === 'deny' && SIDES.some((side) => conditionsOf(rule, side).some((condition) => 'operator' in condition && condition.operator === 'not_exists'));
  policies.forEach(({ rules: sources }, policy) =>
    sources.forEach((source, index) => {
      if (!mayClose(source)) return;
      const rule = compiledOf(policy)[index]!;
      for (const side of SIDES) {
        for (const path of new Set(conditionsAmong(rule.sides[side]).flatMap(([condition]) => (condition.holdsWhenMissing ? [condition.source.path] : [])))) {
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
    if (work > CLOSING_WORK_BUDGET || !actions.every((action) => coversAction(closer.rule.actions, action))) return false;
    const demandsNoMore = SIDES.every((each) => {
      const others = denying.sides[each].filter((condition) => !needs(condition, each, side, path));
      work += others.length * closer.sides[each].length;
      if (work > CLOSING_WORK_BUDGET) return false;
      const othersIndexed = indexOf(others);
      return closer.sides[each].every((condition) => (each === side && condition.group === undefined && condition.source.path === path && condition.holdsWhenMissing) || implied(condition, othersIndexed));
    });
    if (!demandsNoMore) return false;
    // The rules of its policy before it, but those before `denying` in the same policy, which would decide before either.
    const from = closer.policy === denying.policy ? denying.index + 1 : 0;
    const before = policies[closer.policy]!.rules.slice(from, closer.index);
    work += before.length;
    return work <= CLOSING_WORK_BUDGET && !before.some((rule) => rule.effect === 'allow' && (rule.actions.some((action) => coversAction(actions, action)) || actions.some((action) => coversAction(rule.actions, action))));
  };

  const of = (denying: PlacedRule, at: Location): ValidationIssue[] => {
    if (denying.rule.effect !== 'deny') return [];
    // A rule that holds only when a value is absent is not escaped by leaving it out.
    const absent = new Set(SIDES.flatMap((side) => conditionsAmong(denying.sides[side]).flatMap(([condition]) => (condition.holdsWhenMissing ? [sideKey(side, condition.source.path)] : []))));
    const warned = new Set<string>();
    return SIDES.flatMap((conditionSide) =>
      conditionsAmong(denying.sides[conditionSide]).flatMap(([condition, index]) =>
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
          const escapes = `a request that leaves out ${WHOSE[side]} ${path} escapes this deny rule (a missing attribute makes any condition on it false)`;
          const msg = isFlag(condition, conditionSide, side, path)
            ? `${escapes}. For a flag that is usually meant: leaving it out reads as not set, the ordinary case. If every check must say, ` +
              `declare ${path} required in the ${PART_OF_SIDE[side]} attribute schemas (a check without it is then refused under --schema-enforcement reject) ` +
              `and send false for the ordinary case; a deny rule on not_exists would deny every check that leaves it out`
            : `${escapes}; if every check that should be let through carries ${path}, deny the others with this rule next to it, with no allow rule between them ` +
              `(it denies every check without ${path}; otherwise declare ${path} required in the ${PART_OF_SIDE[side]} attribute schemas): ${closingRuleText(denying, side, path)}`;
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
