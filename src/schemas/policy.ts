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
  'before', 'after', 'during', 'within',
] as const;
export type Operator = (typeof OPERATORS)[number];

/** The operators that test whether the path leads to a value at all: they take no `value`. */
export const PRESENCE_OPERATORS = ['exists', 'not_exists'] as const satisfies readonly Operator[];

export const EFFECTS = ['allow', 'deny'] as const;
export type Effect = (typeof EFFECTS)[number];
/** A policy's default effects: `none` states rules only, leaving what they do not decide to the other policies. */
export const DEFAULT_EFFECTS = [...EFFECTS, 'none'] as const;
export type DefaultEffect = (typeof DEFAULT_EFFECTS)[number];

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
    '`not_exists`, which take neither, and `within`, whose `value` is a span (`{"last": "PT15M"}`) around the decision\'s time or the ' +
    'value its `value_from` names.',
  properties: {
    path: { type: 'string', minLength: 1, maxLength: MAX_PATH_LENGTH, examples: ['attributes.department'] },
    operator: { type: 'string', enum: OPERATORS },
    value: anyJsonValueSchema,
    value_from: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_REFERENCE_LENGTH,
      description:
        'Instead of `value` (beside it for `within`, as its anchor): the value at this dotted reference into the same check, `principal.`, `resource.`, `action.` or `context.` ' +
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

/** Alternatives a condition group may hold; each is a list of conditions (and, in a rule, references to condition sets), and groups do not nest. */
export const MAX_ALTERNATIVES = 16;
export const GROUP_KINDS = ['any_of', 'none_of'] as const;
export type GroupKind = (typeof GROUP_KINDS)[number];

/** The most condition sets one policy may define, and how a set is named. */
export const MAX_CONDITION_SETS = 64;
export const MAX_SET_ITEMS = 256;
const setNameSchema = { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_.-]+$' } as const;

/** A reference to one of the policy's condition sets, or with `from` another policy's: it holds when every item of the set holds. */
const setReferenceSchema = {
  type: 'object',
  description:
    "One of the policy's `condition_sets` by name, or with `from` one of another policy's (sets shared by policies): holds when every item of the set holds, " +
    'on the part of the check of the list it stands in.',
  properties: {
    set: setNameSchema,
    from: { type: 'string', minLength: 1, maxLength: 256, description: 'The policy whose set this is (its stored name), when not this one.', examples: ['company-roles'] },
  },
  required: ['set'],
  additionalProperties: false,
} as const;

/** A set's own items refer to no set: its keyword is refused there (see validation.ts). */
const NO_SET_HERE = { type: 'object', properties: { set: false } } as const;

/** `item`, or where `{"set": …}` is written, a reference to a set (in a rule's lists) or a refusal (in a set's own). */
const orSetReference = <Item>(item: Item, setsReferred: boolean) =>
  ({ if: { type: 'object', required: ['set'] }, then: setsReferred ? setReferenceSchema : NO_SET_HERE, else: item }) as const;

/** A group where an item of an alternative should be: its keyword is refused (see validation.ts), as groups do not nest. */
const notAGroup = <Item>(item: Item) => ({ if: { type: 'object', anyOf: [{ required: ['any_of'] }, { required: ['none_of'] }] }, then: { type: 'object', properties: { any_of: false, none_of: false } }, else: item }) as const;

const alternativesSchema = <Item>(item: Item, setsReferred: boolean) =>
  ({ type: 'array', minItems: 1, maxItems: MAX_ALTERNATIVES, items: { type: 'array', minItems: 1, items: notAGroup(orSetReference(item, setsReferred)) } }) as const;

/**
 * A group in a list of conditions: `any_of` holds when the items of at least one alternative all
 * hold, `none_of` when those of none do. Its conditions read the same part of the check as the list
 * it stands in; in a rule, an alternative may name condition sets (`[{"set": "manager"}]`).
 */
const groupSchema = <Kind extends GroupKind, Item>(kind: Kind, item: Item, setsReferred: boolean) =>
  ({
    type: 'object',
    description:
      kind === 'any_of'
        ? 'Alternatives (lists of conditions, or in a rule also of references to condition sets): the group holds when every item of at least one of them holds.'
        : 'Alternatives (lists of conditions, or in a rule also of references to condition sets): the group holds when no alternative has every item holding.',
    properties: { [kind]: alternativesSchema(item, setsReferred) } as { [key in Kind]: ReturnType<typeof alternativesSchema<Item>> },
    required: [kind],
    additionalProperties: false,
  }) as const;

/**
 * An item of a list of conditions: a condition, a group of alternative lists (see groupSchema), or,
 * in a rule's lists, a reference to a condition set.
 */
const conditionItemSchema = <Item>(item: Item, setsReferred: boolean) =>
  ({
    if: { type: 'object', required: ['any_of'] },
    then: groupSchema('any_of', item, setsReferred),
    else: {
      if: { type: 'object', required: ['none_of'] },
      then: groupSchema('none_of', item, setsReferred),
      else: orSetReference(item, setsReferred),
    },
  }) as const;

const conditionListSchema = { type: 'array', items: conditionItemSchema(conditionSchema, true) } as const;

/** Named lists of conditions (and groups) that the policy's rules refer to by name: "derived roles". */
const conditionSetsSchema = <Item>(item: Item) =>
  ({
    type: 'object',
    description:
      'Named lists of conditions and groups, each defined once and referred to by `{"set": "<name>"}` in any list of conditions of the ' +
      "policy's rules or an alternative of their groups (`any_of: [[{\"set\": \"manager\"}], [{\"set\": \"owner\"}]]`): a reference holds when " +
      'every item of the set holds, on the part of the check of the list it stands in.',
    maxProperties: MAX_CONDITION_SETS,
    propertyNames: setNameSchema,
    additionalProperties: { type: 'array', minItems: 1, maxItems: MAX_SET_ITEMS, items: conditionItemSchema(item, false) },
    examples: [{ manager: [{ path: 'attributes.role', operator: '==', value: 'manager' }, { path: 'attributes.active', operator: '==', value: true }] }],
  }) as const;

export const ruleSchema = {
  type: 'object',
  properties: {
    name: nameSchema,
    // No default: a rule stored without one (as every rule was before rules had descriptions) is answered with null.
    description: descriptionSchema,
    effect: { type: 'string', enum: EFFECTS },
    principal_conditions: { ...conditionListSchema, default: [] },
    resource_conditions: { ...conditionListSchema, default: [] },
    // No default: a rule without them is stored and answered without them, as before they existed.
    action_conditions: {
      ...conditionListSchema,
      description: "Conditions on the check's action: paths `name` and `attributes.<key>...` (attributes the check sends with the action).",
    },
    context_conditions: {
      ...conditionListSchema,
      description: "Conditions on the check's `context`: paths `attributes.<key>...`.",
    },
    actions: { type: 'array', items: actionNameSchema, minItems: 1 },
  },
  required: ['name', 'effect', 'actions'],
  additionalProperties: false,
} as const;

/** The most resource types one policy may be scoped to. */
export const MAX_RESOURCE_TYPES = 64;

/** A policy as clients send it: defaults fill `version`, `description` and `default_effect`. */
export const policySchema = {
  type: 'object',
  properties: {
    version: { type: 'string', default: '1.0' },
    name: nameSchema,
    description: { ...descriptionSchema, default: null },
    // No default: a policy without a scope is stored and answered without one, as before scopes.
    resource_types: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_RESOURCE_TYPES,
      uniqueItems: true,
      items: { type: 'string', minLength: 1, maxLength: 256, pattern: '^[^:]+$' },
      description:
        "The resource types the policy speaks for: its rules and its default effect count only for checks on a resource whose uri starts with one of them and a colon (`document:42`, an AuthZEN resource's `<type>:<id>`).",
      examples: [['document']],
    },
    // No default either: a policy without sets is stored and answered without the field.
    condition_sets: conditionSetsSchema(conditionSchema),
    rules: { type: 'array', items: ruleSchema },
    default_effect: {
      type: 'string',
      enum: DEFAULT_EFFECTS,
      default: 'deny',
      description: 'What the policy says of a check none of its rules decides: deny, allow, or none (nothing: the other policies decide; see the combining rules).',
    },
    // No default: a live policy is stored and answered without the field, as before shadows.
    shadow: {
      anyOf: [{ const: true }, { type: 'string', minLength: 1, maxLength: 256 }],
      description:
        'Makes the policy a shadow: decided beside the live policies on every check, never changing an answer, its disagreements counted ' +
        '(`GET /admin/shadow`). `true` adds it to the live set; the name of a live policy decides it in that policy\'s place. ' +
        '`POST /admin/policies/{name}/promote` makes it live.',
    },
  },
  required: ['name', 'rules'],
  additionalProperties: false,
} as const;

const storedConditionListSchema = { type: 'array', items: conditionItemSchema(storedConditionSchema, true) } as const;

/** The stored and returned policy: every field present (which also keeps the serialized field order). */
const storedRuleSchema = {
  ...ruleSchema,
  properties: {
    ...ruleSchema.properties,
    principal_conditions: storedConditionListSchema,
    resource_conditions: storedConditionListSchema,
    action_conditions: { ...ruleSchema.properties.action_conditions, ...storedConditionListSchema },
    context_conditions: { ...ruleSchema.properties.context_conditions, ...storedConditionListSchema },
  },
  required: ['name', 'description', 'effect', 'principal_conditions', 'resource_conditions', 'actions'],
} as const;

export const storedPolicySchema = {
  ...policySchema,
  properties: { ...policySchema.properties, condition_sets: conditionSetsSchema(storedConditionSchema), rules: { type: 'array', items: storedRuleSchema } },
  required: ['version', 'name', 'description', 'rules', 'default_effect'],
} as const;

export const policyListSchema = { type: 'array', items: storedPolicySchema } as const;

export type Condition = FromSchema<typeof conditionSchema>;
/** A reference to a condition set of the policy, or (`from`) of another policy, by name. */
export interface ConditionSetReference {
  set: string;
  from?: string;
}
/** An item of a group's alternative: a condition, or in a rule's lists a reference to a condition set (the schema refuses one in a set's own groups). */
export type AlternativeItem = Condition | ConditionSetReference;
export type ConditionGroup = { any_of: AlternativeItem[][] } | { none_of: AlternativeItem[][] };
/** An item of a condition set: a condition or a group. */
export type SetItem = Condition | ConditionGroup;
/** An item of a rule's list of conditions: a condition, a group, or a reference to a condition set. */
export type ConditionItem = SetItem | ConditionSetReference;

// The lists of conditions are typed here: the schemas' if/then/else items are beyond FromSchema.
type ConditionSides = 'principal_conditions' | 'resource_conditions' | 'action_conditions' | 'context_conditions';
type WithConditionItems<SchemaRule> = Omit<SchemaRule, ConditionSides> & {
  principal_conditions: ConditionItem[];
  resource_conditions: ConditionItem[];
  action_conditions?: ConditionItem[];
  context_conditions?: ConditionItem[];
};
type WithRules<SchemaPolicy extends { rules: unknown[] }> = Omit<SchemaPolicy, 'rules' | 'condition_sets'> & {
  condition_sets?: Record<string, SetItem[]>;
  rules: WithConditionItems<SchemaPolicy['rules'][number]>[];
};

/** A policy after validation: defaults are filled, so every field is present. */
export type Policy = WithRules<FromSchema<typeof policySchema>>;
export type Rule = Policy['rules'][number];
/** A body that policySchema validated, as the Policy it is (FromSchema types its conditions `unknown`). */
export const sentPolicy = (body: FromSchema<typeof policySchema>): Policy => body as Policy;
/** A policy as answers give it: every rule with its description. */
export type AnsweredPolicy = WithRules<FromSchema<typeof storedPolicySchema>>;

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
