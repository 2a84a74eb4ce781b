import type { Condition, Policy } from '../schemas/policy.js';
import type { Decision, DecisionRequest, ResolvedEntity } from './entity.js';
import { ALLOWED_BY_DEFAULT, DENIED_BY_DEFAULT, DENIED_WITHOUT_POLICIES, ruleDecision } from './decisions.js';
import { CANONICAL_OPERATOR, OPERATOR_DEFINITIONS, type Predicate } from './operators.js';
import type { Comparison } from './condition-tree.js';
import { compileLookup, MISSING, type Lookup } from './paths.js';
import { ActionRules, type IndexableRule } from './rule-index.js';

export interface CompiledCondition {
  lookup: Lookup;
  test: Predicate;
  /** The condition as a plan states it when the entity is not known: operator in its canonical spelling. */
  comparison: Comparison;
  /** The condition as written, for explanations and validation. */
  source: Condition;
}

export interface CompiledRule {
  /** Position of the rule among all rules, in (policy creation order, rule order). */
  order: number;
  /** Position of the rule's policy in creation order. */
  policyIndex: number;
  denies: boolean;
  principal: readonly CompiledCondition[];
  resource: readonly CompiledCondition[];
  /** The decision this rule gives when it is the one that counts, built once. */
  decision: Decision;
}

/** Every policy compiled for evaluation, under the store revision it was built from. */
export interface Snapshot {
  revision: number;
  policyCount: number;
  /** Rules covering each action, indexed by the values they demand. */
  rulesByAction: ReadonlyMap<string, ActionRules>;
  /** The decision when no rule matches: from the policies' default effects. */
  fallback: Decision;
  /** The policies compiled, in creation order. */
  policies: readonly Policy[];
  /** Every rule compiled, by `order`: rule j of policy i after all rules of the policies before it. */
  rules: readonly CompiledRule[];
}

/**
 * Compiles conditions once per distinct condition and per distinct list: thousands of rules that
 * share `attributes.role == "reader"` share one compiled condition, which stays in the CPU cache.
 */
export class ConditionCompiler {
  private readonly conditions = new Map<string, CompiledCondition>();
  private readonly lists = new Map<string, readonly CompiledCondition[]>();

  list(conditions: readonly Condition[]): readonly CompiledCondition[] {
    const keys = conditions.map((condition) => `${condition.path}\u0000${condition.operator}\u0000${JSON.stringify(condition.value)}`);
    const listKey = keys.join('\u0001');
    let list = this.lists.get(listKey);
    if (list === undefined) {
      list = conditions.map((condition, index) => this.one(keys[index]!, condition));
      this.lists.set(listKey, list);
    }
    return list;
  }

  private one(key: string, condition: Condition): CompiledCondition {
    let compiled = this.conditions.get(key);
    if (compiled === undefined) {
      compiled = {
        lookup: compileLookup(condition.path),
        test: OPERATOR_DEFINITIONS[condition.operator].build(condition.value),
        comparison: { path: condition.path, operator: CANONICAL_OPERATOR[condition.operator], value: condition.value },
        source: condition,
      };
      this.conditions.set(key, compiled);
    }
    return compiled;
  }
}

/** The position of the first condition that `entity` does not satisfy, or -1 when all hold. */
export function firstFailingCondition(conditions: readonly CompiledCondition[], entity: ResolvedEntity): number {
  for (let index = 0; index < conditions.length; index++) {
    const { lookup, test } = conditions[index]!;
    const value = lookup(entity);
    if (value === MISSING || !test(value)) return index;
  }
  return -1;
}

export function ruleMatches(rule: CompiledRule, request: DecisionRequest): boolean {
  return firstFailingCondition(rule.principal, request.principal) === -1 && firstFailingCondition(rule.resource, request.resource) === -1;
}

function fallbackDecision(policies: readonly Policy[]): Decision {
  if (policies.length === 0) return DENIED_WITHOUT_POLICIES;
  if (policies.some((policy) => policy.default_effect === 'deny')) return DENIED_BY_DEFAULT;
  return ALLOWED_BY_DEFAULT;
}

/** Compiles validated, normalized policies (in creation order). Run once per change, never per request. */
export function compile(policies: readonly Policy[], revision: number): Snapshot {
  const rulesOfAction = new Map<string, IndexableRule[]>();
  const conditions = new ConditionCompiler();
  const rules: CompiledRule[] = [];
  policies.forEach((policy, policyIndex) => {
    for (const rule of policy.rules) {
      const compiled: CompiledRule = {
        order: rules.length,
        policyIndex,
        denies: rule.effect === 'deny',
        principal: conditions.list(rule.principal_conditions),
        resource: conditions.list(rule.resource_conditions),
        decision: ruleDecision(rule.effect, rule.name, policy.name),
      };
      rules.push(compiled);
      const indexable = { compiled, principal: rule.principal_conditions, resource: rule.resource_conditions };
      for (const action of new Set(rule.actions)) {
        const rules = rulesOfAction.get(action);
        if (rules === undefined) rulesOfAction.set(action, [indexable]);
        else rules.push(indexable);
      }
    }
  });
  const rulesByAction = new Map([...rulesOfAction].map(([action, rules]) => [action, new ActionRules(rules, conditions)]));
  return { revision, policyCount: policies.length, rulesByAction, fallback: fallbackDecision(policies), policies, rules };
}
