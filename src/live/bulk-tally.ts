import type { Decision } from '../engine/index.js';
import type { CheckInput } from '../requests/check-request.js';
import type { BulkTally } from './live-counters.js';
import { countedDecider } from './rule-tally.js';

/**
 * What a worker thread tells the front about a bulk it decided: how many each rule or default
 * decided, and the last `keepDenials` denied items as they were sent, with what each broke of the
 * attribute schemas (`violations`, by item, when any did).
 */
export function tallyBulk(inputs: readonly CheckInput[], decisions: readonly Decision[], keepDenials: number, violations?: readonly (readonly string[])[]): BulkTally {
  const byDecision = new Map<Decision, number>();
  let allowed = 0;
  for (const decision of decisions) {
    byDecision.set(decision, (byDecision.get(decision) ?? 0) + 1);
    if (decision.allowed) allowed++;
  }
  const denials: BulkTally['denials'] = [];
  for (let index = decisions.length - 1; index >= 0 && denials.length < keepDenials; index--) {
    const decision = decisions[index]!;
    if (!decision.allowed) denials.push({ input: inputs[index]!, reason: decision.reason, violations: violations?.[index] });
  }
  return {
    allowed,
    denied: decisions.length - allowed,
    denials: denials.reverse(),
    deciders: [...byDecision].map(([decision, count]) => ({ decider: countedDecider(decision), decisions: count })),
  };
}
