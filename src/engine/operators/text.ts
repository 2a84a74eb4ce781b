import { jsonEqual } from '../json-equal.js';
import { anyValue, isString, PLAIN, type OperatorDefinition, type Predicate, type Relation } from './definition.js';
import { equalTo } from './equality.js';

// Text and lists: `contains`, `not_contains`, `startswith`, `endswith`.

const needsString = (value: unknown) => (isString(value) ? undefined : 'needs a string value');

/** `contains` on a string is a substring test; on a list it is membership. Other types never match. */
function containing(value: unknown): Predicate {
  const isMember = equalTo(value);
  return (attribute) => {
    if (isString(attribute)) return isString(value) && attribute.includes(value);
    if (Array.isArray(attribute)) return attribute.some(isMember);
    return false;
  };
}

const containsValue: Relation = (attribute, value) => {
  if (isString(attribute)) return isString(value) && attribute.includes(value);
  return Array.isArray(attribute) && attribute.some((item) => jsonEqual(item, value));
};

const isTextOrList = (attribute: unknown) => isString(attribute) || Array.isArray(attribute);

export const contains: OperatorDefinition = {
  ...PLAIN,
  checkValue: anyValue,
  build: containing,
  relate: containsValue,
  operandTypes: ['string', 'array'],
  mongodb: 'exact',
};

export const notContains: OperatorDefinition = {
  ...PLAIN,
  checkValue: anyValue,
  build(value) {
    const holds = containing(value);
    return (attribute) => isTextOrList(attribute) && !holds(attribute);
  },
  relate: (attribute, value) => isTextOrList(attribute) && !containsValue(attribute, value),
  operandTypes: ['string', 'array'],
  mongodb: 'exact',
};

function compareStrings(test: (attribute: string, value: string) => boolean): OperatorDefinition {
  return {
    ...PLAIN,
    checkValue: needsString,
    build: (value) => (attribute) => isString(attribute) && test(attribute, value as string),
    relate: (attribute, value) => isString(attribute) && isString(value) && test(attribute, value),
    operandTypes: ['string'],
    mongodb: 'exact',
  };
}

export const startsWith = compareStrings((attribute, value) => attribute.startsWith(value));
export const endsWith = compareStrings((attribute, value) => attribute.endsWith(value));
