import type { Condition } from '../schemas/policy.js';
import type { DecisionRequest, ResolvedEntity } from './entity.js';
import type { CompiledRule, ConditionCompiler } from './compile.js';
import { compileLookup, MISSING, type Lookup } from './paths.js';

/** A JSON value that a Map can key on with the meaning of JSON equality (1 and "1" stay distinct). */
type Primitive = string | number | boolean | null;

const isPrimitive = (value: unknown): value is Primitive => typeof value !== 'object' || value === null;

/** Values a condition demands by equality (`==`/`equals`, or `in` with a list of primitives), if any. */
function demandedValues(condition: Condition): Primitive[] | undefined {
  if ((condition.operator === '==' || condition.operator === 'equals') && isPrimitive(condition.value)) {
    return [condition.value];
  }
  if (condition.operator === 'in' && Array.isArray(condition.value) && condition.value.every(isPrimitive)) {
    return condition.value as Primitive[];
  }
  return undefined;
}

type Side = 'principal' | 'resource';

/** One way to narrow the candidates: the rules that demand each value of one attribute path. */
interface KeyedRules {
  side: Side;
  lookup: Lookup;
  rulesByValue: Map<Primitive, CompiledRule[]>;
}

/** A rule with its source conditions, as the index builder needs it. */
export interface IndexableRule {
  compiled: CompiledRule;
  principal: readonly Condition[];
  resource: readonly Condition[];
}

/**
 * The rules of one action, arranged so that a request only looks at rules that can match it:
 * each rule that demands a value by equality is filed under that value; the rest are always
 * candidates. Candidates come back in (policy, rule) order, the order combining depends on.
 */
export class ActionRules {
  /** Every rule of the action with all its conditions, in (policy, rule) order: for questions that must see them all. */
  readonly all: readonly CompiledRule[];
  private readonly unkeyed: CompiledRule[] = [];
  private readonly keyed: KeyedRules[] = [];
  /** Scratch space for merging candidate lists; evaluation is synchronous, so it is never shared. */
  private readonly lists: (readonly CompiledRule[])[] = [];
  private readonly cursors: number[] = [];
  private listCount = 0;

  constructor(rules: readonly IndexableRule[], conditions: ConditionCompiler) {
    this.all = rules.map((rule) => rule.compiled);
    // File each rule under its most selective demanded path: the one whose values split the
    // rules into the most buckets, so a request's candidates are few.
    const distinctValues = new Map<string, Set<Primitive>>();
    const keyOf = (side: Side, condition: Condition) => `${side}\u0000${condition.path}`;
    for (const rule of rules) {
      for (const side of ['principal', 'resource'] as const) {
        for (const condition of rule[side]) {
          const values = demandedValues(condition);
          if (values === undefined) continue;
          const key = keyOf(side, condition);
          const seen = distinctValues.get(key) ?? new Set();
          for (const value of values) seen.add(value);
          distinctValues.set(key, seen);
        }
      }
    }
    const keyedByPath = new Map<string, KeyedRules>();
    for (const rule of rules) {
      let best: { side: Side; position: number; condition: Condition; values: Primitive[]; score: number } | undefined;
      for (const side of ['principal', 'resource'] as const) {
        rule[side].forEach((condition, position) => {
          const values = demandedValues(condition);
          if (values === undefined) return;
          const score = distinctValues.get(keyOf(side, condition))!.size;
          if (best === undefined || score > best.score) best = { side, position, condition, values, score };
        });
      }
      if (best === undefined) {
        this.unkeyed.push(rule.compiled);
        continue;
      }
      const key = keyOf(best.side, best.condition);
      let keyed = keyedByPath.get(key);
      if (keyed === undefined) {
        keyed = { side: best.side, lookup: compileLookup(best.condition.path), rulesByValue: new Map() };
        keyedByPath.set(key, keyed);
        this.keyed.push(keyed);
      }
      // Filed under a value, the rule need not test that condition again.
      const { side, position } = best;
      const rest = conditions.list(rule[side].filter((_, index) => index !== position));
      const filedRule: CompiledRule = { ...rule.compiled, [side]: rest };
      for (const value of new Set(best.values)) {
        const filed = keyed.rulesByValue.get(value);
        if (filed === undefined) keyed.rulesByValue.set(value, [filedRule]);
        else filed.push(filedRule);
      }
    }
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
