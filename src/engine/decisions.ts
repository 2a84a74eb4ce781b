import type { Decision } from './entity.js';

/** Every decision the engine can return without naming a rule; shared, frozen, never rebuilt. */
export const DENIED_BY_DEFAULT: Decision = Object.freeze({ allowed: false, reason: 'Action denied by default effect' });
export const ALLOWED_BY_DEFAULT: Decision = Object.freeze({ allowed: true, reason: 'Action allowed by default effect' });
export const DENIED_WITHOUT_POLICIES: Decision = Object.freeze({
  allowed: false,
  reason: 'Action denied by default because there are no policies',
});

export function ruleDecision(effect: 'allow' | 'deny', rule: string, policy: string): Decision {
  const verb = effect === 'allow' ? 'allowed' : 'denied';
  return Object.freeze({ allowed: effect === 'allow', reason: `Rule ${rule} ${verb} the action in policy ${policy}` });
}
