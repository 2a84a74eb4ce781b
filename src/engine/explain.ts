import type { Effect } from '../schemas/policy.js';
import type { Decision, DecisionRequest, ResolvedEntity } from './entity.js';
import { firstFailingCondition, type CompiledCondition, type Snapshot } from './compile.js';
import { DENIED_WITHOUT_POLICIES } from './decisions.js';
import { MISSING } from './paths.js';

type Side = 'principal' | 'resource';

/** The first condition of a rule that the request did not satisfy. */
export interface FailedCondition {
  side: Side;
  path: string;
  operator: string;
  /** The condition's value; absent for `exists` and `not_exists`, which take none. */
  expected?: unknown;
  /** The value found at `path`; absent when `missing`. */
  actual?: unknown;
  missing?: true;
}

export interface RuleTrace {
  name: string;
  effect: Effect;
  matched: boolean;
  failed?: FailedCondition;
}

export interface PolicyTrace {
  name: string;
  default_effect: Effect;
  /** The policy's rules that cover the action, in order. */
  rules: RuleTrace[];
}

export interface DecidedBy {
  kind: 'rule' | 'default' | 'no_policies';
  effect: Effect;
  why: string;
  policy?: string;
  rule?: string;
}

export interface EntityTrace {
  uri: string | null;
  attributes: Record<string, unknown>;
}

/**
 * How a decision came about. Objects are built in the order the answer's schema serializes them
 * (required fields first), so the pool's workers, which stringify them as built, write the same bytes.
 */
export interface Explanation {
  revision: number;
  action: string;
  principal: EntityTrace;
  resource: EntityTrace;
  policies: PolicyTrace[];
  decided_by: DecidedBy;
}

export interface ExplainedDecision extends Decision {
  readonly explain: Explanation;
}

function entityTrace(entity: ResolvedEntity): EntityTrace {
  return { uri: entity.uri ?? null, attributes: Object.fromEntries(entity.attributes) };
}

function failure(side: Side, conditions: readonly CompiledCondition[], entity: ResolvedEntity): FailedCondition | undefined {
  const index = firstFailingCondition(conditions, entity);
  if (index === -1) return undefined;
  const { lookup, source } = conditions[index]!;
  const actual = lookup(entity);
  const where = source.value === undefined ? { side, path: source.path, operator: source.operator } : { side, path: source.path, operator: source.operator, expected: source.value };
  return actual === MISSING ? { ...where, missing: true } : { ...where, actual };
}

/** Why no rule decided: the default effect that applied, and which policy's. */
function defaultApplied(snapshot: Snapshot, decision: Decision, action: string, anyRule: boolean): DecidedBy {
  if (decision === DENIED_WITHOUT_POLICIES) return { kind: 'no_policies', effect: 'deny', why: 'There are no policies' };
  const unmatched = anyRule ? `No rule for action '${action}' matched` : `No policy has a rule for action '${action}'`;
  if (decision.allowed) {
    return { kind: 'default', effect: 'allow', why: `${unmatched}, and every policy's default_effect is allow`, policy: snapshot.policies[0]!.name };
  }
  const denying = snapshot.policies.find((policy) => policy.default_effect === 'deny')!;
  return { kind: 'default', effect: 'deny', why: `${unmatched}, and policy ${denying.name} has default_effect deny`, policy: denying.name };
}

/**
 * Describes `decision`, which `evaluate(snapshot, request)` returned: re-walks the rules of every
 * policy that cover the action, with the compiled conditions `evaluate` tests, and names the rule
 * whose decision it is (each compiled rule owns its decision object) or the default that applied.
 * A rule listed as matched decides nothing when an earlier rule of its policy matched too.
 */
export function explain(snapshot: Snapshot, request: DecisionRequest, decision: Decision): Explanation {
  const policies: PolicyTrace[] = [];
  let decidedBy: DecidedBy | undefined;
  snapshot.policies.forEach((policy, policyIndex) => {
    const rules: RuleTrace[] = [];
    policy.rules.forEach((rule, ruleIndex) => {
      const compiled = snapshot.rules[policyIndex]![ruleIndex]!;
      if (!rule.actions.includes(request.action)) return;
      const failed =
        failure('principal', compiled.principal, request.principal) ?? failure('resource', compiled.resource, request.resource);
      rules.push(failed === undefined ? { name: rule.name, effect: rule.effect, matched: true } : { name: rule.name, effect: rule.effect, matched: false, failed });
      if (compiled.decision === decision) {
        const first = `Rule ${rule.name} is the first rule of policy ${policy.name} to match`;
        const why =
          rule.effect === 'deny'
            ? `${first}, and it denies: a deny wins over any allow`
            : `${first}, and it allows: no policy's first matching rule denies`;
        decidedBy = { kind: 'rule', effect: rule.effect, why, policy: policy.name, rule: rule.name };
      }
    });
    if (rules.length > 0) policies.push({ name: policy.name, default_effect: policy.default_effect, rules });
  });
  return {
    revision: snapshot.revision,
    action: request.action,
    principal: entityTrace(request.principal),
    resource: entityTrace(request.resource),
    policies,
    decided_by: decidedBy ?? defaultApplied(snapshot, decision, request.action, policies.length > 0),
  };
}

/** `decision` with its explanation, fields in the order answers serialize them. */
export function withExplanation(snapshot: Snapshot, request: DecisionRequest, decision: Decision): ExplainedDecision {
  return { allowed: decision.allowed, reason: decision.reason, explain: explain(snapshot, request, decision) };
}
