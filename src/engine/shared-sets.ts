import type { ConditionSetReference, Policy } from '../schemas/policy.js';
import type { Location, ValidationIssue } from '../schemas/errors.js';
import { conditionCount, setItems, setsReferred } from './condition-items.js';
import { CONDITION_LISTS, tooManyConditions } from './validate.js';

// Sets shared by policies: a rule refers to another policy's set with `{"set": …, "from": <policy>}`.
// A write is held to the set of policies it joins here; evaluation fails closed on a reference that
// a later write (or a race between two writers) left without its set (see ConditionCompiler.set).

/** The most names a message lists. */
const MAX_NAMED = 10;
const named = (names: readonly string[]) => `${names.slice(0, MAX_NAMED).join(', ')}${names.length > MAX_NAMED ? ', …' : ''}`;

/** Each reference of `policy` to another policy's set: the set's name, that policy's, and where the reference stands under `at`. */
function* sharedReferences(policy: Policy, at: Location): Generator<{ set: string; from: string; loc: Location }> {
  for (const [ruleIndex, rule] of policy.rules.entries()) {
    for (const [list] of CONDITION_LISTS) {
      for (const [set, where, from] of setsReferred(rule[list] ?? [])) {
        if (from !== undefined && from !== policy.name) yield { set, from, loc: [...at, 'rules', ruleIndex, list, ...where, 'from'] };
      }
    }
  }
}

/** Whether a rule of `policy` refers to another policy's set. */
export const takesSharedSets = (policy: Policy): boolean => !sharedReferences(policy, []).next().done;

/** The policies whose sets `policy`'s rules take. */
export const lendersTo = (policy: Policy): string[] => [...new Set(Array.from(sharedReferences(policy, []), ({ from }) => from))];

/**
 * Where `policy` refers to a set of another policy that `policies` (the set it joins, itself aside)
 * does not define, and its rules that the sets they take make longer than `maxConditionsPerRule`.
 */
export function sharedSetIssues(policy: Policy, policies: readonly Policy[], at: Location, maxConditionsPerRule: number): ValidationIssue[] {
  const byName = new Map(policies.filter((other) => other.name !== policy.name).map((other) => [other.name, other]));
  const issues: ValidationIssue[] = [];
  // A set out of reach counts one: it is refused below.
  const setSize = ({ set, from }: ConditionSetReference) => conditionCount(setItems(from === undefined || from === policy.name ? policy : (byName.get(from) ?? {}), set) ?? [], () => 1) || 1;
  for (const [ruleIndex, rule] of policy.rules.entries()) {
    const tooMany = tooManyConditions(rule, setSize, maxConditionsPerRule, [...at, 'rules', ruleIndex]);
    if (tooMany !== undefined) issues.push({ ...tooMany, msg: `${tooMany.msg}, the sets it takes from other policies counted` });
  }
  for (const { set, from, loc } of sharedReferences(policy, at)) {
    const owner = byName.get(from);
    if (owner === undefined) issues.push({ loc, msg: `there is no policy named '${from}' to take condition set '${set}' from: name a policy by its stored name`, type: 'value_error' });
    else if (setItems(owner, set) === undefined) {
      const sets = Object.keys(owner.condition_sets ?? {});
      const known = sets.length === 0 ? 'it defines none' : `its sets: ${named(sets)}`;
      issues.push({ loc, msg: `policy '${from}' has no condition set named '${set}' (${known})`, type: 'value_error' });
    }
  }
  return issues;
}

/**
 * What other policies of `policies` take from policy `name` that `replacement` (its next version;
 * undefined when it is deleted) would no longer define: "<policy> refers to <set>" for each.
 */
export function setsStillTaken(name: string, replacement: Policy | undefined, policies: readonly Policy[]): string[] {
  const taken: string[] = [];
  for (const policy of policies) {
    if (policy.name === name) continue;
    for (const { set, from } of sharedReferences(policy, [])) {
      if (from === name && (replacement === undefined || setItems(replacement, set) === undefined)) taken.push(`policy '${policy.name}' refers to its set '${set}'`);
    }
  }
  return [...new Set(taken)];
}

/** The refusal of a write that would take away sets other policies refer to (see setsStillTaken). */
export const setsStillTakenMessage = (name: string, taken: readonly string[], write: string) =>
  `Policy '${name}' cannot be ${write}: ${named(taken)}. Change those policies first, or keep the sets they take`;
