import type { Policy } from '../../schemas/policy.js';
import type { Location, ValidationIssue } from '../../schemas/errors.js';
import { ConditionCompiler } from '../compile.js';
import { AnswerBudget } from '../answer-budget.js';
import { Checking, type CompiledRuleConditions, ReportStopped, VALIDATION_WORK_LIMIT, compileRule } from './shared.js';
import { neverMatches } from './contradictions.js';
import { RulesByAction, duplicates, shadowing } from './overlap.js';
import { ActionIndex, lonelyActions } from './typos.js';
import { omissionWarnings } from './omissions.js';
import { substringMembership } from './substring-membership.js';
import { setsSharedWithOthers, unusedSets } from './unused-sets.js';
import { sharedSets } from '../condition-items.js';

// The report of what is valid but probably not meant: every analysis, rule by rule, held to its
// budget of work and length, in slices.

/**
 * What is valid but probably not meant, in the policies at `checked` (positions in `policies`, the
 * whole set in creation order): rules that can never match, rules that never decide, actions that
 * look like typos of another policy's, duplicate conditions, deny rules a request escapes by
 * leaving an attribute out, `contains` meant as membership that is a substring test on a string,
 * condition sets no rule refers to. Reasons on the compiled conditions that evaluation uses. `locate(i)`
 * says where policy i sits in the request. The report is held to `maxLength` characters of JSON
 * and its checks to `workLimit` steps: past either, it stops with a last warning of type
 * `incomplete` saying so. It pauses (yields) between rules after each slice of work, so that a
 * caller can let other work run meanwhile; the result is the generator's return value.
 */
export function* reportWarnings(
  policies: readonly Policy[],
  checked: readonly number[],
  locate: (index: number) => Location,
  { maxLength = Infinity, workLimit = VALIDATION_WORK_LIMIT } = {},
): Generator<void, ValidationIssue[], void> {
  const checking = new Checking(new AnswerBudget(maxLength), workLimit);
  const compiler = new ConditionCompiler();
  const compiled = new Map<number, readonly CompiledRuleConditions[]>();
  const reach = sharedSets(policies);
  const compiledOf = (policyIndex: number) => {
    let rules = compiled.get(policyIndex);
    const sets = reach(policies[policyIndex]!);
    if (rules === undefined) compiled.set(policyIndex, (rules = policies[policyIndex]!.rules.map((rule) => compileRule(sets, rule, compiler))));
    return rules;
  };
  const sharedUse = setsSharedWithOthers(policies);
  const actions = new ActionIndex(policies);
  const escapesByOmission = omissionWarnings(policies, compiledOf);
  const warnings: ValidationIssue[] = [];
  try {
    for (const policyIndex of checked) {
      checking.report(warnings, unusedSets(policies[policyIndex]!, locate(policyIndex), checking, sharedUse.get(policies[policyIndex]!.name)));
      const rules = compiledOf(policyIndex);
      const earlierRules = new RulesByAction();
      for (const [ruleIndex, rule] of rules.entries()) {
        const at = [...locate(policyIndex), 'rules', ruleIndex];
        checking.step(rule.sides.principal_conditions.length + rule.sides.resource_conditions.length);
        checking.report(warnings, neverMatches(rule, at, checking));
        checking.report(warnings, shadowing(rules, ruleIndex, earlierRules, at, checking));
        earlierRules.add(rule, ruleIndex);
        checking.report(warnings, lonelyActions(rule.rule, policyIndex, actions, at, checking));
        checking.report(warnings, duplicates(rule, at));
        checking.report(warnings, substringMembership(rule, at));
        checking.report(warnings, escapesByOmission.of({ ...rule, policy: policyIndex, index: ruleIndex }, at));
        // A pause between rules, once a slice of work is done: whoever runs the report may let others run.
        if (checking.sliceDone()) yield;
      }
    }
    checking.report(warnings, escapesByOmission.more());
  } catch (error) {
    if (!(error instanceof ReportStopped)) throw error;
    warnings.push(error.warning);
  }
  return warnings;
}

/** The warnings of reportWarnings, made without pausing. */
export function policyWarnings(...args: Parameters<typeof reportWarnings>): ValidationIssue[] {
  const report = reportWarnings(...args);
  for (;;) {
    const next = report.next();
    if (next.done) return next.value;
  }
}
