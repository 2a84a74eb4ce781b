import type { Condition, ConditionGroup, ConditionItem, ConditionSetReference, GroupKind, Policy, SetItem } from '../schemas/policy.js';

// The items of a rule's lists of conditions: conditions, groups of alternative lists of conditions
// (one level: an alternative holds conditions only), and references to the policy's condition sets
// (whose items are conditions and groups, never references).

type AnyItem = ConditionItem | CompilableItem;

export const isGroup = (item: AnyItem): item is ConditionGroup => 'any_of' in item || 'none_of' in item;

export const isSetReference = (item: AnyItem): item is ConditionSetReference | ResolvedSet => 'set' in item;

/** A group's kind and alternatives, whichever kind it is. */
export function groupParts(group: ConditionGroup): { kind: GroupKind; alternatives: Condition[][] } {
  return 'any_of' in group ? { kind: 'any_of', alternatives: group.any_of } : { kind: 'none_of', alternatives: group.none_of };
}

/** A reference to a condition set with the set's items; undefined where the policy defines no such set (validation refuses that). */
export interface ResolvedSet {
  set: string;
  items: readonly SetItem[] | undefined;
}

/** An item as the engine compiles it: its references to sets resolved. */
export type CompilableItem = SetItem | ResolvedSet;

/** The items of set `name` of `policy`, if it defines one (an own property: a set may be named `constructor`). */
export function setItems(policy: Pick<Policy, 'condition_sets'>, name: string): readonly SetItem[] | undefined {
  const sets = policy.condition_sets;
  return sets !== undefined && Object.hasOwn(sets, name) ? sets[name] : undefined;
}

/** `items` with each reference to a set of `policy` given the set's items (`items` itself when it holds none). */
export function resolveSets(policy: Pick<Policy, 'condition_sets'>, items: readonly ConditionItem[]): readonly CompilableItem[] {
  if (!items.some(isSetReference)) return items as readonly SetItem[];
  return items.map((item) => (isSetReference(item) ? { set: item.set, items: setItems(policy, item.set) } : item));
}

/**
 * Each condition written in `items` (those in groups included, not those of the sets they refer to),
 * with where it stands below the list: `[index]`, or `[index, kind, alternative, index]`.
 */
export function* eachCondition(items: readonly ConditionItem[]): Generator<[Condition, (string | number)[]]> {
  for (const [index, item] of items.entries()) {
    if (isSetReference(item)) continue;
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

/** How many conditions `items` hold, those in groups included, and for a reference to a set, `setSize` of it. */
export function conditionCount(items: readonly ConditionItem[], setSize: (name: string) => number = () => 0): number {
  let count = 0;
  for (const item of items) {
    if (isSetReference(item)) count += setSize(item.set);
    else count += isGroup(item) ? groupParts(item).alternatives.reduce((sum, conditions) => sum + conditions.length, 0) : 1;
  }
  return count;
}

/** `item` with each of its conditions replaced by `replace`'s answer for it (a reference to a set as it is). */
export function mapConditions<Replaced>(item: ConditionItem, replace: (condition: Condition) => Replaced): Replaced | ConditionSetReference | { [kind in GroupKind]?: Replaced[][] } {
  if (isSetReference(item)) return item;
  if (!isGroup(item)) return replace(item);
  const { kind, alternatives } = groupParts(item);
  return { [kind]: alternatives.map((conditions) => conditions.map(replace)) };
}

/** The conditions of `items` in order, those in groups included, and those of the sets of `policy` they refer to. */
export function flatConditions(items: readonly ConditionItem[], policy: Pick<Policy, 'condition_sets'> = {}): Condition[] {
  return items.flatMap((item) => (isSetReference(item) ? flatConditions(setItems(policy, item.set) ?? []) : [...eachCondition([item])].map(([condition]) => condition)));
}
