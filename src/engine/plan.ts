import type { DecisionRequest, ResolvedEntity } from './entity.js';
import { firstFailingCondition, holdsFor, type CompiledCondition, type CompiledRule, type Snapshot } from './compile.js';
import { and, not, or, type ConditionTree } from './condition-tree.js';

export type PlanKind = 'always_allowed' | 'always_denied' | 'conditional';

/** Which resources a principal may act on: `condition` holds exactly for the resources `evaluate` allows. */
export interface Plan {
  kind: PlanKind;
  condition: ConditionTree;
  reason: string;
}

export const CONDITIONAL_REASON = 'Allowed for the resources that satisfy the condition';

/** Whether a condition is about something the caller said it knows of the resource. */
function isKnown(condition: CompiledCondition, resource: ResolvedEntity): boolean {
  const { path } = condition.comparison;
  if (path === 'uri') return resource.uri !== undefined;
  return resource.attributes.has(path.split('.', 2)[1]!);
}

/**
 * What a rule demands of the resource once the principal is known: the principal conditions are
 * decided by the compiled conditions themselves, and so are resource conditions on what is known.
 */
function residue(rule: CompiledRule, request: DecisionRequest): ConditionTree {
  if (firstFailingCondition(rule.principal, request.principal) !== -1) return false;
  const { resource } = request;
  if (resource.uri === undefined && resource.attributes.size === 0) {
    // Nothing is known of the resource (the common plan): every resource condition stays open.
    return rule.resource.length === 1 ? rule.resource[0]!.comparison : and(rule.resource.map((condition) => condition.comparison));
  }
  const open: ConditionTree[] = [];
  for (const condition of rule.resource) {
    if (isKnown(condition, resource)) {
      if (!holdsFor(condition, condition.lookup(resource))) return false;
    } else {
      open.push(condition.comparison);
    }
  }
  return open.length === 1 ? open[0]! : and(open);
}

/**
 * Partially evaluates the snapshot for `request`, whose principal is known and whose resource is
 * open but for the attributes (and uri) it holds. Follows `evaluate` exactly: within a policy the
 * first matching rule counts, so a deny rule counts only where no earlier allow rule of its policy
 * matches; a counting deny anywhere wins; else a matching allow rule, else the default effects.
 */
export function plan(snapshot: Snapshot, request: DecisionRequest): Plan {
  const denying: ConditionTree[] = [];
  const allowing: ConditionTree[] = [];
  let unconditionalAllow: CompiledRule | undefined;
  let policy = -1;
  /** The residues of the allow rules met so far in this policy. */
  const earlierAllows: ConditionTree[] = [];
  /** An earlier allow rule of this policy holds for every resource: its later rules never count. */
  let policySettled = false;
  const candidates = snapshot.rulesByAction.get(request.action)?.planCandidates(request);
  for (let rule = candidates?.next(); rule !== undefined; rule = candidates?.next()) {
    if (rule.policyPosition !== policy) {
      policy = rule.policyPosition;
      if (earlierAllows.length > 0) earlierAllows.length = 0;
      policySettled = false;
    } else if (policySettled) {
      continue;
    }
    const demands = residue(rule, request);
    if (demands === false) continue;
    if (rule.denies) {
      const counts = and([demands, ...earlierAllows.map(not)]);
      if (counts === true) return { kind: 'always_denied', condition: false, reason: rule.decision.reason };
      denying.push(counts);
    } else {
      if (demands === true) {
        unconditionalAllow ??= rule;
        policySettled = true;
      }
      allowing.push(demands);
      earlierAllows.push(demands);
    }
  }
  const denied = or(denying);
  const condition = snapshot.fallback.allowed ? not(denied) : and([not(denied), or(allowing)]);
  if (condition === true) return { kind: 'always_allowed', condition, reason: (unconditionalAllow?.decision ?? snapshot.fallback).reason };
  if (condition === false) return { kind: 'always_denied', condition, reason: alwaysDeniedReason(snapshot, denied, allowing) };
  return { kind: 'conditional', condition, reason: CONDITIONAL_REASON };
}

function alwaysDeniedReason(snapshot: Snapshot, denied: ConditionTree, allowing: readonly ConditionTree[]): string {
  if (denied === true) return 'The deny rules together cover every resource';
  if (allowing.length === 0) return snapshot.fallback.reason;
  return 'Every resource an allow rule would allow is denied by a deny rule';
}
