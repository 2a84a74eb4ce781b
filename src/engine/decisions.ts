import type { ResolvedEntity } from './entity.js';

/** A check as the engine decides it: both entities resolved, the action and, when sent, its attributes and the context. */
export interface DecisionRequest {
  principal: ResolvedEntity;
  resource: ResolvedEntity;
  action: string;
  /** The action's attributes; absent when the check sent none. */
  actionAttributes?: ReadonlyMap<string, unknown>;
  /** The attributes of the request itself (time, address, channel...); absent when the check sent none. */
  context?: ReadonlyMap<string, unknown>;
}

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

function decided(allowed: boolean, reason: string, decider: Decider): Decision {
  const decision = Object.freeze({ allowed, reason });
  deciders.set(decision, Object.freeze(decider));
  return decision;
}

/** Every decision the engine can return without naming a rule; shared, frozen, never rebuilt. */
export const DENIED_BY_DEFAULT: Decision = decided(false, 'Action denied by default effect', { kind: 'default', effect: 'deny' });
export const ALLOWED_BY_DEFAULT: Decision = decided(true, 'Action allowed by default effect', { kind: 'default', effect: 'allow' });
export const DENIED_WITHOUT_POLICIES: Decision = decided(false, 'Action denied by default because there are no policies', { kind: 'no_policies' });

export function ruleDecision(effect: 'allow' | 'deny', rule: string, policy: string): Decision {
  const verb = effect === 'allow' ? 'allowed' : 'denied';
  return decided(effect === 'allow', `Rule ${rule} ${verb} the action in policy ${policy}`, { kind: 'rule', policy, rule, effect });
}

/**
 * Which rule or default gave `decision`, for any decision `evaluate` returned; undefined for a
 * decision made elsewhere (an attribute conflict's denial, a decision copied from JSON).
 */
export const deciderOf = (decision: Decision): Decider | undefined => deciders.get(decision);
