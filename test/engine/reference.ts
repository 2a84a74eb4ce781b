/**
 * A direct, unoptimized reading of the combining rules in docs/evaluation.md, for tests to hold the engine
 * and the server to. It shares only the operators and path lookup with the engine (they have tables
 * of their own in operators.test.ts and paths.test.ts); the combining is written here from the text.
 */
import type { Decider, Decision, DecisionRequest, ResolvedEntity } from '../../src/engine/index.js';
import { OPERATOR_DEFINITIONS } from '../../src/engine/operators.js';
import { compileLookup, MISSING } from '../../src/engine/paths.js';
import type { Condition, Policy, Rule } from '../../src/schemas/policy.js';

/** docs/evaluation.md: a missing attribute makes any condition on it false, but `not_exists`; `exists` and `not_exists` test only presence. */
export function conditionHolds(condition: Pick<Condition, 'path' | 'operator' | 'value'>, entity: ResolvedEntity): boolean {
  const value = compileLookup(condition.path)(entity);
  if (condition.operator === 'exists') return value !== MISSING;
  if (condition.operator === 'not_exists') return value === MISSING;
  return value !== MISSING && OPERATOR_DEFINITIONS[condition.operator].build(condition.value)(value);
}

/** Whether the rule covers the action and all its conditions hold. */
export function ruleApplies(rule: Rule, request: DecisionRequest): boolean {
  return (
    rule.actions.includes(request.action) &&
    rule.principal_conditions.every((c) => conditionHolds(c, request.principal)) &&
    rule.resource_conditions.every((c) => conditionHolds(c, request.resource))
  );
}

/** docs/evaluation.md, read literally: the decision and what gave it. */
export function reference(policies: readonly Policy[], request: DecisionRequest): { decision: Decision; decider: Decider } {
  const firstMatches = policies.map((policy) => ({ policy, rule: policy.rules.find((rule) => ruleApplies(rule, request)) }));
  const byRule = (effect: 'allow' | 'deny') => {
    const match = firstMatches.find(({ rule }) => rule?.effect === effect);
    if (match === undefined) return undefined;
    const [policy, rule, verb] = [match.policy.name, match.rule!.name, effect === 'allow' ? 'allowed' : 'denied'];
    return { decision: { allowed: effect === 'allow', reason: `Rule ${rule} ${verb} the action in policy ${policy}` }, decider: { kind: 'rule', policy, rule, effect } as const };
  };
  const ruled = byRule('deny') ?? byRule('allow');
  if (ruled) return ruled;
  if (policies.some((policy) => policy.default_effect === 'deny')) {
    return { decision: { allowed: false, reason: 'Action denied by default effect' }, decider: { kind: 'default', effect: 'deny' } };
  }
  if (policies.length > 0) return { decision: { allowed: true, reason: 'Action allowed by default effect' }, decider: { kind: 'default', effect: 'allow' } };
  return { decision: { allowed: false, reason: 'Action denied by default because there are no policies' }, decider: { kind: 'no_policies' } };
}
