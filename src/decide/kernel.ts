import { evaluate, withExplanation, type AnswerBudget, type Decision, type DecisionRequest, type Snapshot } from '../engine/index.js';
import { withViolations } from '../attribute-schemas/enforcement.js';

/**
 * One read check decided, wherever it is (the front thread, or a worker of the pool): `decision`, as
 * the engine made it (the object whose rule or default decided it, which the live view and the
 * decision log are told of), and `answer`, what the client is answered: the decision, or with
 * `explanations` its explanation too, with what the check broke of the attribute schemas (`violations`,
 * under warn). Throws ExplanationTooLarge once the call's explanations outgrow their budget.
 *
 * The one place a decision is made: resolving a check (the registry, on the front), holding it to the
 * schemas (counted on the front, reported by a worker) and telling observers differ by where it runs,
 * and are done around this.
 */
export function decideResolved(
  snapshot: Snapshot,
  request: DecisionRequest,
  violations: readonly string[] | undefined,
  explanations: AnswerBudget | undefined,
): { decision: Decision; answer: Decision } {
  const decision = evaluate(snapshot, request);
  if (explanations === undefined) return { decision, answer: decision };
  const explained = withExplanation(snapshot, request, decision, explanations);
  return { decision, answer: violations === undefined ? explained : withViolations(explained, violations) };
}

/**
 * What `snapshot` decides for a resolved check, told to nobody and explained to nobody: a search's
 * candidate, a replay of a kept check against the live or a proposed set (impact), a shadow set beside
 * the live one, a policy test's case. The same evaluation as decideResolved's.
 */
export const decisionOf = (snapshot: Snapshot, request: DecisionRequest): Decision => evaluate(snapshot, request);
