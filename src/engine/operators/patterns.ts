import { linearRegExp, PatternError } from '../linear-regexp.js';
import { isString, PLAIN, quoted, type OperatorDefinition } from './definition.js';

// Regular expressions, in linear time: `matches`, `not_matches`.

/** A pattern is compiled once, with its policy: one read from the request would be compiled for every check. */
function needsPattern(value: unknown): string | undefined {
  if (!isString(value)) return 'needs a string value: a regular expression';
  try {
    linearRegExp(value);
    return undefined;
  } catch (error) {
    if (error instanceof PatternError) return `needs a regular expression: /${value.length > 60 ? `${value.slice(0, 60)}…` : value}/ ${error.message}`;
    throw error;
  }
}

/**
 * Only a string is matched by a pattern or not, and only one no longer than the pattern can be
 * matched against within its bound (LinearRegExp.longestText): anything else is undecidable for both operators.
 */
function matching(negated: boolean): OperatorDefinition {
  return {
    ...PLAIN,
    checkValue: needsPattern,
    build(value) {
      const pattern = linearRegExp(value as string);
      return (attribute) => {
        const matched = isString(attribute) ? pattern.test(attribute) : undefined;
        return matched === undefined ? undefined : matched !== negated;
      };
    },
    relate: () => false,
    refusesValueFrom: 'its pattern is compiled once, with the policy; give it as the value',
    undecidable(attribute, value) {
      if (!isString(attribute)) return `${quoted(attribute)} is not a string, which a pattern is matched against`;
      return `the value is ${attribute.length} characters long, longer than the ${linearRegExp(value as string).longestText} this pattern can be matched against`;
    },
    operandTypes: ['string'],
    mongodb: { none: "MongoDB's regular expressions (PCRE) are not the linear-time engine's (RE2), and differ on some patterns" },
  };
}

export const matches = matching(false);
export const notMatches = matching(true);
