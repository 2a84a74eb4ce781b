import { inWindow, instantOf, nearnessIssue, nearTo, type Nearness, windowIssue } from '../time.js';
import { PLAIN, quoted, type OperatorDefinition } from './definition.js';

// Date-times: `before`, `after`, `during`, `within`.

const DATE_TIME = "an RFC 3339 date-time with its offset ('2026-12-31T23:59:59Z')";
const needsDateTime = (value: unknown) => (instantOf(value) === undefined ? `needs a date-time value, ${DATE_TIME.slice(3)}` : undefined);
/** Why a time operator cannot evaluate `attribute` against an anchor or bound read as `value`. */
const notDateTimes = (attribute: unknown, value: unknown) =>
  instantOf(attribute) === undefined ? `${quoted(attribute)} is not ${DATE_TIME}` : `the date-time read, ${quoted(value)}, is not ${DATE_TIME}`;

const AS_TEXT = 'MongoDB compares date-times held as text as text, not as the instants they name';
const DATE_TIMES = { ...PLAIN, operandTypes: ['string'], operandFormats: ['date-time'], undecidable: notDateTimes, mongodb: { none: AS_TEXT } } as const;

function compareInstants(test: (attribute: number, value: number) => boolean): OperatorDefinition {
  const holds = (attribute: unknown, bound: number) => {
    const instant = instantOf(attribute);
    return instant === undefined ? undefined : test(instant, bound);
  };
  return {
    ...DATE_TIMES,
    checkValue: needsDateTime,
    build(value) {
      const bound = instantOf(value)!;
      return (attribute) => holds(attribute, bound);
    },
    relate(attribute, value) {
      const bound = instantOf(value);
      return bound === undefined ? undefined : holds(attribute, bound);
    },
  };
}

export const before = compareInstants((attribute, value) => attribute < value);
export const after = compareInstants((attribute, value) => attribute > value);

export const during: OperatorDefinition = {
  ...DATE_TIMES,
  checkValue: windowIssue,
  build: inWindow,
  relate: () => false,
  refusesValueFrom: 'its window is compiled once, with the policy; give it as the value',
  undecidable: (attribute) => `${quoted(attribute)} is not ${DATE_TIME}`,
  mongodb: { none: 'MongoDB cannot read a date-time held as text in a time zone' },
};

/** `within`: a date-time no further than `last` before the anchor and `next` after it. */
export const within: OperatorDefinition = {
  ...DATE_TIMES,
  checkValue: nearnessIssue,
  build(value) {
    const near = nearTo(value);
    const { of } = value as Nearness;
    return (attribute) => near(attribute, of);
  },
  relate: () => false,
  anchored: {
    defaultReference: (value) => ((value as Nearness | null | undefined)?.of === undefined ? 'context.time' : undefined),
    relation: nearTo,
    pin: (value, anchor) => ({ ...(value as Nearness), of: anchor }),
    mirror(value) {
      const { last, next } = value as Nearness;
      return { ...(next !== undefined && { last: next }), ...(last !== undefined && { next: last }) };
    },
  },
  undecidable: (attribute, value) => notDateTimes(attribute, (value as Nearness | undefined)?.of ?? value),
};
