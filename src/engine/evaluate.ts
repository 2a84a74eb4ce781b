import type { Decision } from './decisions.js';
import type { DecisionRequest } from './entity.js';
import { fallbackFor, ruleMatches, rulesFor, type Snapshot } from './compile.js';

/**
 * Decides one request. Each policy contributes its first matching rule; a policy whose first match
 * denies wins over everything (the earliest such policy is named), then the earliest policy whose
 * first match allows, then the policies' default effects.
 */
export function evaluate(snapshot: Snapshot, request: DecisionRequest): Decision {
  const rules = rulesFor(snapshot, request.action);
  if (rules === undefined) return fallbackFor(snapshot, request);
  const candidates = rules.candidates(request);
  let allowing: Decision | undefined;
  let settledPolicy = -1;
  for (let rule = candidates.next(); rule !== undefined; rule = candidates.next()) {
    if (rule.policyPosition === settledPolicy) continue;
    if (!ruleMatches(rule, request)) continue;
    if (rule.denies) return rule.decision;
    settledPolicy = rule.policyPosition;
    allowing ??= rule.decision;
  }
  return allowing ?? fallbackFor(snapshot, request);
}
