import type { Policy } from '../schemas/policy.js';
import { flatConditions, sharedSets } from './condition-items.js';
import { OPERATOR_DEFINITIONS } from './operators/index.js';

const DECISION_TIME = 'context.time';

/**
 * Whether a rule of `policies` reads the decision's time (a context condition on `time`, a
 * reference to `context.time`, a `within` anchored on it): their decisions may then change as time
 * passes, with nothing written, and no client may keep one.
 */
export function readsDecisionTime(policies: readonly Policy[]): boolean {
  const reach = sharedSets(policies);
  return policies.some((policy) =>
    policy.rules.some((rule) => {
      const sets = reach(policy);
      if (flatConditions(rule.context_conditions ?? [], sets).some((condition) => condition.path === 'time')) return true;
      const sides = [rule.principal_conditions, rule.resource_conditions, rule.action_conditions ?? [], rule.context_conditions ?? []];
      return sides.some((items) =>
        flatConditions(items, sets).some(({ operator, value, value_from }) => (value_from ?? OPERATOR_DEFINITIONS[operator].anchored?.defaultReference(value)) === DECISION_TIME),
      );
    }),
  );
}
