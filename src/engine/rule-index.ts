import type { CompilableItem } from './condition-items.js';
import type { DecisionRequest, ResolvedEntity } from './entity.js';
import type { CompiledRule, ConditionLists } from './compiled-rule.js';
import type { Comparison } from './condition-tree.js';
import { compileLookup, MISSING, type Lookup } from './paths.js';

/** A JSON value that a Map can key on with the meaning of JSON equality (1 and "1" stay distinct). */
type Primitive = string | number | boolean | null;

const isPrimitive = (value: unknown): value is Primitive => typeof value !== 'object' || value === null;

/** Values a condition demands by equality (`==`/`equals`, or `in` with a list of primitives), if any: none for a reference, whose value each request brings, nor for a group. */
function demandedValues(condition: IndexedCondition): Primitive[] | undefined {
  if (condition.value === undefined) return undefined;
  if ((condition.operator === '==' || condition.operator === 'equals') && isPrimitive(condition.value)) {
    return [condition.value];
  }
  if (condition.operator === 'in' && Array.isArray(condition.value) && condition.value.every(isPrimitive)) {
    return condition.value as Primitive[];
  }
  return undefined;
}

type Side = 'principal' | 'resource';

/** What the index reads of a condition: a policy's Condition, or a compiled condition's Comparison. */
type IndexedCondition = Pick<Comparison, 'path' | 'operator' | 'value'>;

/**
 * One way to narrow the candidates: the rules that demand each value of one attribute path. A
 * derived index shares `rulesByValue` with the one it came from and keeps its own changes in
 * `changed` (an empty list: no rule left for that value); see CandidateRules.with.
 */
interface KeyedRules {
  side: Side;
  path: string;
  lookup: Lookup;
  rulesByValue: ReadonlyMap<Primitive, readonly CompiledRule[]>;
  changed: ReadonlyMap<Primitive, readonly CompiledRule[]> | undefined;
}

/** A rule with its source conditions, as the index builder needs it. */
export interface IndexableRule<Source extends IndexedCondition | CompilableItem = CompilableItem> {
  compiled: CompiledRule;
  principal: readonly Source[];
  resource: readonly Source[];
}

/** The condition a rule is filed under: the one at `position` on `side`, which demands `values`. */
interface FilingKey {
  side: Side;
  position: number;
  path: string;
  values: Primitive[];
}

/** The JSON text of the (side, path) pair: one per pair, whatever characters the path holds. */
const pathKeyOf = (side: Side, path: string) => JSON.stringify([side, path]);

/** The conditions of `rule` on `side` with their positions: groups demand no one value, and are passed over. */
function* conditionsOn(rule: IndexableRule<IndexedCondition | CompilableItem>, side: Side): Generator<[IndexedCondition, number]> {
  let position = 0;
  for (const item of rule[side]) {
    if ('operator' in item) yield [item, position];
    position++;
  }
}

/**
 * A rule's most selective condition on one of `sides` that demands values by equality: the one
 * whose path scores highest (`score`: how many buckets its values split the rules into, so a
 * request's candidates are few; the first such condition on a tie). Undefined for a rule with no
 * such condition.
 */
function filingKey(rule: IndexableRule<IndexedCondition | CompilableItem>, sides: readonly Side[], score: (side: Side, path: string) => number): FilingKey | undefined {
  let best: (FilingKey & { score: number }) | undefined;
  for (const side of sides) {
    for (const [condition, position] of conditionsOn(rule, side)) {
      const values = demandedValues(condition);
      if (values === undefined) continue;
      const scored = score(side, condition.path);
      if (best === undefined || scored > best.score) best = { side, position, path: condition.path, values, score: scored };
    }
  }
  return best;
}

/** For each rule, its filing key, scored by the distinct values all `rules` demand of each path. */
function filingKeys(rules: readonly IndexableRule<IndexedCondition | CompilableItem>[], sides: readonly Side[]): (FilingKey | undefined)[] {
  const distinctValues = new Map<string, Set<Primitive>>();
  for (const rule of rules) {
    for (const side of sides) {
      for (const [condition] of conditionsOn(rule, side)) {
        const values = demandedValues(condition);
        if (values === undefined) continue;
        const key = pathKeyOf(side, condition.path);
        const seen = distinctValues.get(key) ?? new Set();
        for (const value of values) seen.add(value);
        distinctValues.set(key, seen);
      }
    }
  }
  return rules.map((rule) => filingKey(rule, sides, (side, path) => distinctValues.get(pathKeyOf(side, path))!.size));
}

const NO_ORDERS: ReadonlySet<number> = new Set();

/**
 * `rules` (in order) without those whose order is in `removed`, and with `added` (in order) put
 * in their places, in one pass: not one insertion each, which moved a hundred thousand rules a
 * thousand times when a policy of a thousand rules was written among them.
 */
function mergeByOrder(rules: readonly CompiledRule[], removed: ReadonlySet<number>, added: readonly CompiledRule[]): CompiledRule[] {
  const merged: CompiledRule[] = [];
  let next = 0;
  for (const rule of rules) {
    if (removed.has(rule.order)) continue;
    while (next < added.length && added[next]!.order < rule.order) merged.push(added[next++]!);
    merged.push(rule);
  }
  while (next < added.length) merged.push(added[next++]!);
  return merged;
}

/**
 * A keyed path's changes are folded into a fresh map once they outnumber about the square root of
 * its values: each derived index copies the changes, each fold copies the map, and this balances
 * the two (about 100 of each at 10,000 values).
 */
const foldsChanges = (keyed: KeyedRules, changed: ReadonlyMap<Primitive, unknown>) => changed.size * changed.size > keyed.rulesByValue.size + 16;

/**
 * Rules arranged so that a request only looks at those that can match it: each rule that demands a
 * value by equality is filed under that value; the rest are always candidates. Candidates come
 * back in (policy, rule) order, the order combining depends on.
 */
class CandidateRules<Source extends IndexedCondition | CompilableItem> {
  /** Scratch space for merging candidate lists; evaluation and planning are synchronous, so it is never shared. */
  private readonly lists: (readonly CompiledRule[])[] = [];
  private readonly cursors: number[] = [];
  private listCount = 0;

  private constructor(
    private readonly unkeyed: readonly CompiledRule[],
    private readonly keyed: readonly KeyedRules[],
    private readonly sides: readonly Side[],
    /** The rule as filed under `key`: it need not test that condition again. */
    private readonly filed: (rule: IndexableRule<Source>, key: FilingKey) => CompiledRule,
  ) {}

  static build<Source extends IndexedCondition | CompilableItem>(
    rules: readonly IndexableRule<Source>[],
    sides: readonly Side[],
    filed: (rule: IndexableRule<Source>, key: FilingKey) => CompiledRule,
  ): CandidateRules<Source> {
    const unkeyed: CompiledRule[] = [];
    const keyedByPath = new Map<string, Omit<KeyedRules, 'rulesByValue'> & { rulesByValue: Map<Primitive, CompiledRule[]> }>();
    const keys = filingKeys(rules, sides);
    rules.forEach((rule, index) => {
      const key = keys[index];
      if (key === undefined) {
        unkeyed.push(rule.compiled);
        return;
      }
      const pathKey = pathKeyOf(key.side, key.path);
      let keyed = keyedByPath.get(pathKey);
      if (keyed === undefined) {
        keyed = { side: key.side, path: key.path, lookup: compileLookup(key.path), rulesByValue: new Map(), changed: undefined };
        keyedByPath.set(pathKey, keyed);
      }
      const filedRule = filed(rule, key);
      for (const value of new Set(key.values)) {
        const list = keyed.rulesByValue.get(value);
        if (list === undefined) keyed.rulesByValue.set(value, [filedRule]);
        else list.push(filedRule);
      }
    });
    return new CandidateRules(unkeyed, [...keyedByPath.values()], sides, filed);
  }

  /**
   * These rules without `removed` (found by their order) and with `added`, as a new index that
   * shares every untouched list with this one, which does not change. An added rule is filed
   * under the equality condition whose path already splits the rules into the most buckets.
   */
  with(removed: readonly IndexableRule<Source>[], added: readonly IndexableRule<Source>[]): CandidateRules<Source> {
    const removedOrders = new Set(removed.map((rule) => rule.compiled.order));
    const keyedByPath = new Map(this.keyed.map((keyed) => [pathKeyOf(keyed.side, keyed.path), keyed]));
    /** The new list of each touched value, per keyed path. */
    const touched = new Map<string, Map<Primitive, CompiledRule[]>>();
    /** A touched list: copied once, without the removed rules (each list is filtered once, not once per rule). */
    const listOf = (keyed: KeyedRules, value: Primitive): CompiledRule[] => {
      const pathKey = pathKeyOf(keyed.side, keyed.path);
      let lists = touched.get(pathKey);
      if (lists === undefined) touched.set(pathKey, (lists = new Map()));
      let list = lists.get(value);
      if (list === undefined) lists.set(value, (list = (keyed.changed?.get(value) ?? keyed.rulesByValue.get(value) ?? []).filter((filed) => !removedOrders.has(filed.order))));
      return list;
    };
    for (const rule of removed) {
      for (const side of this.sides) {
        for (const [condition] of conditionsOn(rule, side)) {
          const keyed = keyedByPath.get(pathKeyOf(side, condition.path));
          if (keyed === undefined) continue;
          for (const value of demandedValues(condition) ?? []) listOf(keyed, value);
        }
      }
    }
    /** The rules added to each touched list (in order, as `added` is), merged into it once all are known. */
    const additions = new Map<CompiledRule[], CompiledRule[]>();
    const addedUnkeyed: CompiledRule[] = [];
    for (const rule of added) {
      const key = filingKey(rule, this.sides, (side, path) => keyedByPath.get(pathKeyOf(side, path))?.rulesByValue.size ?? 0);
      if (key === undefined) {
        addedUnkeyed.push(rule.compiled);
        continue;
      }
      const pathKey = pathKeyOf(key.side, key.path);
      let keyed = keyedByPath.get(pathKey);
      if (keyed === undefined) {
        keyed = { side: key.side, path: key.path, lookup: compileLookup(key.path), rulesByValue: new Map(), changed: undefined };
        keyedByPath.set(pathKey, keyed);
      }
      const filedRule = this.filed(rule, key);
      for (const value of new Set(key.values)) {
        const list = listOf(keyed, value);
        const more = additions.get(list);
        if (more === undefined) additions.set(list, [filedRule]);
        else more.push(filedRule);
      }
    }
    for (const lists of touched.values()) {
      for (const [value, list] of lists) {
        const more = additions.get(list);
        if (more !== undefined) lists.set(value, mergeByOrder(list, NO_ORDERS, more));
      }
    }
    const keyed = [...keyedByPath.values()].flatMap((keyed) => {
      const lists = touched.get(pathKeyOf(keyed.side, keyed.path));
      if (lists === undefined) return [keyed];
      const changed = new Map(keyed.changed);
      for (const [value, list] of lists) changed.set(value, list);
      if (!foldsChanges(keyed, changed)) return [{ ...keyed, changed }];
      const rulesByValue = new Map(keyed.rulesByValue);
      for (const [value, list] of changed) {
        if (list.length === 0) rulesByValue.delete(value);
        else rulesByValue.set(value, list);
      }
      return rulesByValue.size === 0 ? [] : [{ ...keyed, rulesByValue, changed: undefined }];
    });
    const unkeyed = mergeByOrder(this.unkeyed, removedOrders, addedUnkeyed);
    return new CandidateRules(unkeyed, keyed, this.sides, this.filed);
  }

  /**
   * Starts a pass over the candidate rules for `request`; `next()` then yields them in (policy,
   * rule) order. Allocation-free: the pass lives in this object, which is safe because evaluation
   * is synchronous and never nested.
   */
  candidates(request: DecisionRequest): this {
    const lists = this.lists;
    let count = 0;
    if (this.unkeyed.length > 0) lists[count++] = this.unkeyed;
    for (const keyed of this.keyed) {
      const entity: ResolvedEntity = keyed.side === 'principal' ? request.principal : request.resource;
      const value = keyed.lookup(entity, request);
      if (value === MISSING || !isPrimitive(value)) continue;
      const filed = keyed.changed?.get(value) ?? keyed.rulesByValue.get(value);
      if (filed !== undefined) lists[count++] = filed;
    }
    for (let i = 0; i < count; i++) this.cursors[i] = 0;
    this.listCount = count;
    return this;
  }

  next(): CompiledRule | undefined {
    const { lists, cursors, listCount } = this;
    if (listCount === 1) return lists[0]![cursors[0]!++];
    let next = -1;
    let nextOrder = Infinity;
    for (let i = 0; i < listCount; i++) {
      const rule = lists[i]![cursors[i]!];
      if (rule !== undefined && rule.order < nextOrder) {
        next = i;
        nextOrder = rule.order;
      }
    }
    if (next === -1) return undefined;
    return lists[next]![cursors[next]!++];
  }
}

/** The rules of one action, indexed for evaluation (by either side) and for planning (by the principal, built on the first plan). */
export class ActionRules {
  private forPlans: CandidateRules<Comparison> | undefined;

  private constructor(
    /** Every rule of the action with all its conditions, in (policy, rule) order: for questions that must see them all. */
    readonly all: readonly CompiledRule[],
    private readonly forDecisions: CandidateRules<CompilableItem>,
  ) {}

  static build(rules: readonly IndexableRule[], conditions: ConditionLists): ActionRules {
    const forDecisions = CandidateRules.build(rules, ['principal', 'resource'], (rule: IndexableRule, { side, position }) => ({
      ...rule.compiled,
      [side]: conditions.list(rule[side].filter((_, index) => index !== position), rule.compiled.denies),
    }));
    return new ActionRules(
      rules.map((rule) => rule.compiled),
      forDecisions,
    );
  }

  /**
   * The rules of the action without `removed` and with `added` (see CandidateRules.with), or
   * undefined when none is left. This object, which a reader may hold, does not change.
   */
  with(removed: readonly IndexableRule[], added: readonly IndexableRule[]): ActionRules | undefined {
    const all = mergeByOrder(this.all, new Set(removed.map((rule) => rule.compiled.order)), added.map((rule) => rule.compiled));
    return all.length === 0 ? undefined : new ActionRules(all, this.forDecisions.with(removed, added));
  }

  /** The rules that can match `request`, for `evaluate`: see CandidateRules.candidates. */
  candidates(request: DecisionRequest): CandidateRules<CompilableItem> {
    return this.forDecisions.candidates(request);
  }

  /**
   * The rules whose principal conditions can hold for `request.principal`, whatever the resource,
   * for `plan`; each with all its conditions. Built on first use: most snapshots are never planned on.
   */
  planCandidates(request: DecisionRequest): CandidateRules<Comparison> {
    this.forPlans ??= CandidateRules.build(
      // A group demands no one value: it never files a rule.
      this.all.map((compiled) => ({ compiled, principal: compiled.principal.flatMap((condition) => condition.comparison ?? []), resource: [] })),
      ['principal'],
      (rule) => rule.compiled,
    );
    return this.forPlans.candidates(request);
  }
}
