import type { Policy } from '../../schemas/policy.js';
import type { Location, ValidationIssue } from '../../schemas/errors.js';
import { setsReferred } from '../condition-items.js';
import { SIDES, conditionsOf, type Checking } from './shared.js';

/**
 * The condition sets of `policy` that neither its rules nor another policy's (`usedByOthers`, by
 * `from`) refer to: a name misspelled where it was meant, or a set left over.
 */
export function unusedSets(policy: Policy, at: Location, checking: Checking, usedByOthers: ReadonlySet<string> = new Set()): ValidationIssue[] {
  const defined = Object.keys(policy.condition_sets ?? {});
  if (defined.length === 0) return [];
  const used = new Set<string>(usedByOthers);
  for (const rule of policy.rules) {
    for (const side of SIDES) {
      const items = conditionsOf(rule, side);
      checking.step(items.length);
      for (const [name, , from] of setsReferred(items)) if (from === undefined || from === policy.name) used.add(name);
    }
  }
  return defined
    .filter((name) => !used.has(name))
    .map((name) => ({ loc: [...at, 'condition_sets', name], msg: `no rule of this policy or another refers to condition set '${name}'`, type: 'unused_condition_set' }));
}

/** For each policy whose sets others share, the names of those they refer to (by `from`). */
export function setsSharedWithOthers(policies: readonly Policy[]): Map<string, Set<string>> {
  const shared = new Map<string, Set<string>>();
  for (const policy of policies) {
    for (const rule of policy.rules) {
      for (const side of SIDES) {
        for (const [name, , from] of setsReferred(conditionsOf(rule, side))) {
          if (from === undefined || from === policy.name) continue;
          let names = shared.get(from);
          if (names === undefined) shared.set(from, (names = new Set()));
          names.add(name);
        }
      }
    }
  }
  return shared;
}
