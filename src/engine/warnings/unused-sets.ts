import type { Policy } from '../../schemas/policy.js';
import type { Location, ValidationIssue } from '../../schemas/errors.js';
import { setsReferred } from '../condition-items.js';
import { SIDES, conditionsOf, type Checking } from './shared.js';

/** The condition sets of `policy` that none of its rules refers to: a name misspelled where it was meant, or a set left over. */
export function unusedSets(policy: Policy, at: Location, checking: Checking): ValidationIssue[] {
  const defined = Object.keys(policy.condition_sets ?? {});
  if (defined.length === 0) return [];
  const used = new Set<string>();
  for (const rule of policy.rules) {
    for (const side of SIDES) {
      const items = conditionsOf(rule, side);
      checking.step(items.length);
      for (const [name] of setsReferred(items)) used.add(name);
    }
  }
  return defined
    .filter((name) => !used.has(name))
    .map((name) => ({ loc: [...at, 'condition_sets', name], msg: `no rule of this policy refers to condition set '${name}'`, type: 'unused_condition_set' }));
}
