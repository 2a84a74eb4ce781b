import { jsonEqual } from '../json-equal.js';
import { anyValue, PLAIN, type OperatorDefinition, type Predicate } from './definition.js';

// Equality and membership: `==`, `!=`, `in`, `not_in`.

const needsList = (value: unknown) => (Array.isArray(value) ? undefined : 'needs a list value');

export const isMemberOf = (attribute: unknown, list: readonly unknown[]) => list.some((item) => jsonEqual(attribute, item));

export function equalTo(value: unknown): Predicate {
  if (typeof value !== 'object' || value === null) return (attribute) => attribute === value;
  return (attribute) => jsonEqual(attribute, value);
}

function memberOf(list: readonly unknown[]): Predicate {
  if (list.every((item) => typeof item !== 'object' || item === null)) {
    const members = new Set(list);
    return (attribute) => members.has(attribute);
  }
  return (attribute) => isMemberOf(attribute, list);
}

export const equals: OperatorDefinition = {
  ...PLAIN,
  checkValue: anyValue,
  build: equalTo,
  relate: jsonEqual,
  operandTypes: 'any',
  schemaChecksValue: 'whole',
  mirror: '==',
  mongodb: 'exact',
};

export const notEquals: OperatorDefinition = {
  ...PLAIN,
  checkValue: anyValue,
  build(value) {
    const isEqual = equalTo(value);
    return (attribute) => !isEqual(attribute);
  },
  relate: (attribute, value) => !jsonEqual(attribute, value),
  operandTypes: 'any',
  schemaChecksValue: 'whole',
  mirror: '!=',
  mongodb: 'exact',
};

export const isIn: OperatorDefinition = {
  ...PLAIN,
  checkValue: needsList,
  build: (value) => memberOf(value as unknown[]),
  relate: (attribute, value) => Array.isArray(value) && isMemberOf(attribute, value),
  operandTypes: 'any',
  schemaChecksValue: 'items',
  mongodb: 'exact',
};

export const notIn: OperatorDefinition = {
  ...PLAIN,
  checkValue: needsList,
  build(value) {
    const isMember = memberOf(value as unknown[]);
    return (attribute) => !isMember(attribute);
  },
  relate: (attribute, value) => Array.isArray(value) && !isMemberOf(attribute, value),
  operandTypes: 'any',
  schemaChecksValue: 'items',
  mongodb: 'exact',
};
