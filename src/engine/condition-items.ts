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

/**
 * A reference to a condition set with the set's items; none where no such set is in reach (a write
 * refuses that, but a policy a shared set was taken from may change since): it is then undecidable,
 * and fails closed (see ConditionCompiler.set).
 */
export interface ResolvedSet {
  set: string;
  from?: string;
  items?: readonly SetItem[];
}

/** An item as the engine compiles it: its references to sets, its groups' included, resolved. */
export type CompilableItem = SetItem | ResolvedSet;

/** The items of set `name` of `policy`, if it defines one (an own property: a set may be named `constructor`). */
export function setItems(policy: Pick<Policy, 'condition_sets'>, name: string): readonly SetItem[] | undefined {
  const sets = policy.condition_sets;
  return sets !== undefined && Object.hasOwn(sets, name) ? sets[name] : undefined;
}

/** The items of the set a reference names, if it is in reach: a policy's own sets, and with `from` another policy's. */
export type SetsInReach = (reference: ConditionSetReference) => readonly SetItem[] | undefined;

/** The sets in reach of `policy` alone: its own (a reference `from` its own name included). */
export const ownSets =
  (policy: Pick<Policy, 'name' | 'condition_sets'>): SetsInReach =>
  (reference) =>
    reference.from === undefined || reference.from === policy.name ? setItems(policy, reference.set) : undefined;

/**
 * The sets in reach of each of `policies`: its own, and those of the others by `from`. A shadow
 * standing in for a live policy not among them (a shadow set's) lends its sets under that name.
 */
export function sharedSets(policies: readonly Pick<Policy, 'name' | 'condition_sets' | 'shadow'>[]): (policy: Pick<Policy, 'name' | 'condition_sets'>) => SetsInReach {
  const byName = new Map(policies.map((policy) => [policy.name, policy]));
  for (const policy of policies) if (typeof policy.shadow === 'string' && !byName.has(policy.shadow)) byName.set(policy.shadow, policy);
  return (policy) => (reference) => {
    const owner = reference.from === undefined || reference.from === policy.name ? policy : byName.get(reference.from);
    return owner === undefined ? undefined : setItems(owner, reference.set);
  };
}

/** `items` with each reference to a set, in a group's alternatives too, given the set's items as `sets` finds them (`items` itself when it holds none). */
export function resolveSets(sets: SetsInReach, items: readonly ConditionItem[]): readonly CompilableItem[] {
  if (!items.some(refersToSets)) return items as readonly SetItem[];
  return items.map((item) => withSetReferences(item, (reference): ResolvedSet => ({ ...reference, items: sets(reference) })));
}

/** `item` as written: each reference to a set, in a group too, by its names alone (resolution adds the set's items). */
export const writtenItem = (item: CompilableItem): ConditionItem =>
  withSetReferences(item, ({ set, from }) => (from === undefined ? { set } : { set, from })) as ConditionItem;

/** `item` with each reference to a set, in a group's alternatives too, as `replace` makes it. */
function withSetReferences(item: ConditionItem | CompilableItem, replace: (reference: ConditionSetReference) => ConditionSetReference): CompilableItem {
  if (isSetReference(item)) return replace(item);
  if (!isGroup(item)) return item;
  const { kind, alternatives } = groupParts(item);
  return { [kind]: alternatives.map((alternative) => alternative.map((each) => (isSetReference(each) ? replace(each) : each))) } as ConditionGroup;
}

const refersToSets = (item: ConditionItem): boolean =>
  isSetReference(item) || (isGroup(item) && groupParts(item).alternatives.some((alternative) => alternative.some(isSetReference)));

/** The sets `items` refer to (in groups too): each's name, where the reference stands below the list, and the policy it names with `from`. */
export function* setsReferred(items: readonly ConditionItem[]): Generator<[string, (string | number)[], string | undefined]> {
  for (const [index, item] of items.entries()) {
    if (isSetReference(item)) yield [item.set, [index], item.from];
    else if (isGroup(item)) {
      const { kind, alternatives } = groupParts(item);
      for (const [alternative, each] of alternatives.entries()) {
        for (const [position, part] of each.entries()) if (isSetReference(part)) yield [part.set, [index, kind, alternative, position], part.from];
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
export function conditionCount(items: readonly ConditionItem[], setSize: (reference: ConditionSetReference) => number = () => 0): number {
  let count = 0;
  for (const item of items) {
    if (isSetReference(item)) count += setSize(item);
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

/** The conditions of `items` in order, those in groups included, and those of the sets they refer to (in groups too) that `sets` finds. */
export function flatConditions(items: readonly ConditionItem[], sets: SetsInReach = () => undefined): Condition[] {
  return items.flatMap((item): Condition[] => {
    if (isSetReference(item)) return flatConditions(sets(item) ?? []);
    if (!isGroup(item)) return [item];
    return groupParts(item).alternatives.flatMap((alternative) => flatConditions(alternative, sets));
  });
}
