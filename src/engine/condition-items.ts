import type { Condition, ConditionGroup, ConditionItem, GroupKind } from '../schemas/policy.js';

// The items of a rule's lists of conditions: conditions, and groups of alternative lists of
// conditions (one level: an alternative holds conditions only).

export const isGroup = (item: ConditionItem): item is ConditionGroup => 'any_of' in item || 'none_of' in item;

/** A group's kind and alternatives, whichever kind it is. */
export function groupParts(group: ConditionGroup): { kind: GroupKind; alternatives: Condition[][] } {
  return 'any_of' in group ? { kind: 'any_of', alternatives: group.any_of } : { kind: 'none_of', alternatives: group.none_of };
}

/** Each condition of `items`, those in groups included, with where it stands below the list: `[index]`, or `[index, kind, alternative, index]`. */
export function* eachCondition(items: readonly ConditionItem[]): Generator<[Condition, (string | number)[]]> {
  for (const [index, item] of items.entries()) {
    if (!isGroup(item)) {
      yield [item, [index]];
      continue;
    }
    const { kind, alternatives } = groupParts(item);
    for (const [alternative, conditions] of alternatives.entries()) {
      for (const [position, condition] of conditions.entries()) yield [condition, [index, kind, alternative, position]];
    }
  }
}

/** How many conditions `items` hold, those in groups included. */
export function conditionCount(items: readonly ConditionItem[]): number {
  let count = 0;
  for (const item of items) count += isGroup(item) ? groupParts(item).alternatives.reduce((sum, conditions) => sum + conditions.length, 0) : 1;
  return count;
}

/** `item` with each of its conditions replaced by `replace`'s answer for it. */
export function mapConditions<Replaced>(item: ConditionItem, replace: (condition: Condition) => Replaced): Replaced | { [kind in GroupKind]?: Replaced[][] } {
  if (!isGroup(item)) return replace(item);
  const { kind, alternatives } = groupParts(item);
  return { [kind]: alternatives.map((conditions) => conditions.map(replace)) };
}

/** The conditions of `items`, those in groups included, in order. */
export const flatConditions = (items: readonly ConditionItem[]): Condition[] => [...eachCondition(items)].map(([condition]) => condition);
