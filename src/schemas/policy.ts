import type { FromSchema } from 'json-schema-to-ts';
import { anyJsonValueSchema } from './json.js';

/** Operators as they travel on the wire; synonyms are kept as sent and mean the same thing. */
export const OPERATORS = [
  '==', 'equals',
  '!=', 'not_equals',
  'contains', 'not_contains', 'startswith', 'endswith',
  'gt', '>', 'gte', '>=', 'lt', '<', 'lte', '<=',
  'in', 'not_in',
  'exists', 'not_exists',
] as const;
export type Operator = (typeof OPERATORS)[number];

/** The operators that test whether the path leads to a value at all: they take no `value`. */
export const PRESENCE_OPERATORS = ['exists', 'not_exists'] as const satisfies readonly Operator[];

export const EFFECTS = ['allow', 'deny'] as const;
export type Effect = (typeof EFFECTS)[number];

const nameSchema = { type: 'string', minLength: 1, maxLength: 256 } as const;
/** Actions a rule names: as long as a name at most (validation compares them with one another, to find typos). */
export const MAX_ACTION_LENGTH = 256;
export const actionNameSchema = { type: 'string', minLength: 1, maxLength: MAX_ACTION_LENGTH } as const;
const descriptionSchema = { type: ['string', 'null'], description: 'Free text; null when there is none.' } as const;

/** A condition as answers give it: stored conditions are valid, and a serializer would test an `if` on every one. */
const storedConditionSchema = {
  type: 'object',
  description:
    'A test of one attribute. `path` is dotted: `uri` or `attributes.<key>[.<key>|.<index>]...`; a missing attribute satisfies no condition ' +
    'but `not_exists`. Every operator takes a `value` but `exists` and `not_exists`, which take none.',
  properties: {
    path: { type: 'string', minLength: 1, maxLength: 1024, examples: ['attributes.department'] },
    operator: { type: 'string', enum: OPERATORS },
    value: anyJsonValueSchema,
  },
  required: ['path', 'operator'],
  additionalProperties: false,
} as const;

export const conditionSchema = {
  ...storedConditionSchema,
  // A value given to a presence operator is refused by the engine's checks (see operators.ts), with a message saying so.
  if: { type: 'object', properties: { operator: { enum: PRESENCE_OPERATORS } }, required: ['operator'] },
  else: { required: ['value'] },
} as const;

export const ruleSchema = {
  type: 'object',
  properties: {
    name: nameSchema,
    // No default: a rule stored without one (as every rule was before rules had descriptions) is answered with null.
    description: descriptionSchema,
    effect: { type: 'string', enum: EFFECTS },
    principal_conditions: { type: 'array', items: conditionSchema, default: [] },
    resource_conditions: { type: 'array', items: conditionSchema, default: [] },
    actions: { type: 'array', items: actionNameSchema, minItems: 1 },
  },
  required: ['name', 'effect', 'actions'],
  additionalProperties: false,
} as const;

/** A policy as clients send it: defaults fill `version`, `description` and `default_effect`. */
export const policySchema = {
  type: 'object',
  properties: {
    version: { type: 'string', default: '1.0' },
    name: nameSchema,
    description: { ...descriptionSchema, default: null },
    rules: { type: 'array', items: ruleSchema },
    default_effect: { type: 'string', enum: EFFECTS, default: 'deny' },
  },
  required: ['name', 'rules'],
  additionalProperties: false,
} as const;

/** The stored and returned policy: every field present (which also keeps the serialized field order). */
const storedRuleSchema = {
  ...ruleSchema,
  properties: {
    ...ruleSchema.properties,
    principal_conditions: { type: 'array', items: storedConditionSchema },
    resource_conditions: { type: 'array', items: storedConditionSchema },
  },
  required: ['name', 'description', 'effect', 'principal_conditions', 'resource_conditions', 'actions'],
} as const;

export const storedPolicySchema = {
  ...policySchema,
  properties: { ...policySchema.properties, rules: { type: 'array', items: storedRuleSchema } },
  required: ['version', 'name', 'description', 'rules', 'default_effect'],
} as const;

export const policyListSchema = { type: 'array', items: storedPolicySchema } as const;

/** A policy after validation: defaults are filled, so every field is present. */
export type Policy = FromSchema<typeof policySchema>;
export type Rule = Policy['rules'][number];
export type Condition = Rule['principal_conditions'][number];
/** A policy as answers give it: every rule with its description. */
export type AnsweredPolicy = FromSchema<typeof storedPolicySchema>;
