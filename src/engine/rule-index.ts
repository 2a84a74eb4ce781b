import type { Condition } from '../schemas/policy.js';
import type { DecisionRequest, ResolvedEntity } from './entity.js';
import type { CompiledRule, ConditionCompiler } from './compile.js';
import type { Comparison } from './condition-tree.js';
import { compileLookup, MISSING, type Lookup } from './paths.js';

/** A JSON value that a Map can key on with the meaning of JSON equality (1 and "1" stay distinct). */
type Primitive = string | number | boolean | null;

const isPrimitive = (value: unknown): value is Primitive => typeof value !== 'object' || value === null;

/** Values a condition demands by equality (`==`/`equals`, or `in` with a list of primitives), if any. */
function demandedValues(condition: IndexedCondition): Primitive[] | undefined {
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
type IndexedCondition = Pick<Condition, 'path' | 'operator' | 'value'>;

/** One way to narrow the candidates: the rules that demand each value of one attribute path. */
interface KeyedRules {
  side: Side;
  lookup: Lookup;
  rulesByValue: Map<Primitive, CompiledRule[]>;
}

/** A rule with its source conditions, as the index builder needs it. */
export interface IndexableRule<Source extends IndexedCondition = Condition> {
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

/**
 * For each rule, its most selective condition on one of `sides` that demands values by equality:
 * the one whose path's values split the rules into the most buckets, so a request's candidates
 * are few. Undefined for a rule with no such condition.
 */
function filingKeys(rules: readonly IndexableRule<IndexedCondition>[], sides: readonly Side[]): (FilingKey | undefined)[] {
  const distinctValues = new Map<string, Set<Primitive>>();
  const keyOf = (side: Side, path: string) => `${side}\u0000${path}`;
  for (const rule of rules) {
    for (const side of sides) {
      for (const condition of rule[side]) {
        const values = demandedValues(condition);
        if (values === undefined) continue;
        const key = keyOf(side, condition.path);
        const seen = distinctValues.get(key) ?? new Set();
        for (const value of values) seen.add(value);
        distinctValues.set(key, seen);
      }
    }
  }
  return rules.map((rule) => {
    let best: (FilingKey & { score: number }) | undefined;
    for (const side of sides) {
      rule[side].forEach((condition, position) => {
        const values = demandedValues(condition);
        if (values === undefined) return;
        const score = distinctValues.get(keyOf(side, condition.path))!.size;
        if (best === undefined || score > best.score) best = { side, position, path: condition.path, values, score };
      });
    }
    return best;
  });
}

/**
 * Rules arranged so that a request only looks at those that can match it: each rule that demands a
 * value by equality is filed under that value; the rest are always candidates. Candidates come
 * back in (policy, rule) order, the order combining depends on.
 */
class CandidateRules<Source extends IndexedCondition> {
  private readonly unkeyed: CompiledRule[] = [];
  private readonly keyed: KeyedRules[] = [];
  /** Scratch space for merging candidate lists; evaluation and planning are synchronous, so it is never shared. */
  private readonly lists: (readonly CompiledRule[])[] = [];
  private readonly cursors: number[] = [];
  private listCount = 0;

  /** `filed` is the rule as filed under `key`: it need not test that condition again. */
  constructor(rules: readonly IndexableRule<Source>[], sides: readonly Side[], filed: (rule: IndexableRule<Source>, key: FilingKey) => CompiledRule) {
    const keyedByPath = new Map<string, KeyedRules>();
    const keys = filingKeys(rules, sides);
    rules.forEach((rule, index) => {
      const key = keys[index];
      if (key === undefined) {
        this.unkeyed.push(rule.compiled);
        return;
      }
      const pathKey = `${key.side}\u0000${key.path}`;
      let keyed = keyedByPath.get(pathKey);
      if (keyed === undefined) {
        keyed = { side: key.side, lookup: compileLookup(key.path), rulesByValue: new Map() };
        keyedByPath.set(pathKey, keyed);
        this.keyed.push(keyed);
      }
      const filedRule = filed(rule, key);
      for (const value of new Set(key.values)) {
        const list = keyed.rulesByValue.get(value);
        if (list === undefined) keyed.rulesByValue.set(value, [filedRule]);
        else list.push(filedRule);
      }
    });
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
      const value = keyed.lookup(entity);
      if (value === MISSING || !isPrimitive(value)) continue;
      const filed = keyed.rulesByValue.get(value);
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
  /** Every rule of the action with all its conditions, in (policy, rule) order: for questions that must see them all. */
  readonly all: readonly CompiledRule[];
  private readonly forDecisions: CandidateRules<Condition>;
  private forPlans: CandidateRules<Comparison> | undefined;

  constructor(rules: readonly IndexableRule[], conditions: ConditionCompiler) {
    this.all = rules.map((rule) => rule.compiled);
    this.forDecisions = new CandidateRules(rules, ['principal', 'resource'], (rule, { side, position }) => ({
      ...rule.compiled,
      [side]: conditions.list(rule[side].filter((_, index) => index !== position)),
    }));
  }

  /** The rules that can match `request`, for `evaluate`: see CandidateRules.candidates. */
  candidates(request: DecisionRequest): CandidateRules<Condition> {
    return this.forDecisions.candidates(request);
  }

  /**
   * The rules whose principal conditions can hold for `request.principal`, whatever the resource,
   * for `plan`; each with all its conditions. Built on first use: most snapshots are never planned on.
   */
  planCandidates(request: DecisionRequest): CandidateRules<Comparison> {
    this.forPlans ??= new CandidateRules(
      this.all.map((compiled) => ({ compiled, principal: compiled.principal.map((condition) => condition.comparison), resource: [] })),
      ['principal'],
      (rule) => rule.compiled,
    );
    return this.forPlans.candidates(request);
  }
}
