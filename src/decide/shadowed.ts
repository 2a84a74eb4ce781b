import { decisionOf } from './kernel.js';
import type { Decision, DecisionRequest, Snapshot } from '../engine/index.js';

// The shadow policies' view of decisions: which checks they decide (a sample), and how their answer
// compares with the live one. The front decides its own checks so (ShadowDecisions), and a worker a
// pooled bulk's, sending back what ShadowedBulk holds.

export type ShadowOutcome = 'agree' | 'allow_to_deny' | 'deny_to_allow';

/** Disagreements a shadow report keeps, newest first, and the most a worker sends back of one bulk. */
export const MAX_DISAGREEMENTS = 100;

/** Whether a check is among the share (`samplePercent`) the shadows decide. */
export const sampled = (samplePercent: number): boolean => samplePercent >= 100 || Math.random() * 100 < samplePercent;

export const shadowOutcome = (live: Decision, shadow: Decision): ShadowOutcome => (shadow.allowed === live.allowed ? 'agree' : live.allowed ? 'allow_to_deny' : 'deny_to_allow');

/**
 * What the shadows said of a bulk's sampled checks: counted by outcome, and the last MAX_DISAGREEMENTS
 * checks they disagreed on (the front decides those again to explain them: a decision's explanation
 * reads what evaluated it, which does not cross threads).
 */
export interface ShadowedBulk {
  counts: Record<ShadowOutcome, number>;
  disagreements: DecisionRequest[];
}

/** The sampled checks of a bulk decided by `shadow` beside their live `decisions` (index for index). */
export function shadowedBulk(shadow: Snapshot, requests: readonly DecisionRequest[], decisions: readonly Decision[], samplePercent: number): ShadowedBulk {
  const counts: Record<ShadowOutcome, number> = { agree: 0, allow_to_deny: 0, deny_to_allow: 0 };
  const disagreements: DecisionRequest[] = [];
  requests.forEach((request, index) => {
    if (!sampled(samplePercent)) return;
    const outcome = shadowOutcome(decisions[index]!, decisionOf(shadow, request));
    counts[outcome]++;
    if (outcome === 'agree') return;
    disagreements.push(request);
    if (disagreements.length > MAX_DISAGREEMENTS) disagreements.shift();
  });
  return { counts, disagreements };
}
