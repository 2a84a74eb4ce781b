import type { FromSchema } from 'json-schema-to-ts';
import { anyJsonValueSchema } from './json.js';
import { validationIssueSchema } from './errors.js';

/** Operators as they travel on the wire; synonyms are kept as sent and mean the same thing. */
export const OPERATORS = [
  '==', 'equals',
  '!=', 'not_equals',
  'contains', 'not_contains', 'startswith', 'endswith',
  'gt', '>', 'gte', '>=', 'lt', '<', 'lte', '<=',
  'in', 'not_in',
  'exists', 'not_exists',
  'matches', 'not_matches',
  'in_cidr', 'not_in_cidr',
  'before', 'after', 'during',
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

/** The longest condition path, and the longest `value_from` (a part of the check, a dot, a path). */
export const MAX_PATH_LENGTH = 1024;
export const MAX_REFERENCE_LENGTH = MAX_PATH_LENGTH + 'principal.'.length;

/** A condition as answers give it: stored conditions are valid, and a serializer would test an `if` on every one. */
const storedConditionSchema = {
  type: 'object',
  description:
    'A test of one attribute. `path` is dotted: `uri` or `attributes.<key>[.<key>|.<index>]...`; a missing attribute satisfies no condition ' +
    'but `not_exists`. Every operator takes a `value`, or a `value_from` naming another value of the same check, but `exists` and ' +
    '`not_exists`, which take neither.',
  properties: {
    path: { type: 'string', minLength: 1, maxLength: MAX_PATH_LENGTH, examples: ['attributes.department'] },
    operator: { type: 'string', enum: OPERATORS },
    value: anyJsonValueSchema,
    value_from: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_REFERENCE_LENGTH,
      description:
        'Instead of `value`: the value at this dotted reference into the same check, `principal.`, `resource.`, `action.` or `context.` ' +
        'followed by a path (`principal.attributes.email`, `action.name`); a reference to a value the check does not have makes the condition false.',
      examples: ['principal.attributes.email'],
    },
  },
  required: ['path', 'operator'],
  additionalProperties: false,
} as const;

export const conditionSchema = {
  ...storedConditionSchema,
  // A value (or value_from) given to a presence operator, or both given, is refused by the engine's checks (see validate.ts), with a message saying so.
  if: { type: 'object', properties: { operator: { enum: PRESENCE_OPERATORS } }, required: ['operator'] },
  else: { if: { required: ['value_from'] }, else: { required: ['value'] } },
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
    // No default: a rule without them is stored and answered without them, as before they existed.
    action_conditions: {
      type: 'array',
      items: conditionSchema,
      description: "Conditions on the check's action: paths `name` and `attributes.<key>...` (attributes the check sends with the action).",
    },
    context_conditions: {
      type: 'array',
      items: conditionSchema,
      description: "Conditions on the check's `context`: paths `attributes.<key>...`.",
    },
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
    action_conditions: { ...ruleSchema.properties.action_conditions, items: storedConditionSchema },
    context_conditions: { ...ruleSchema.properties.context_conditions, items: storedConditionSchema },
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

// The policy routes' parameters and answers.

export const policyNameParamsSchema = {
  type: 'object',
  properties: { name: { type: 'string', description: 'The policy name (as stored, slugified).' } },
  required: ['name'],
} as const;

export const policyVersionParamsSchema = {
  type: 'object',
  properties: { ...policyNameParamsSchema.properties, version: { type: 'integer', minimum: 1, description: 'A version from the history.' } },
  required: ['name', 'version'],
} as const;

export const restoreQuerySchema = {
  type: 'object',
  properties: { version: { type: 'integer', minimum: 1, description: 'The version to make current again.' } },
  required: ['version'],
} as const;

export const simplePolicyQuerySchema = {
  type: 'object',
  properties: { name: { type: 'string', minLength: 1, description: 'Policy name; slugified, also names the rule.' } },
  required: ['name'],
} as const;

/** Policies to validate: one, or a list. */
export const policiesToValidateSchema = { anyOf: [policySchema, { type: 'array', items: policySchema }] } as const;

export const validationReportSchema = {
  type: 'object',
  properties: {
    valid: { type: 'boolean', const: true },
    warnings: {
      type: 'array',
      items: validationIssueSchema,
      description:
        '`type`: never_matches, shadowed, unknown_action, duplicate_condition, escaped_by_omission or substring_membership; `incomplete`, last, when the report stopped early (too long, or too much work).',
    },
  },
  required: ['valid', 'warnings'],
  additionalProperties: false,
} as const;
