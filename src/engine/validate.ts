import type { Condition, ConditionSetReference, Policy, Rule } from '../schemas/policy.js';
import type { Location, ValidationIssue } from '../schemas/errors.js';
import type { RequestPart } from './entity.js';
import { OPERATOR_DEFINITIONS } from './operators/index.js';
import { conditionCount, eachCondition, setItems, setsReferred } from './condition-items.js';
import { parsePath } from './paths.js';
import { NAMED_VALUE, parseReference } from './references.js';
import { slugify } from './slug.js';
import { storableValueIssues } from './value-limits.js';


/** How big one policy may be. */
export interface PolicyLimits {
  maxRulesPerPolicy: number;
  maxConditionsPerRule: number;
}

const CONTROL_CHARACTER = /\p{Cc}/u;

/**
 * Paths and actions are matched and shared by their text: a control character in them is never
 * meant, and invisible wherever they are shown.
 */
function controlCharacterIssues(text: string, what: string, at: Location): ValidationIssue[] {
  const found = CONTROL_CHARACTER.exec(text);
  if (found === null) return [];
  const code = found[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
  return [{ loc: at, msg: `${what} must not hold control characters (U+${code} at index ${found.index})`, type: 'value_error' }];
}

/** Each list of conditions a rule may have, and the part of the check its paths lead into. */
export const CONDITION_LISTS = [
  ['principal_conditions', 'principal'],
  ['resource_conditions', 'resource'],
  ['action_conditions', 'action'],
  ['context_conditions', 'context'],
] as const satisfies readonly (readonly [string, RequestPart])[];

function conditionIssues(condition: Condition, part: RequestPart, at: Location): ValidationIssue[] {
  const issues = controlCharacterIssues(condition.path, 'path', [...at, 'path']);
  const path = parsePath(condition.path, NAMED_VALUE[part]);
  if ('error' in path) issues.push({ loc: [...at, 'path'], msg: path.error, type: 'value_error' });
  const anchored = OPERATOR_DEFINITIONS[condition.operator].anchored !== undefined;
  if (condition.value_from !== undefined) {
    issues.push(...referenceIssues(condition, [...at, 'value_from']));
    if (!anchored || issues.length > 0) return issues;
  }
  issues.push(...storableValueIssues(condition.value, [...at, 'value']));
  const valueProblem = OPERATOR_DEFINITIONS[condition.operator].checkValue(condition.value);
  if (valueProblem !== undefined) {
    issues.push({ loc: [...at, 'value'], msg: `operator '${condition.operator}' ${valueProblem}`, type: 'value_error' });
  }
  return issues;
}

/** What is wrong with a condition's `value_from`. */
function referenceIssues(condition: Condition, at: Location): ValidationIssue[] {
  const issue = (msg: string): ValidationIssue[] => [{ loc: at, msg, type: 'value_error' }];
  const { anchored } = OPERATOR_DEFINITIONS[condition.operator];
  if (anchored === undefined && condition.value !== undefined) return issue("give either 'value' or 'value_from', not both");
  if (anchored !== undefined && condition.value !== undefined && anchored.defaultReference(condition.value) === undefined) {
    return issue(`operator '${condition.operator}' takes its anchor from 'value_from' or from its value's 'of', not both`);
  }
  const refused = OPERATOR_DEFINITIONS[condition.operator].refusesValueFrom;
  if (refused !== undefined) return issue(`operator '${condition.operator}' takes no value_from: ${refused}`);
  const control = controlCharacterIssues(condition.value_from!, 'value_from', at);
  if (control.length > 0) return control;
  const reference = parseReference(condition.value_from!);
  return 'error' in reference ? issue(reference.error) : [];
}

function slugIssue(name: string, at: Location): ValidationIssue[] {
  return slugify(name) === ''
    ? [{ loc: at, msg: `name '${name}' has no letters or digits to make a slug from`, type: 'value_error' }]
    : [];
}

/**
 * Checks what JSON Schema cannot: paths, operator/value pairs, names that slugify to nothing, and
 * the size limits. `at` is where the policy sits in the request (e.g. `['body']`).
 */
export function policyIssues(policy: Policy, at: Location, limits: PolicyLimits): ValidationIssue[] {
  if (policy.rules.length > limits.maxRulesPerPolicy) {
    return [{ loc: [...at, 'rules'], msg: `List should have at most ${limits.maxRulesPerPolicy} rules`, type: 'too_long' }];
  }
  const issues = slugIssue(policy.name, [...at, 'name']);
  if (typeof policy.shadow === 'string') {
    issues.push(...slugIssue(policy.shadow, [...at, 'shadow']));
    if (slugify(policy.shadow) === slugify(policy.name)) issues.push({ loc: [...at, 'shadow'], msg: 'a shadow stands in for another policy: name a live policy, or give true', type: 'value_error' });
  }
  // A set's paths are those of the principal and the resource (`uri`, `attributes.…`): it may stand in any list.
  const setSizes = new Map<string, number>();
  for (const [name, items] of Object.entries(policy.condition_sets ?? {})) {
    setSizes.set(name, conditionCount(items));
    for (const [condition, where] of eachCondition(items)) issues.push(...conditionIssues(condition, 'principal', [...at, 'condition_sets', name, ...where]));
  }
  // Another policy's set counts at least one here, and its size where the set of policies is known (see sharedSetIssues).
  const setSize = ({ set, from }: ConditionSetReference) => (from === undefined || from === policy.name ? (setSizes.get(set) ?? 0) : 1);
  policy.rules.forEach((rule, ruleIndex) => {
    const ruleAt = [...at, 'rules', ruleIndex];
    issues.push(...slugIssue(rule.name, [...ruleAt, 'name']));
    rule.actions.forEach((action, index) => issues.push(...controlCharacterIssues(action, 'an action', [...ruleAt, 'actions', index])));
    const tooMany = tooManyConditions(rule, setSize, limits.maxConditionsPerRule, ruleAt);
    if (tooMany !== undefined) {
      issues.push(tooMany);
      return;
    }
    for (const [list, part] of CONDITION_LISTS) {
      for (const [condition, where] of eachCondition(rule[list] ?? [])) issues.push(...conditionIssues(condition, part, [...ruleAt, list, ...where]));
      // Another policy's sets are looked for where the set of policies is known (see sharedSetIssues).
      for (const [name, where, from] of setsReferred(rule[list] ?? [])) {
        if ((from === undefined || from === policy.name) && setItems(policy, name) === undefined) issues.push(unknownSetIssue(policy, name, [...ruleAt, list, ...where, 'set']));
      }
    }
  });
  return issues;
}

/** The refusal of `rule` when its conditions, each set's counted as `setSize` says, are more than `max`. */
export function tooManyConditions(rule: Rule, setSize: (reference: ConditionSetReference) => number, max: number, at: Location): ValidationIssue | undefined {
  const otherConditions = conditionCount(rule.action_conditions ?? [], setSize) + conditionCount(rule.context_conditions ?? [], setSize);
  if (conditionCount(rule.principal_conditions, setSize) + conditionCount(rule.resource_conditions, setSize) + otherConditions <= max) return undefined;
  const together = otherConditions === 0 ? 'principal and resource together' : 'principal, resource, action and context together';
  return { loc: at, msg: `a rule may have at most ${max} conditions, ${together}`, type: 'too_long' };
}

/** The most set names an unknown set's message lists. */
const MAX_NAMED_SETS = 10;

function unknownSetIssue(policy: Policy, name: string, at: Location): ValidationIssue {
  const names = Object.keys(policy.condition_sets ?? {});
  const known = names.length === 0 ? 'it defines none' : `its sets: ${names.slice(0, MAX_NAMED_SETS).join(', ')}${names.length > MAX_NAMED_SETS ? ', …' : ''}`;
  return { loc: at, msg: `the policy has no condition set named '${name}' (${known}): define it in condition_sets`, type: 'value_error' };
}

/** The policy as stored: names slugified, a rule sent without a description given null, everything else exactly as sent. */
export function normalizePolicy(policy: Policy): Policy {
  return {
    version: policy.version,
    name: slugify(policy.name),
    description: policy.description,
    ...(policy.resource_types === undefined ? {} : { resource_types: policy.resource_types }),
    ...(policy.condition_sets === undefined ? {} : { condition_sets: policy.condition_sets }),
    rules: policy.rules.map((rule) => ({
      name: slugify(rule.name),
      description: rule.description ?? null,
      effect: rule.effect,
      principal_conditions: rule.principal_conditions,
      resource_conditions: rule.resource_conditions,
      // Only when there are some: a rule without them is stored as it was before they existed.
      ...(rule.action_conditions?.length ? { action_conditions: rule.action_conditions } : {}),
      ...(rule.context_conditions?.length ? { context_conditions: rule.context_conditions } : {}),
      actions: rule.actions,
    })),
    default_effect: policy.default_effect,
    // A shadow names the live policy it stands in for by its slug, as policies are stored.
    ...(policy.shadow === undefined ? {} : { shadow: policy.shadow === true ? true : slugify(policy.shadow) }),
  };
}
