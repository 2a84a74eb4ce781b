/**
 * A direct, unoptimized reading of the combining rules in docs/evaluation.md, for tests to hold the engine
 * and the server to. It shares only the operators and path lookup with the engine (they have tables
 * of their own in operators.test.ts and paths.test.ts); the combining is written here from the text.
 */
import type { Decider, Decision, DecisionRequest, ResolvedEntity } from '../../src/engine/index.js';
import { OPERATOR_DEFINITIONS } from '../../src/engine/operators/index.js';
import { compileLookup, MISSING } from '../../src/engine/paths.js';
import type { Condition, ConditionItem, Policy, Rule } from '../../src/schemas/policy.js';

/**
 * docs/evaluation.md, "Relations": `value_from` names a part of the check (`principal`, `resource`,
 * `action`, `context`) and a path into it as conditions write paths; the action's `name` is its
 * name, the context has attributes only. MISSING where the check has nothing there.
 */
export function referencedValue(reference: string, request: DecisionRequest): unknown {
  const [part, ...rest] = reference.split('.');
  const path = rest.join('.');
  const none = new Map<string, unknown>();
  if (part === 'principal') return compileLookup(path)(request.principal);
  if (part === 'resource') return compileLookup(path)(request.resource);
  if (part === 'action') return path === 'name' ? request.action : compileLookup(path)({ uri: undefined, attributes: request.actionAttributes ?? none });
  if (part === 'context') return path === 'time' ? decisionTime(request) : compileLookup(path)({ uri: undefined, attributes: request.context ?? none });
  throw new Error(`not a reference: ${reference}`);
}

/** The decision's time: the one the check was given, else the clock's, kept for the rest of the decision. */
function decisionTime(request: DecisionRequest): string {
  request.time ??= new Date().toISOString();
  return request.time;
}

/**
 * docs/evaluation.md: a missing attribute makes any condition on it false, but `not_exists`; `exists` and
 * `not_exists` test only presence. A condition with `value_from` compares with the value it names
 * as if that value had been written as `value` (for `within`, as its value's anchor `of`, the
 * decision's time where neither is written): false when the check has none there, or one the
 * operator would refuse as a value (a number for `gt`, a list for `in`, a string for `startswith`).
 * docs/evaluation.md, "Evaluation errors": a network, pattern or time operator that cannot evaluate the
 * value it reads (or the value its reference reads) holds in a deny rule and fails in an allow rule
 * (`undecidableHolds`), read the other way round inside a `none_of`.
 */
export function conditionHolds(condition: Pick<Condition, 'path' | 'operator' | 'value' | 'value_from'>, entity: ResolvedEntity, request?: DecisionRequest, undecidableHolds = false): boolean {
  const value =
    condition.path === 'name' ? (entity.uri ?? MISSING) : condition.path === 'time' ? (request === undefined ? MISSING : decisionTime(request)) : compileLookup(condition.path)(entity);
  if (condition.operator === 'exists') return value !== MISSING;
  if (condition.operator === 'not_exists') return value === MISSING;
  if (value === MISSING) return false;
  const definition = OPERATOR_DEFINITIONS[condition.operator];
  // `within` with no anchor in its value reads one: its value_from, or the decision's time.
  const reference = condition.value_from ?? (condition.operator === 'within' && (condition.value as { of?: string }).of === undefined ? 'context.time' : undefined);
  const errorsHold = definition.undecidable !== undefined && undecidableHolds;
  if (reference === undefined) return definition.build(condition.value)(value) ?? errorsHold;
  const other = referencedValue(reference, request ?? { principal: entity, resource: entity, action: '' });
  const written = condition.operator === 'within' ? { ...(condition.value as object), of: other } : other;
  if (other === MISSING) return false;
  if (definition.checkValue(written) !== undefined) return errorsHold;
  return definition.build(written)(value) ?? errorsHold;
}

/**
 * An item of a list: a condition; a group, which holds when the items of some alternative (any_of),
 * or of none (none_of), all hold; or a reference to a set (of its policy, or of the policy `from`
 * names, among `policies`), which holds when every item of the set does. A set not there cannot be
 * decided: it holds in a deny rule's reading and not in an allow rule's.
 */
function itemHolds(item: ConditionItem, entity: ResolvedEntity, request: DecisionRequest, within: PoliciesOf, undecidableHolds: boolean): boolean {
  const allHold = (alternative: readonly ConditionItem[], reading: boolean) => alternative.every((each) => itemHolds(each, entity, request, within, reading));
  if ('any_of' in item) return item.any_of.some((alternative) => allHold(alternative, undecidableHolds));
  if ('none_of' in item) return !item.none_of.some((alternative) => allHold(alternative, !undecidableHolds));
  if ('set' in item) {
    // A shadow standing in for the live policy `from` names (in a shadow set) lends its sets under that name.
    const owner = item.from === undefined ? within.policy : (within.policies.find((policy) => policy.name === item.from) ?? within.policies.find((policy) => policy.shadow === item.from));
    const sets = owner?.condition_sets ?? {};
    if (!Object.hasOwn(sets, item.set)) return undecidableHolds;
    return sets[item.set]!.every((each) => itemHolds(each, entity, request, within, undecidableHolds));
  }
  return conditionHolds(item, entity, request, undecidableHolds);
}

/** A rule's policy, and the policies whose sets it may take (`from`). */
interface PoliciesOf {
  policy: Pick<Policy, 'condition_sets'>;
  policies: readonly Pick<Policy, 'name' | 'condition_sets' | 'shadow'>[];
}

/** Whether the rule (of `policy`, among `policies`) covers the action and all its conditions hold, on the principal, the resource, the action and the context. */
export function ruleApplies(rule: Rule, request: DecisionRequest, policy: Pick<Policy, 'condition_sets'> = {}, policies: readonly Policy[] = []): boolean {
  const action = { uri: request.action, attributes: request.actionAttributes ?? new Map<string, unknown>() };
  const context = { uri: undefined, attributes: request.context ?? new Map<string, unknown>() };
  const within = { policy, policies };
  const all = (items: readonly ConditionItem[], entity: ResolvedEntity) => items.every((item) => itemHolds(item, entity, request, within, rule.effect === 'deny'));
  return (
    rule.actions.includes(request.action) &&
    all(rule.principal_conditions, request.principal) &&
    all(rule.resource_conditions, request.resource) &&
    all(rule.action_conditions ?? [], action) &&
    all(rule.context_conditions ?? [], context)
  );
}

/** A policy's scope, as docs/evaluation.md says it: unscoped, or the type before the first colon of the resource's uri is one of its types. */
function speaksFor(policy: Policy, request: DecisionRequest): boolean {
  if (policy.resource_types === undefined) return true;
  const uri = request.resource.uri;
  const colon = uri?.indexOf(':') ?? -1;
  return colon > 0 && policy.resource_types.includes(uri!.slice(0, colon));
}

/** docs/evaluation.md, read literally: the decision and what gave it. */
export function reference(allPolicies: readonly Policy[], request: DecisionRequest): { decision: Decision; decider: Decider } {
  if (allPolicies.length === 0) return { decision: { allowed: false, reason: 'Action denied by default because there are no policies' }, decider: { kind: 'no_policies' } };
  const policies = allPolicies.filter((policy) => speaksFor(policy, request));
  const firstMatches = policies.map((policy) => ({ policy, rule: policy.rules.find((rule) => ruleApplies(rule, request, policy, allPolicies)) }));
  const byRule = (effect: 'allow' | 'deny') => {
    const match = firstMatches.find(({ rule }) => rule?.effect === effect);
    if (match === undefined) return undefined;
    const [policy, rule, verb] = [match.policy.name, match.rule!.name, effect === 'allow' ? 'allowed' : 'denied'];
    return { decision: { allowed: effect === 'allow', reason: `Rule ${rule} ${verb} the action in policy ${policy}` }, decider: { kind: 'rule', policy, rule, effect } as const };
  };
  const ruled = byRule('deny') ?? byRule('allow');
  if (ruled) return ruled;
  // A deny default anywhere denies; else an allow default allows; policies with default_effect none say nothing, and alone they deny.
  const denied = { decision: { allowed: false, reason: 'Action denied by default effect' }, decider: { kind: 'default', effect: 'deny' } } as const;
  if (policies.some((policy) => policy.default_effect === 'deny')) return denied;
  if (policies.some((policy) => policy.default_effect === 'allow')) return { decision: { allowed: true, reason: 'Action allowed by default effect' }, decider: { kind: 'default', effect: 'allow' } };
  if (policies.length > 0) return denied;
  const uri = request.resource.uri;
  const type = uri !== undefined && uri.indexOf(':') > 0 ? uri.slice(0, uri.indexOf(':')) : undefined;
  const reason =
    type === undefined
      ? 'Action denied by default: every policy is scoped to resource types, and the resource has none (no uri of the form <type>:<id>)'
      : `Action denied by default: no policy covers resources of type '${type}'`;
  return { decision: { allowed: false, reason }, decider: { kind: 'default', effect: 'deny' } };
}
