import { partOf, type DecisionRequest, type RequestPart, type ResolvedEntity } from './entity.js';
import { holdsFor, rulesFor, type Snapshot } from './compile.js';
import { ALLOWED_BY_DEFAULT, DENIED_BY_DEFAULT, type Decision } from './decisions.js';
import type { CompiledCondition, CompiledGroup, CompiledItem, CompiledRule } from './compiled-rule.js';
import { and, JunctionChildren, jsonLength, not, or, type ConditionTree } from './condition-tree.js';
import { OPERATOR_DEFINITIONS } from './operators/index.js';
import { MISSING } from './paths.js';

export type PlanKind = 'always_allowed' | 'always_denied' | 'conditional';

/**
 * Which resources a principal may act on: `condition` holds exactly for the resources `evaluate`
 * allows, or, with `exact: false`, for some of them and for none it denies.
 */
export interface Plan {
  kind: PlanKind;
  condition: ConditionTree;
  reason: string;
  /** Present when the plan was too large to state exactly. */
  exact?: false;
}

export const CONDITIONAL_REASON = 'Allowed for the resources that satisfy the condition';

/** Whether a resource path is about something the caller said it knows of the resource. */
function isKnown(path: string, resource: ResolvedEntity): boolean {
  if (path === 'uri') return resource.uri !== undefined;
  return resource.attributes.has(path.split('.', 2)[1]!);
}

/** A relation between a known value of the resource and an open one that no comparison states exactly. */
export class PlanUnstatable extends Error {}

/**
 * What `condition` says of `value` at `path` of the resource, where the condition's own path is
 * known and holds `known`: for the operators whose relation reads the same the other way round.
 * For the others, `unstatable` says what the condition relates, and what to do instead.
 */
function mirrored(path: string, condition: CompiledCondition, known: unknown, unstatable: Unstatable): ConditionTree {
  const operator = condition.comparison.operator;
  const { anchored, mirror: reversed } = OPERATOR_DEFINITIONS[operator];
  if (anchored !== undefined) return pinned(condition, path, anchored.mirror(condition.comparison.value), known);
  const accepted = (value: unknown) => OPERATOR_DEFINITIONS[reversed ?? operator].checkValue(value) === undefined;
  if (reversed !== undefined) return accepted(known) ? { path, operator: reversed, value: known } : false;
  // `known contains value` over a list is `value in known`; over anything but a string, it never holds.
  if ((operator === 'contains' || operator === 'not_contains') && Array.isArray(known)) return { path, operator: operator === 'contains' ? 'in' : 'not_in', value: known };
  if ((operator === 'contains' || operator === 'not_contains') && typeof known !== 'string') return false;
  // `known in value` is `value contains known`, but where the value is a string (a substring test) and the known one too.
  if (operator === 'in' && typeof known !== 'string') return { path, operator: 'contains', value: known };
  const { source } = condition;
  throw new PlanUnstatable(`condition ${source.path} ${operator} ${source.value_from}${unstatable.relates} by '${operator}', which a plan cannot state: ${unstatable.remedy}`);
}

/** What a relation a plan cannot state relates (after the condition), and what the caller can do instead. */
interface Unstatable {
  relates: string;
  remedy: string;
}

/**
 * What a resource condition demands of the resource: decided where its path is known; a reference
 * to the principal, the action, the context or a known value of the resource becomes a constant
 * (false where the request has no value there, or one the operator does not take); a relation
 * between two open values of the resource stays as it is written.
 */
function resourceDemand(condition: CompiledCondition, request: DecisionRequest): ConditionTree {
  const { resource } = request;
  const known = isKnown(condition.comparison.path, resource);
  const { reference, referenced } = condition;
  if (reference === undefined) return known ? holdsFor(condition, condition.lookup(resource, request), request) : condition.comparison;
  const targetKnown = referenced!.part !== 'resource' || isKnown(referenced!.path, resource);
  if (known && targetKnown) return holdsFor(condition, condition.lookup(resource, request), request);
  if (!known && !targetKnown) return condition.comparison;
  if (known) {
    const value = condition.lookup(resource, request);
    return value === MISSING ? false : mirrored(referenced!.path, condition, value, KNOWN_RESOURCE_UNSTATABLE);
  }
  const value = reference(request);
  return value === MISSING ? false : pinned(condition, condition.comparison.path, condition.comparison.value, value);
}

/**
 * The comparison `condition` makes on `path` once the value its reference reads is known: that value
 * as the condition's value, or written into it as its anchor; where the operator would not take the
 * value, false, as evaluation relates nothing to it, or, for an operator that cannot evaluate it, what
 * the condition counts as then (see CompiledTest.undecidableHolds) wherever `path` has a value (a
 * missing one keeps the condition false).
 */
function pinned(condition: CompiledCondition, path: string, conditionValue: unknown, known: unknown): ConditionTree {
  const { operator } = condition.comparison;
  const definition = OPERATOR_DEFINITIONS[operator];
  const value = definition.anchored === undefined ? known : definition.anchored.pin(conditionValue, known);
  if (definition.checkValue(value) === undefined) return { path, operator, value };
  return definition.undecidable !== undefined && condition.undecidableHolds ? { path, operator: 'exists' } : false;
}

const KNOWN_RESOURCE_UNSTATABLE: Unstatable = { relates: ' relates a known attribute to an open one', remedy: 'leave that attribute out of the known ones' };

/**
 * Decides `conditions`, those of `entity`, a known part of `request` (the principal, the action or
 * the context), adding to `open` what those that read an open value of the resource demand of it:
 * the condition mirrored onto the resource, its own value being known. False when one fails.
 */
function knownPartHolds(part: RequestPart, conditions: readonly CompiledItem[], entity: ResolvedEntity, request: DecisionRequest, open: ConditionTree[]): boolean {
  for (const condition of conditions) {
    if (condition.group !== undefined) {
      const demand = groupDemand(condition, (alternative) => {
        const demands: ConditionTree[] = [];
        return knownPartHolds(part, alternative, entity, request, demands) && and(demands);
      });
      if (demand === false) return false;
      if (demand !== true) open.push(demand);
      continue;
    }
    const found = condition.lookup(entity, request);
    const { referenced } = condition;
    if (referenced?.part !== 'resource' || found === MISSING || isKnown(referenced.path, request.resource)) {
      if (!holdsFor(condition, found, request)) return false;
      continue;
    }
    const unstatable = { relates: `, on the ${part}, relates it to an open value of the resource`, remedy: `give the resource's ${referenced.path} among the known ones, or ask /check` };
    const demand = mirrored(referenced.path, condition, found, unstatable);
    if (demand === false) return false;
    if (demand !== true) open.push(demand);
  }
  return true;
}

/** What a group (or a set, a group of one alternative) demands of the resource, from what each of its alternatives demands (`demandOf`). */
function groupDemand({ group, undecidableHolds }: CompiledGroup, demandOf: (alternative: readonly CompiledItem[]) => ConditionTree): ConditionTree {
  // A set out of reach is undecidable: it holds as the rule reads it (see ConditionCompiler.set).
  if (group.kind === 'set' && group.alternatives.length === 0) return undecidableHolds;
  const some = or(group.alternatives.map(demandOf));
  return group.kind === 'none_of' ? not(some) : some;
}

/** What a resource condition or group demands of the resource (see resourceDemand). */
function resourceItemDemand(item: CompiledItem, request: DecisionRequest): ConditionTree {
  if (item.group === undefined) return resourceDemand(item, request);
  return groupDemand(item, (alternative) => and(alternative.map((each) => resourceItemDemand(each, request))));
}

/**
 * What a rule demands of the resource once the principal, the action and the context are known:
 * their conditions are decided by the compiled conditions themselves, but for those that read an
 * open value of the resource, and so are resource conditions on what is known.
 */
function residue(rule: CompiledRule, request: DecisionRequest): ConditionTree {
  const open: ConditionTree[] = [];
  if (!knownPartHolds('principal', rule.principal, request.principal, request, open)) return false;
  if (rule.action.length > 0 && !knownPartHolds('action', rule.action, partOf(request, 'action'), request, open)) return false;
  if (rule.context.length > 0 && !knownPartHolds('context', rule.context, partOf(request, 'context'), request, open)) return false;
  const { resource } = request;
  if (resource.uri === undefined && resource.attributes.size === 0 && rule.resource.every((condition) => condition.reference === undefined && condition.group === undefined)) {
    // Nothing is known of the resource, nor read from elsewhere (the common plan): every resource condition stays open.
    for (const condition of rule.resource as readonly CompiledCondition[]) open.push(condition.comparison);
  } else {
    for (const condition of rule.resource) {
      const demand = resourceItemDemand(condition, request);
      if (demand === false) return false;
      if (demand !== true) open.push(demand);
    }
  }
  return open.length === 1 ? open[0]! : and(open);
}

/**
 * What the default effects allow in a plan: all or nothing, but where policies are scoped to
 * resource types, the resources of the types whose defaults allow (a plan never knows the
 * resource's uri); and the default decision a reason names.
 */
function planFallback({ scopes, fallback }: Snapshot): { allows: ConditionTree; decision: Decision } {
  if (scopes === undefined) return { allows: fallback.allowed, decision: fallback };
  const allows = scopes.fallbackAllows();
  return { allows, decision: allows === true ? ALLOWED_BY_DEFAULT : DENIED_BY_DEFAULT };
}

/** A plan as exact as `maxLength` allows would still be longer: its conditions alone, without which it would say nothing. */
export class PlanTooLarge extends Error {
  constructor(readonly maxLength: number) {
    super(`the plan would be longer than ${maxLength} characters`);
  }
}

/**
 * Deny rules in a row in one policy: they count where they hold and none of the allow rules of
 * their policy before them holds (`allowResidues[exemptFrom, exemptTo)` in `plan`).
 */
interface DenyRun {
  denies: ConditionTree[];
  exemptFrom: number;
  exemptTo: number;
  /** The JSON length of the `or` of the exempting allow rules. */
  exemptionsLength: number;
}

/**
 * What exempting a deny run adds around its denies and the `or` of its exempting allow rules:
 * `{"and":[`, `,{"not":`, `}]}`, and `{"or":[`, `]}` around the denies when there are several.
 */
const exemptionFrame = (run: DenyRun) => 19 + (run.denies.length > 1 ? FRAME_OF_OR : 0);

/**
 * Partially evaluates the snapshot for `request`, whose principal is known and whose resource is
 * open but for the attributes (and uri) it holds. Follows `evaluate` exactly: within a policy the
 * first matching rule counts, so a deny rule counts only where no earlier allow rule of its policy
 * matches; a counting deny anywhere wins; else a matching allow rule, else the default effects.
 *
 * The condition's JSON text is held to `maxLength` characters as it is built. The rules' own
 * conditions must fit; what may not is the exemption of each run of deny rules by the allow rules
 * of its policy before it (`a deny counts unless an earlier allow holds`), which grows with allow
 * rules times deny runs. A run whose exemption does not fit is stated without it: the plan then
 * denies more than `evaluate` (never less), and says so with `exact: false`. Throws PlanTooLarge
 * when even that does not fit.
 */
export function plan(snapshot: Snapshot, request: DecisionRequest, maxLength = Infinity): Plan {
  /** Every allow residue in order, and as one `or`: what allows. */
  const allowResidues: ConditionTree[] = [];
  const allowing = new JunctionChildren('or');
  /**
   * At least the JSON length of the `or` of every deny residue, the denial of the coarsest plan:
   * summed, since exempting a residue that denies everything brings back those it absorbed.
   */
  let denyingLength = FRAME_OF_OR;
  const runs: DenyRun[] = [];
  let unconditionalAllow: CompiledRule | undefined;
  let policy = -1;
  /** Where the current policy's allow rules start in allowResidues, and how many it has met (counted past the budget too). */
  let policyStart = 0;
  let policyAllowCount = 0;
  /** The current policy's allow rules as one `or`, once a deny rule follows them (most policies have no such rule). */
  let policyAllows: JunctionChildren | undefined;
  /** An earlier allow rule of this policy holds for every resource: its later rules never count. */
  let policySettled = false;
  let tooLarge = false;
  const fallback = planFallback(snapshot);
  const coarsestLength = () => {
    if (fallback.allows === true) return FRAME_OF_CONDITION + denyingLength;
    // With nothing allowing (yet), the plan is `false` whatever denies.
    if (fallback.allows === false) return allowResidues.length === 0 ? 0 : FRAME_OF_CONDITION + denyingLength + allowing.length;
    // With nothing denying (yet), the plan is what allows; with nothing allowing either, the defaults alone.
    const denial = runs.length === 0 ? 0 : FRAME_OF_CONDITION + denyingLength;
    // The defaults join what allows in one `or`: a frame, and a comma after a lone child.
    return denial + (allowResidues.length === 0 ? jsonLength(fallback.allows) : FRAME_OF_OR + allowing.length + 1 + jsonLength(fallback.allows));
  };
  const candidates = rulesFor(snapshot, request.action)?.planCandidates(request);
  for (let rule = candidates?.next(); rule !== undefined; rule = candidates?.next()) {
    if (rule.policyPosition !== policy) {
      policy = rule.policyPosition;
      policyStart = allowResidues.length;
      policyAllowCount = 0;
      policyAllows = undefined;
      policySettled = false;
    } else if (policySettled) {
      continue;
    }
    const demands = residue(rule, request);
    if (demands === false) continue;
    if (rule.denies && demands === true && policyAllowCount === 0) {
      return { kind: 'always_denied', condition: false, reason: rule.decision.reason };
    }
    if (!rule.denies) policyAllowCount++;
    // An allow rule that holds for every resource: the later rules of its policy never count, and are not looked at (budget or not).
    if (!rule.denies && demands === true) policySettled = true;
    // Past the budget, only a deny rule that denies everything can still decide the answer.
    if (tooLarge) continue;
    if (rule.denies) {
      let run = runs.at(-1);
      if (run === undefined || run.exemptFrom !== policyStart || run.exemptTo !== allowResidues.length) {
        if (policyAllows === undefined && allowResidues.length > policyStart) {
          policyAllows = new JunctionChildren('or');
          for (let index = policyStart; index < allowResidues.length; index++) policyAllows.add(allowResidues[index]!);
        }
        run = { denies: [], exemptFrom: policyStart, exemptTo: allowResidues.length, exemptionsLength: policyAllows?.length ?? 0 };
        runs.push(run);
      }
      run.denies.push(demands);
      denyingLength += jsonLength(demands) + 1;
    } else {
      if (demands === true) unconditionalAllow ??= rule;
      allowResidues.push(demands);
      allowing.add(demands);
      policyAllows?.add(demands);
    }
    tooLarge = coarsestLength() > maxLength;
  }
  if (tooLarge || coarsestLength() > maxLength) throw new PlanTooLarge(maxLength);
  let room = maxLength - coarsestLength();
  let exact = true;
  const counting: ConditionTree[] = [];
  for (const run of runs) {
    const exemptionLength = run.exemptionsLength + exemptionFrame(run);
    if (run.exemptTo > run.exemptFrom && exemptionLength <= room) {
      room -= exemptionLength;
      counting.push(and([or(run.denies), not(or(allowResidues.slice(run.exemptFrom, run.exemptTo)))]));
    } else {
      if (run.exemptTo > run.exemptFrom) exact = false;
      counting.push(...run.denies);
    }
  }
  const denied = or(counting);
  const condition = fallback.allows === true ? not(denied) : and([not(denied), or([allowing.result(), fallback.allows])]);
  if (!exact) return coarsePlan(condition);
  if (condition === true) return { kind: 'always_allowed', condition, reason: (unconditionalAllow?.decision ?? fallback.decision).reason };
  if (condition === false) return { kind: 'always_denied', condition, reason: alwaysDeniedReason(fallback.decision, denied, allowResidues.length) };
  return { kind: 'conditional', condition, reason: CONDITIONAL_REASON };
}

/** `{"and":[{"not":` … `}, ` … `]}` around the denial and the allowing; `{"or":[` … `]}`. */
const FRAME_OF_CONDITION = 20;
const FRAME_OF_OR = 9;

export const COARSE_REASON =
  'some deny rules are stated without the earlier allow rules of their policy that exempt resources from them, ' +
  'so some allowed resources do not satisfy the condition (none that is denied does): ask /check about those, ' +
  'or narrow the question with what is known of the resources';

/** A plan that denies more than `evaluate` does: `condition` never holds where it denies. */
function coarsePlan(condition: ConditionTree): Plan {
  const tooLarge = 'the exact plan is too large';
  // Coarsening only adds denials, so the condition is never `true`.
  if (condition === false) return { kind: 'always_denied', condition, reason: `No resource is known to be allowed: ${tooLarge}; ${COARSE_REASON}`, exact: false };
  return { kind: 'conditional', condition, reason: `${CONDITIONAL_REASON}, but not all of them: ${tooLarge}; ${COARSE_REASON}`, exact: false };
}

function alwaysDeniedReason(fallback: Decision, denied: ConditionTree, allowCount: number): string {
  if (denied === true) return 'The deny rules together cover every resource';
  if (allowCount === 0) return fallback.reason;
  return 'Every resource an allow rule would allow is denied by a deny rule';
}
