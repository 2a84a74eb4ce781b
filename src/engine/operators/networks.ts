import { addressRanges, rangesIssue } from '../address-ranges.js';
import { PLAIN, quoted, type OperatorDefinition } from './definition.js';

// IP address ranges: `in_cidr`, `not_in_cidr`.

/**
 * Only an address is in a range or outside it: anything else is undecidable for both operators, and
 * so are ranges read from the request (parsed for each check, within MAX_ADDRESS_RANGES) that do not parse.
 */
function inNetwork(negated: boolean): OperatorDefinition {
  const expected = !negated;
  const settled = (inside: boolean | undefined) => (inside === undefined ? undefined : inside === expected);
  return {
    ...PLAIN,
    checkValue: rangesIssue,
    build(value) {
      const test = addressRanges(value);
      return (attribute) => settled(test(attribute));
    },
    relate: (attribute, value) => (rangesIssue(value) === undefined ? settled(addressRanges(value)(attribute)) : undefined),
    undecidable(attribute, value) {
      const rangesWrong = rangesIssue(value);
      return rangesWrong === undefined ? `${quoted(attribute)} is not an IP address` : `the ranges read, ${quoted(value)}, are not CIDR ranges: ${rangesWrong}`;
    },
    operandTypes: ['string'],
    operandFormats: ['ipv4', 'ipv6'],
    mongodb: { none: 'MongoDB cannot read an IP address held as text as a number to compare with a range' },
  };
}

export const inCidr = inNetwork(false);
export const notInCidr = inNetwork(true);
