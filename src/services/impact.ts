import { decisionOf } from '../decide/kernel.js';
import { maskedCheck, maskedExplanation } from '../decision-log/masked-view.js';
import type { DecisionLogMask } from '../decision-log/mask.js';
import { hostname } from 'node:os';
import { AnswerBudget, deciderOf, explain, ExplanationTooLarge, type Decision, type DecisionRequest, type Snapshot } from '../engine/index.js';
import { resourceTypeOf } from '../engine/scope.js';
import type { RecentCheck } from './recent-checks.js';
import { MAX_IMPACT_SAMPLE, type ImpactAnswer } from '../schemas/impact.js';

/** Checks replayed between two pauses of the event loop. */
const SLICE_CHECKS = 200;

type Flips = ImpactAnswer['changed'];

/** An impact answer but what the service adds of where the checks came from. */
export type ImpactReport = Omit<ImpactAnswer, 'source' | 'recent_checks' | 'decision_log'>;

/** What decided: `<policy>/<rule>`, `default allow`, `default deny` or `no policies`. */
function deciderName(decision: Decision): string {
  const decider = deciderOf(decision);
  if (decider === undefined) return decision.reason;
  if (decider.kind === 'rule') return `${decider.policy}/${decider.rule}`;
  return decider.kind === 'default' ? `default ${decider.effect}` : 'no policies';
}

/** A uri's type (before its first colon), or `(none)` for a check that named no uri or one without a type. */
const typeOf = (uri: string | undefined) => (uri === undefined ? '(none)' : (resourceTypeOf(uri) ?? '(none)'));

/** The check as the server read it, as JSON: uris, attributes after the registry merge, action, context, the time when it was read. */
export function checkAsRead(request: DecisionRequest): Record<string, unknown> {
  const entity = ({ uri, attributes }: DecisionRequest['principal']) => ({ ...(uri !== undefined && { uri }), attributes: Object.fromEntries(attributes) });
  return {
    principal: entity(request.principal),
    resource: entity(request.resource),
    action: request.action,
    ...(request.actionAttributes !== undefined && { action_attributes: Object.fromEntries(request.actionAttributes) }),
    ...(request.context !== undefined && { context: Object.fromEntries(request.context) }),
    ...(request.time !== undefined && { time: request.time }),
  };
}

/**
 * Decides each of `checks` by the policies in force (`current`) and by those proposed, and reports
 * the checks whose decision changes: counted by direction, grouped by action, by what decided before
 * and after, and by the types of the principal and the resource, with a sample explained both ways
 * (held to `maxAnswerSize`). A generator that pauses between slices of checks: run it with
 * runInSlices.
 */
export function* replayImpact(current: Snapshot, proposed: Snapshot, checks: readonly RecentCheck[], maxAnswerSize: number, mask: DecisionLogMask): Generator<void, ImpactReport> {
  const changed: Flips = { allow_to_deny: 0, deny_to_allow: 0 };
  const groups = { action: new Map<string, Flips>(), rule: new Map<string, Flips & { before: string; after: string }>(), principal: new Map<string, Flips>(), resource: new Map<string, Flips>() };
  const sample: ImpactReport['sample'] = [];
  const budget = new AnswerBudget(maxAnswerSize);
  let sampleCut: string | undefined;
  const count = <Value extends Flips>(map: Map<string, Value>, key: string, direction: keyof Flips, make: () => Value) => {
    let flips = map.get(key);
    if (flips === undefined) map.set(key, (flips = make()));
    flips[direction]++;
  };
  for (let index = 0; index < checks.length; index++) {
    if (index > 0 && index % SLICE_CHECKS === 0) yield;
    const { request } = checks[index]!;
    const before = decisionOf(current, request);
    const after = decisionOf(proposed, request);
    if (before.allowed === after.allowed) continue;
    const direction: keyof Flips = before.allowed ? 'allow_to_deny' : 'deny_to_allow';
    changed[direction]++;
    const flips = () => ({ allow_to_deny: 0, deny_to_allow: 0 });
    count(groups.action, request.action, direction, flips);
    const [beforeName, afterName] = [deciderName(before), deciderName(after)];
    count(groups.rule, JSON.stringify([beforeName, afterName]), direction, () => ({ before: beforeName, after: afterName, ...flips() }));
    count(groups.principal, typeOf(request.principal.uri), direction, flips);
    count(groups.resource, typeOf(request.resource.uri), direction, flips);
    if (sample.length < MAX_IMPACT_SAMPLE && sampleCut === undefined) {
      try {
        const check = maskedCheck(checkAsRead(request), mask);
        if (!budget.spend(JSON.stringify(check).length)) throw new ExplanationTooLarge(maxAnswerSize);
        // An explanation is a plain JSON object, as the schema's open object types it.
        const explained = (snapshot: Snapshot, decision: Decision) => ({ ...decision, explain: maskedExplanation(explain(snapshot, request, decision, budget) as unknown as Record<string, unknown>, mask) });
        sample.push({ check, before: explained(current, before), after: explained(proposed, after) });
      } catch (error) {
        if (!(error instanceof ExplanationTooLarge)) throw error;
        sampleCut = `the explanations of more changed checks would pass --max-answer-size (${maxAnswerSize} characters)`;
      }
    }
  }
  const listed = (map: Map<string, Flips>) => [...map].map(([key, flips]) => ({ key, ...flips })).sort(byChanges);
  return {
    process: { pid: process.pid, hostname: hostname() },
    replayed: checks.length,
    from: checks.length === 0 ? null : new Date(checks[0]!.at).toISOString(),
    to: checks.length === 0 ? null : new Date(checks.at(-1)!.at).toISOString(),
    changed,
    by_action: listed(groups.action),
    by_rule: [...groups.rule.values()].sort(byChanges),
    by_principal_type: listed(groups.principal),
    by_resource_type: listed(groups.resource),
    sample,
    ...(sampleCut !== undefined && { sample_cut: sampleCut }),
  };
}

/** Most changes first. */
const byChanges = (one: Flips, other: Flips) => other.allow_to_deny + other.deny_to_allow - (one.allow_to_deny + one.deny_to_allow);
