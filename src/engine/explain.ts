import type { DefaultEffect, Effect, GroupKind } from '../schemas/policy.js';
import { partOf, type DecisionRequest, type RequestPart, type ResolvedEntity } from './entity.js';
import { firstFailingCondition, rulesFor, sourceOf, type Snapshot } from './compile.js';
import type { CompiledCondition, CompiledGroup, CompiledItem, CompiledRule } from './compiled-rule.js';
import { AnswerBudget } from './answer-budget.js';
import { DENIED_WITHOUT_POLICIES, type Decider, type Decision } from './decisions.js';
import { MISSING } from './paths.js';
import { resourceTypeOf } from './scope.js';
import { OPERATOR_DEFINITIONS } from './operators/index.js';

/** The first condition of a rule that the request did not satisfy. */
export interface FailedCondition {
  side: RequestPart;
  path: string;
  operator: string;
  /** The reference the condition reads its value from, when it has one. */
  value_from?: string;
  /**
   * The condition's value, or the value its reference resolved to (for `within`, its span with the
   * anchor read written as `of`); absent for `exists` and `not_exists`, which take none, and when `value_from_missing`.
   */
  expected?: unknown;
  /** The value found at `path`; absent when `missing`. */
  actual?: unknown;
  missing?: true;
  /** The check has no value where the reference leads. */
  value_from_missing?: true;
  /** Why the condition could not be evaluated on the value it read (an evaluation error): in an allow rule, it does not hold. */
  undecidable?: string;
}

/** A condition of a deny rule that could not be evaluated on the value it read, and so counted as holding. */
export interface UndecidableCondition {
  side: RequestPart;
  path: string;
  operator: string;
  actual: unknown;
  why: string;
}

/**
 * The first item of a rule that the request did not satisfy being a group: for `any_of`, why each
 * alternative failed (its first failing condition); for `none_of`, the first alternative that held.
 */
export interface FailedGroup {
  side: RequestPart;
  group: GroupKind;
  alternatives?: (Omit<FailedCondition, 'side'> | Omit<FailedSet, 'side'>)[];
  held?: number;
}

/** The first item of a rule that the request did not satisfy being a reference to a condition set (`from` another policy): the set's first item that did not hold (none for a set out of reach). */
export interface FailedSet {
  side: RequestPart;
  set: string;
  from?: string;
  failed?: Omit<FailedCondition, 'side'> | Omit<FailedGroup, 'side'>;
}

/** An `any_of` group of a matched rule, and the first of its alternatives that held. */
export interface HeldAlternative {
  side: RequestPart;
  alternative: number;
}

export interface RuleTrace {
  name: string;
  effect: Effect;
  matched: boolean;
  failed?: FailedCondition | FailedGroup | FailedSet;
  /** For a matched rule with `any_of` groups: which alternative of each held. */
  alternatives_held?: HeldAlternative[];
  /** For a matched deny rule: its conditions that could not be evaluated on the values they read, and so counted as holding. */
  undecidable?: UndecidableCondition[];
}

export interface PolicyTrace {
  name: string;
  default_effect: DefaultEffect;
  /** The policy's rules that cover the action, in order. */
  rules: RuleTrace[];
}

export interface DecidedBy {
  kind: Decider['kind'];
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
  /** The action's attributes and the context, when the check sent them. */
  action_attributes?: Record<string, unknown>;
  context?: Record<string, unknown>;
  /** The decision's time (`context.time`), when a condition read it. */
  time?: string;
  /** What the check's attributes break in the attribute schemas, when it was decided despite them (enforcement warn). */
  schema_violations?: string[];
}

export interface ExplainedDecision extends Decision {
  readonly explain: Explanation;
}

/** The explanations of one answer would be longer than its budget allows. */
export class ExplanationTooLarge extends Error {
  constructor(readonly maxLength: number) {
    super(`the explanations would be longer than ${maxLength} characters`);
  }
}

/** The JSON length of a value, each value a condition holds measured once: they are shared by every explanation. */
const valueLengths = new WeakMap<object, number>();
const jsonLengthOf = (value: unknown) => (value === undefined ? 0 : JSON.stringify(value).length);
function conditionValueLength(source: CompiledCondition['source']): number {
  let length = valueLengths.get(source);
  if (length === undefined) valueLengths.set(source, (length = jsonLengthOf(source.value) + jsonLengthOf(source.path) + jsonLengthOf(source.value_from)));
  return length;
}

/** The field names, quotes and punctuation of each part, enough to hold whatever the parts' own texts leave out. */
const FRAME = { explanation: 110, entity: 24, policy: 50, rule: 48, failed: 90, reference: 45, group: 70, held: 60, decidedBy: 120, time: 40, undecidable: 200 };

/** Counts each part of an explanation against the answer's budget as it is built; throws ExplanationTooLarge past it. */
class Spending {
  constructor(private readonly budget: AnswerBudget) {}

  spend(characters: number): void {
    if (!this.budget.spend(characters)) throw new ExplanationTooLarge(this.budget.maxLength);
  }

  /** Measures a text or a value the request brought (they are as long as it makes them) and spends it. */
  spendOn(...values: unknown[]): void {
    let length = 0;
    for (const value of values) length += jsonLengthOf(value);
    this.spend(length);
  }
}

function mapTrace(attributes: ReadonlyMap<string, unknown>, spending: Spending): Record<string, unknown> {
  const trace = Object.fromEntries(attributes);
  spending.spend(FRAME.entity);
  spending.spendOn(trace);
  return trace;
}

function entityTrace(entity: ResolvedEntity, spending: Spending): EntityTrace {
  const trace = { uri: entity.uri ?? null, attributes: Object.fromEntries(entity.attributes) };
  spending.spend(FRAME.entity);
  spending.spendOn(trace.uri, trace.attributes);
  return trace;
}

function failure(side: RequestPart, conditions: readonly CompiledItem[], request: DecisionRequest, spending: Spending): FailedCondition | FailedGroup | FailedSet | undefined {
  if (conditions.length === 0) return undefined;
  const entity = partOf(request, side);
  const index = firstFailingCondition(conditions, entity, request);
  if (index === -1) return undefined;
  return { side, ...itemFailure(conditions[index]!, entity, request, spending) };
}

type ItemFailure = Omit<FailedCondition, 'side'> | Omit<FailedGroup, 'side'> | Omit<FailedSet, 'side'>;

/** How `item`, which `entity` of `request` does not satisfy, failed. */
function itemFailure(item: CompiledItem, entity: ResolvedEntity, request: DecisionRequest, spending: Spending): ItemFailure {
  return item.group === undefined ? conditionFailure(item, entity, request, spending) : groupFailure(item, entity, request, spending);
}

/**
 * Why `condition` cannot be evaluated on `actual`, the value at its path (not MISSING), with `resolved`,
 * the value its reference read (MISSING without one); undefined when it can.
 */
function whyUndecidable(condition: CompiledCondition, actual: unknown, resolved: unknown): string | undefined {
  const { undecidable } = OPERATOR_DEFINITIONS[condition.source.operator];
  if (undecidable === undefined) return undefined;
  if (condition.reference === undefined) return condition.test(actual) === undefined ? undecidable(actual, condition.source.value) : undefined;
  return resolved !== MISSING && condition.relate(actual, resolved) === undefined ? undecidable(actual, resolved) : undefined;
}

/** The conditions of a matched deny rule that counted as holding because they could not be evaluated (groups are not looked into). */
function undecidableConditions(compiled: CompiledRule, request: DecisionRequest, spending: Spending): UndecidableCondition[] | undefined {
  if (!compiled.denies) return undefined;
  let found: UndecidableCondition[] | undefined;
  for (const side of SIDES) {
    const entity = partOf(request, side);
    for (const item of compiled[side]) {
      if (item.group !== undefined) continue;
      const actual = item.lookup(entity, request);
      if (actual === MISSING) continue;
      const why = whyUndecidable(item, actual, item.reference === undefined ? MISSING : item.reference(request));
      if (why === undefined) continue;
      spending.spend(FRAME.undecidable + conditionValueLength(item.source) + why.length);
      spending.spendOn(actual);
      (found ??= []).push({ side, path: item.source.path, operator: item.source.operator, actual, why });
    }
  }
  return found;
}

/** How `condition`, which `entity` of `request` does not satisfy, failed. */
function conditionFailure(condition: CompiledCondition, entity: ResolvedEntity, request: DecisionRequest, spending: Spending): Omit<FailedCondition, 'side'> {
  const { lookup, source, reference } = condition;
  const actual = lookup(entity, request);
  spending.spend(FRAME.failed + (reference === undefined ? 0 : FRAME.reference) + conditionValueLength(source));
  const failed: Omit<FailedCondition, 'side'> = { path: source.path, operator: source.operator };
  let resolved: unknown = MISSING;
  if (reference === undefined) {
    if (source.value !== undefined) failed.expected = source.value;
  } else {
    // The reference read: as written, or the one an anchored operator reads by default (the decision's time).
    const { part, path } = condition.referenced!;
    failed.value_from = `${part}.${path}`;
    resolved = reference(request);
    if (resolved !== MISSING) {
      const { anchored } = OPERATOR_DEFINITIONS[source.operator];
      failed.expected = anchored === undefined ? resolved : anchored.pin(source.value, resolved);
      spending.spendOn(failed.expected);
    }
  }
  if (actual === MISSING) failed.missing = true;
  else {
    spending.spendOn(actual);
    failed.actual = actual;
  }
  if (reference !== undefined && failed.expected === undefined) failed.value_from_missing = true;
  const why = actual === MISSING ? undefined : whyUndecidable(condition, actual, resolved);
  if (why !== undefined) {
    spending.spend(FRAME.failed + why.length);
    failed.undecidable = why;
  }
  return failed;
}

/**
 * Why `group` did not hold for `entity`: each alternative's first failure (`any_of`, whose
 * alternatives hold conditions and references to sets), the alternative that held (`none_of`), or a
 * set's first item that did not hold.
 */
function groupFailure({ group }: CompiledGroup, entity: ResolvedEntity, request: DecisionRequest, spending: Spending): ItemFailure {
  spending.spend(FRAME.group + (group.name?.length ?? 0) + (group.from?.length ?? 0));
  const firstFailing = (items: readonly CompiledItem[]) => items[firstFailingCondition(items, entity, request)]!;
  if (group.kind === 'set') {
    const named = group.from === undefined ? { set: group.name! } : { set: group.name!, from: group.from };
    const [items] = group.alternatives;
    if (items === undefined) return named;
    return { ...named, failed: itemFailure(firstFailing(items), entity, request, spending) as Omit<FailedCondition, 'side'> | Omit<FailedGroup, 'side'> };
  }
  if (group.kind === 'none_of') {
    const held = group.alternatives.findIndex((conditions) => firstFailingCondition(conditions, entity, request) === -1);
    return { group: group.kind, held };
  }
  const alternatives = group.alternatives.map((items) => itemFailure(firstFailing(items), entity, request, spending) as Omit<FailedCondition, 'side'> | Omit<FailedSet, 'side'>);
  return { group: group.kind, alternatives };
}

/** Which alternative of each `any_of` group of a rule that matched held, side by side. */
function heldAlternatives(compiled: CompiledRule, request: DecisionRequest, spending: Spending): HeldAlternative[] | undefined {
  let held: HeldAlternative[] | undefined;
  for (const side of SIDES) {
    for (const item of compiled[side]) {
      if (item.group?.kind !== 'any_of') continue;
      const entity = partOf(request, side);
      spending.spend(FRAME.held);
      const alternative = item.group.alternatives.findIndex((conditions) => firstFailingCondition(conditions, entity, request) === -1);
      (held ??= []).push({ side, alternative });
    }
  }
  return held;
}

const SIDES = ['principal', 'resource', 'action', 'context'] as const satisfies readonly RequestPart[];

/** The first condition of `compiled` that `request` fails, part by part. */
const firstFailure = (compiled: CompiledRule, request: DecisionRequest, spending: Spending) =>
  failure('principal', compiled.principal, request, spending) ??
  failure('resource', compiled.resource, request, spending) ??
  failure('action', compiled.action, request, spending) ??
  failure('context', compiled.context, request, spending);

/** Policies a default's reason names, at most: past them, how many more. */
const MAX_NAMED_POLICIES = 5;

/** `names` quoted as a list, the first MAX_NAMED_POLICIES of them. */
function namedPolicies(names: readonly string[]): string {
  const named = names.slice(0, MAX_NAMED_POLICIES).join(', ');
  return names.length > MAX_NAMED_POLICIES ? `${named} and ${names.length - MAX_NAMED_POLICIES} more` : named;
}

/**
 * Why no rule decided: the default effect that applied, which policy's, and which policies had rules
 * for the action (`covering`), so that a denial by a policy that never mentions the action says so.
 */
function defaultApplied(snapshot: Snapshot, decision: Decision, request: DecisionRequest, covering: readonly string[]): DecidedBy {
  if (decision === DENIED_WITHOUT_POLICIES) return { kind: 'no_policies', effect: 'deny', why: 'There are no policies' };
  const { action } = request;
  const unmatched =
    covering.length > 0 ? `No rule for action '${action}' matched in the policies with rules for it (${namedPolicies(covering)})` : `No policy has a rule for action '${action}'`;
  const type = resourceTypeOf(request.resource.uri);
  const speaking = snapshot.scopes?.speakingFor(snapshot.policies, type) ?? snapshot.policies;
  if (speaking.length === 0) return { kind: 'default', effect: 'deny', why: `${unmatched}; and every policy is scoped to resource types this resource is not of, so none speaks for it and it is denied` };
  const those = snapshot.scopes === undefined ? 'the policies' : `the policies that speak for ${type === undefined ? 'resources without a type' : `resources of type '${type}'`}`;
  if (decision.allowed) {
    const allowing = speaking.find((policy) => policy.default_effect === 'allow')!;
    const why = `${unmatched}; so the default effects decide: none of ${those} has default_effect deny, and policy ${allowing.name} is the first with default_effect allow`;
    return { kind: 'default', effect: 'allow', why, policy: allowing.name };
  }
  const denying = speaking.find((policy) => policy.default_effect === 'deny');
  if (denying === undefined) {
    return { kind: 'default', effect: 'deny', why: `${unmatched}; and none of ${those} has a default effect of its own (each is default_effect none), so it is denied` };
  }
  const mentions = covering.includes(denying.name) ? '' : ` (it has no rule for '${action}')`;
  const why = `${unmatched}; so the default effects decide, and a deny default anywhere denies: policy ${denying.name} is the first with default_effect deny${mentions}`;
  return { kind: 'default', effect: 'deny', why, policy: denying.name };
}

/**
 * Describes `decision`, which `evaluate(snapshot, request)` returned: re-walks the rules of every
 * policy that cover the action, with the compiled conditions `evaluate` tests, and names the rule
 * whose decision it is (each compiled rule owns its decision object) or the default that applied.
 * A rule listed as matched decides nothing when an earlier rule of its policy matched too. Spends
 * the explanation's JSON length from `budget` as it is built; throws ExplanationTooLarge past it.
 */
export function explain(snapshot: Snapshot, request: DecisionRequest, decision: Decision, budget = new AnswerBudget(Infinity)): Explanation {
  const spending = new Spending(budget);
  // The action is said once, and again (twice at most) in decided_by.why.
  const actionLength = jsonLengthOf(request.action);
  spending.spend(FRAME.explanation + actionLength);
  const principal = entityTrace(request.principal, spending);
  const resource = entityTrace(request.resource, spending);
  const policies: PolicyTrace[] = [];
  let decidedBy: DecidedBy | undefined;
  let current: { position: number; trace: PolicyTrace } | undefined;
  // Only the action's rules, in (policy, rule) order: an explanation costs what it says, whatever else the snapshot holds.
  for (const compiled of rulesFor(snapshot, request.action)?.all ?? []) {
    const { policyIndex, ruleIndex } = sourceOf(snapshot, compiled);
    const policy = snapshot.policies[policyIndex]!;
    const rule = policy.rules[ruleIndex]!;
    if (current?.position !== compiled.policyPosition) {
      spending.spend(FRAME.policy + policy.name.length);
      current = { position: compiled.policyPosition, trace: { name: policy.name, default_effect: policy.default_effect, rules: [] } };
      policies.push(current.trace);
    }
    spending.spend(FRAME.rule + rule.name.length);
    const failed = firstFailure(compiled, request, spending);
    let undecidable: UndecidableCondition[] | undefined;
    if (failed !== undefined) current.trace.rules.push({ name: rule.name, effect: rule.effect, matched: false, failed });
    else {
      const trace: RuleTrace = { name: rule.name, effect: rule.effect, matched: true };
      const alternativesHeld = heldAlternatives(compiled, request, spending);
      if (alternativesHeld !== undefined) trace.alternatives_held = alternativesHeld;
      undecidable = undecidableConditions(compiled, request, spending);
      if (undecidable !== undefined) trace.undecidable = undecidable;
      current.trace.rules.push(trace);
    }
    if (compiled.decision === decision) {
      const first = `Rule ${rule.name} is the first rule of policy ${policy.name} to match`;
      const unevaluated =
        undecidable === undefined
          ? ''
          : ` (${undecidable.map((condition) => `${condition.path} ${condition.operator}`).join(', ')} could not be evaluated on the value read, and a deny rule applies unless it is shown not to)`;
      const why =
        rule.effect === 'deny'
          ? `${first}${unevaluated}, and it denies: a deny wins over any allow`
          : `${first}, and it allows: no policy's first matching rule denies`;
      decidedBy = { kind: 'rule', effect: rule.effect, why, policy: policy.name, rule: rule.name };
    }
  }
  decidedBy ??= defaultApplied(snapshot, decision, request, policies.map((trace) => trace.name));
  spending.spend(FRAME.decidedBy + jsonLengthOf(decidedBy.why) + (decidedBy.policy?.length ?? 0) + (decidedBy.rule?.length ?? 0));
  const explanation: Explanation = { revision: snapshot.revision, action: request.action, principal, resource, policies, decided_by: decidedBy };
  if (request.actionAttributes !== undefined) explanation.action_attributes = mapTrace(request.actionAttributes, spending);
  if (request.context !== undefined) explanation.context = mapTrace(request.context, spending);
  if (request.time !== undefined) {
    spending.spend(FRAME.time);
    explanation.time = request.time;
  }
  return explanation;
}

/** `decision` with its explanation, fields in the order answers serialize them. */
export function withExplanation(snapshot: Snapshot, request: DecisionRequest, decision: Decision, budget?: AnswerBudget): ExplainedDecision {
  return { allowed: decision.allowed, reason: decision.reason, explain: explain(snapshot, request, decision, budget) };
}
