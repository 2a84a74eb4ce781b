/** The engine's answer to a check, as `/check` gives it. */
export interface Decision {
  readonly allowed: boolean;
  readonly reason: string;
}

/** What gave a decision: a rule of a policy, the policies' default effect, or the absence of policies. */
export type Decider =
  | { kind: 'rule'; policy: string; rule: string; effect: 'allow' | 'deny' }
  | { kind: 'default'; effect: 'allow' | 'deny' }
  | { kind: 'no_policies' };

/** Every decision the engine builds is one shared, frozen object per decider: this says which. */
const deciders = new WeakMap<Decision, Decider>();
/** And its answer as JSON, written once with it: an answer is a join of these texts, not serialized again per check. */
const answers = new WeakMap<Decision, string>();

/** A decision's answer (no explanation) as JSON, as the check routes' response schema writes it: its two fields, in this order. */
const answerOf = ({ allowed, reason }: Decision): string => JSON.stringify({ allowed, reason });

function decided(allowed: boolean, reason: string, decider: Decider): Decision {
  const decision = Object.freeze({ allowed, reason });
  deciders.set(decision, Object.freeze(decider));
  answers.set(decision, answerOf(decision));
  return decision;
}

/** Every decision the engine can return without naming a rule; shared, frozen, never rebuilt. */
export const DENIED_BY_DEFAULT: Decision = decided(false, 'Action denied by default effect', { kind: 'default', effect: 'deny' });
export const ALLOWED_BY_DEFAULT: Decision = decided(true, 'Action allowed by default effect', { kind: 'default', effect: 'allow' });
export const DENIED_WITHOUT_POLICIES: Decision = decided(false, 'Action denied by default because there are no policies', { kind: 'no_policies' });

/** A denial by the default effects with its own reason (see scope.ts). */
export const defaultDenial = (reason: string): Decision => decided(false, reason, { kind: 'default', effect: 'deny' });

export function ruleDecision(effect: 'allow' | 'deny', rule: string, policy: string): Decision {
  const verb = effect === 'allow' ? 'allowed' : 'denied';
  return decided(effect === 'allow', `Rule ${rule} ${verb} the action in policy ${policy}`, { kind: 'rule', policy, rule, effect });
}

/**
 * Which rule or default gave `decision`, for any decision `evaluate` returned; undefined for a
 * decision made elsewhere (an attribute conflict's denial, a decision copied from JSON).
 */
export const deciderOf = (decision: Decision): Decider | undefined => deciders.get(decision);

/**
 * `decision`'s answer as JSON, `{"allowed":…,"reason":"…"}` without its explanation: the text written
 * when the engine built it, or (a decision made elsewhere: an attribute conflict's denial) written now.
 */
export const decisionJson = (decision: Decision): string => answers.get(decision) ?? answerOf(decision);

/** The answers to a list of checks as one JSON array, joined from each decision's text. */
export function decisionsJson(decisions: readonly Decision[]): string {
  let json = '[';
  for (let index = 0; index < decisions.length; index++) json += (index === 0 ? '' : ',') + decisionJson(decisions[index]!);
  return json + ']';
}
