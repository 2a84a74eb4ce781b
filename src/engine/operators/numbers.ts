import type { Operator } from '../../schemas/policy.js';
import { isNumber, PLAIN, type OperatorDefinition } from './definition.js';

// Comparisons of numbers: `gt`, `gte`, `lt`, `lte`. They read naturally: `gt` with value 18 holds
// when the attribute is greater than 18.

const needsNumber = (value: unknown) => (isNumber(value) ? undefined : 'needs a number value');

function compareNumbers(test: (attribute: number, value: number) => boolean, mirror: Operator): OperatorDefinition {
  return {
    ...PLAIN,
    checkValue: needsNumber,
    build(value) {
      const bound = value as number;
      return (attribute) => isNumber(attribute) && test(attribute, bound);
    },
    relate: (attribute, value) => isNumber(attribute) && isNumber(value) && test(attribute, value),
    operandTypes: ['number', 'integer'],
    mirror,
    mongodb: 'exact',
  };
}

export const greater = compareNumbers((attribute, value) => attribute > value, 'lt');
export const greaterOrEqual = compareNumbers((attribute, value) => attribute >= value, 'lte');
export const less = compareNumbers((attribute, value) => attribute < value, 'gt');
export const lessOrEqual = compareNumbers((attribute, value) => attribute <= value, 'gte');
