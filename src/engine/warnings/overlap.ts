import type { Location, ValidationIssue } from '../../schemas/errors.js';
import { ANY_ACTION, coversAction } from '../actions.js';
import { append, Checking, type CompiledRuleConditions, SIDES, conditionKey, conditionsAmong, describe, implied } from './shared.js';

// Rules and conditions that repeat others: duplicate conditions, and rules that never decide because
// an earlier rule of their policy matches whenever they do (shadowing).

export function duplicates({ sides }: CompiledRuleConditions, at: Location): ValidationIssue[] {
  return SIDES.flatMap((side) => {
    const seen = new Set<string>();
    return conditionsAmong(sides[side]).flatMap(([condition, index]) => {
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
export class RulesByAction {
  private readonly rules = new Map<string, number[]>();

  add(rule: CompiledRuleConditions, index: number): void {
    for (const action of rule.actions) append(this.rules, action, index);
  }

  /** The indexes of the rules added so far that share an action with `actions` (a rule of every action shares them all), in increasing order. */
  sharing(actions: ReadonlySet<string>, checking: Checking): number[] {
    const lists = actions.has(ANY_ACTION) ? [...this.rules.values()] : [...actions, ANY_ACTION].map((action) => this.rules.get(action) ?? []);
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
export function shadowing(rules: readonly CompiledRuleConditions[], index: number, earlierRules: RulesByAction, at: Location, checking: Checking): ValidationIssue[] {
  const later = rules[index]!;
  for (const earlierIndex of earlierRules.sharing(later.actions, checking)) {
    const earlier = rules[earlierIndex]!;
    if (!covers(earlier, later, checking)) continue;
    checking.step(later.rule.actions.length);
    const shared = earlier.actions.has(ANY_ACTION) ? later.rule.actions : later.rule.actions.filter((action) => coversAction(earlier.rule.actions, action));
    const actions = shared.length === later.rule.actions.length ? '' : ` for ${shared.map((action) => `'${action}'`).join(', ')}`;
    const effect =
      earlier.rule.effect === later.rule.effect
        ? `it is shadowed by rule '${earlier.rule.name}' above, of the same effect`
        : `rule '${earlier.rule.name}' above matches whenever it does and ${earlier.rule.effect}s`;
    return [{ loc: at, msg: `this rule never decides${actions}: ${effect}`, type: 'shadowed' }];
  }
  return [];
}
