import type { Location, ValidationIssue } from '../../schemas/errors.js';
import { eachCondition } from '../condition-items.js';
import { SIDES, conditionsOf, type CompiledRuleConditions } from './shared.js';

/**
 * A reference whose value names one thing: a uri, an id, an email, a user or owner name. `contains`
 * with one is meant as membership, but on a string attribute it is a substring test.
 */
const NAMES_ONE_THING = /(^|\.)(uri|id|email|user|username|owner|login)$|(_id|Id|ID)$/;

/**
 * `contains` (or `not_contains`) of a reference to an id-like value: where the attribute is a string
 * (`"user:alice"`), `user:al` is in it, which membership in a list of ids would not say.
 */
export function substringMembership({ rule }: CompiledRuleConditions, at: Location): ValidationIssue[] {
  const warnings: ValidationIssue[] = [];
  for (const side of SIDES) {
    for (const [source, where] of eachCondition(conditionsOf(rule, side))) {
      if ((source.operator !== 'contains' && source.operator !== 'not_contains') || source.value_from === undefined || !NAMES_ONE_THING.test(source.value_from)) continue;
      warnings.push({
        loc: [...at, side, ...where],
        msg:
          `${source.path} ${source.operator} ${source.value_from} is a substring test where ${source.path} is a string ('user:al' is in 'user:alice'), ` +
          `and membership only where it is a list: hold ${source.path} as a list of ids`,
        type: 'substring_membership',
      });
    }
  }
  return warnings;
}
