import type { Condition, ConditionItem, DefaultEffect, Operator, Policy, Rule } from '../../src/schemas/policy.js';
import type { DecisionRequest, ResolvedEntity } from '../../src/engine/index.js';
import { compile, evaluate } from '../../src/engine/index.js';

/** A condition on `path` (default `attributes.x`). */
export function cond(operator: Operator, value: unknown, path = 'attributes.x'): Condition {
  return { path, operator, value };
}

export interface RuleOptions {
  effect?: 'allow' | 'deny';
  principal?: ConditionItem[];
  resource?: ConditionItem[];
  actions?: string[];
}

export function rule(name: string, options: RuleOptions = {}): Rule {
  return {
    name,
    effect: options.effect ?? 'allow',
    principal_conditions: options.principal ?? [],
    resource_conditions: options.resource ?? [],
    actions: options.actions ?? ['access'],
  };
}

export function policy(name: string, rules: Rule[], defaultEffect: DefaultEffect = 'deny'): Policy {
  return { version: '1.0', name, description: null, rules, default_effect: defaultEffect };
}

/** An entity from a plain record (or entries, for keys like `__proto__`). */
export function entity(attributes: Record<string, unknown> | [string, unknown][] = {}, uri?: string): ResolvedEntity {
  const entries = Array.isArray(attributes) ? attributes : Object.entries(attributes);
  return { uri, attributes: new Map(entries) };
}

export function request(principal: ResolvedEntity, resource: ResolvedEntity = entity(), action = 'access'): DecisionRequest {
  return { principal, resource, action };
}

/**
 * Whether a single principal condition holds for a principal with the given attributes: builds a
 * one-rule allow policy (default deny) and evaluates it.
 */
export function holds(condition: Condition, principal: ResolvedEntity): boolean {
  const snapshot = compile([policy('p', [rule('r', { principal: [condition] })])], 1);
  const decision = evaluate(snapshot, request(principal));
  if (decision.allowed) {
    if (decision.reason !== 'Rule r allowed the action in policy p') throw new Error(`unexpected reason ${decision.reason}`);
    return true;
  }
  if (decision.reason !== 'Action denied by default effect') throw new Error(`unexpected reason ${decision.reason}`);
  return false;
}

/** `holds` for a principal whose attribute `x` is `value`. */
export function holdsFor(operator: Operator, conditionValue: unknown, attribute: unknown): boolean {
  return holds(cond(operator, conditionValue), entity([['x', attribute]]));
}

/** `holds` for a principal without attribute `x` (it has `y` only). */
export function holdsWhenMissing(operator: Operator, conditionValue: unknown): boolean {
  return holds(cond(operator, conditionValue), entity({ y: conditionValue }));
}
