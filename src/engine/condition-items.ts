import type { AlternativeItem, Condition, ConditionGroup, ConditionItem, ConditionSetReference, GroupKind, Policy, SetItem } from '../schemas/policy.js';

// The items of a rule's lists of conditions: conditions, groups of alternative lists (one level: an
// alternative holds conditions and references to sets, never a group), and references to the
// policy's condition sets (whose items are conditions and groups, never references).

type AnyItem = ConditionItem | CompilableItem;

export const isGroup = (item: AnyItem): item is ConditionGroup => 'any_of' in item || 'none_of' in item;

export const isSetReference = (item: AnyItem): item is ConditionSetReference | ResolvedSet => 'set' in item;

/** A group's kind and alternatives, whichever kind it is. */
export function groupParts(group: ConditionGroup): { kind: GroupKind; alternatives: AlternativeItem[][] } {
  return 'any_of' in group ? { kind: 'any_of', alternatives: group.any_of } : { kind: 'none_of', alternatives: group.none_of };
}

/** A reference to a condition set with the set's items; none where the policy defines no such set (validation refuses that, and it never holds). */
export interface ResolvedSet {
  set: string;
  items?: readonly SetItem[];
}

/** An item as the engine compiles it: its references to sets, its groups' included, resolved. */
export type CompilableItem = SetItem | ResolvedSet;

/** The items of set `name` of `policy`, if it defines one (an own property: a set may be named `constructor`). */
export function setItems(policy: Pick<Policy, 'condition_sets'>, name: string): readonly SetItem[] | undefined {
  const sets = policy.condition_sets;
  return sets !== undefined && Object.hasOwn(sets, name) ? sets[name] : undefined;
}

/** `items` with each reference to a set of `policy`, in a group's alternatives too, given the set's items (`items` itself when it holds none). */
export function resolveSets(policy: Pick<Policy, 'condition_sets'>, items: readonly ConditionItem[]): readonly CompilableItem[] {
  if (!items.some(refersToSets)) return items as readonly SetItem[];
  const resolved = (reference: ConditionSetReference): ResolvedSet => ({ set: reference.set, items: setItems(policy, reference.set) });
  return items.map((item) => {
    if (isSetReference(item)) return resolved(item);
    if (!isGroup(item)) return item;
    const { kind, alternatives } = groupParts(item);
    return { [kind]: alternatives.map((alternative) => alternative.map((each) => (isSetReference(each) ? resolved(each) : each))) } as ConditionGroup;
  });
}

/** `item` as written: each reference to a set, in a group too, by its name alone (resolution adds the set's items). */
export function writtenItem(item: CompilableItem): ConditionItem {
  if (isSetReference(item)) return { set: item.set };
  if (!isGroup(item)) return item;
  const { kind, alternatives } = groupParts(item);
  return { [kind]: alternatives.map((alternative) => alternative.map((each) => (isSetReference(each) ? { set: each.set } : each))) } as ConditionGroup;
}

const refersToSets = (item: ConditionItem): boolean =>
  isSetReference(item) || (isGroup(item) && groupParts(item).alternatives.some((alternative) => alternative.some(isSetReference)));

/** The names of the sets `items` refer to, in groups too. */
export function* setsReferred(items: readonly ConditionItem[]): Generator<[string, (string | number)[]]> {
  for (const [index, item] of items.entries()) {
    if (isSetReference(item)) yield [item.set, [index, 'set']];
    else if (isGroup(item)) {
      const { kind, alternatives } = groupParts(item);
      for (const [alternative, each] of alternatives.entries()) {
        for (const [position, part] of each.entries()) if (isSetReference(part)) yield [part.set, [index, kind, alternative, position, 'set']];
      }
    }
  }
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
      for (const [position, condition] of conditions.entries()) if (!isSetReference(condition)) yield [condition, [index, kind, alternative, position]];
    }
  }
}

/** How many conditions `items` hold, those in groups included, and for a reference to a set (in a group too), `setSize` of it. */
export function conditionCount(items: readonly ConditionItem[], setSize: (name: string) => number = () => 0): number {
  let count = 0;
  for (const item of items) {
    if (isSetReference(item)) count += setSize(item.set);
    else if (isGroup(item)) count += groupParts(item).alternatives.reduce((sum, alternative) => sum + conditionCount(alternative, setSize), 0);
    else count += 1;
  }
  return count;
}

/** `item` with each of its conditions replaced by `replace`'s answer for it (a reference to a set, in a group too, as it is). */
export function mapConditions<Replaced>(
  item: ConditionItem,
  replace: (condition: Condition) => Replaced,
): Replaced | ConditionSetReference | { [kind in GroupKind]?: (Replaced | ConditionSetReference)[][] } {
  if (isSetReference(item)) return item;
  if (!isGroup(item)) return replace(item);
  const { kind, alternatives } = groupParts(item);
  return { [kind]: alternatives.map((alternative) => alternative.map((each) => (isSetReference(each) ? each : replace(each)))) };
}

/** The conditions of `items` in order, those in groups included, and those of the sets of `policy` they refer to (in groups too). */
export function flatConditions(items: readonly ConditionItem[], policy: Pick<Policy, 'condition_sets'> = {}): Condition[] {
  return items.flatMap((item): Condition[] => {
    if (isSetReference(item)) return flatConditions(setItems(policy, item.set) ?? []);
    if (!isGroup(item)) return [item];
    return groupParts(item).alternatives.flatMap((alternative) => flatConditions(alternative, policy));
  });
}
