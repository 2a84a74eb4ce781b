import type { FromSchema } from 'json-schema-to-ts';
import { anyJsonValueSchema } from './json.js';
import { actionNameSchema, DEFAULT_EFFECTS, GROUP_KINDS } from './policy.js';


/** The longest bearer token verified, in characters: a longer one is refused as a token, its check alone. */
export const MAX_TOKEN_LENGTH = 16 * 1024;

/**
 * Attributes as clients send them: an object of key to value, or a list of `{key, value}` items
 * (Eunomia's SDKs send both). JSON Schema applies `additionalProperties` only to objects and
 * `items` only to arrays, so one schema covers both shapes without `anyOf` noise in errors.
 */
export const suppliedAttributesSchema = {
  type: ['object', 'array'],
  propertyNames: { minLength: 1 },
  additionalProperties: anyJsonValueSchema,
  items: {
    type: 'object',
    properties: { key: { type: 'string', minLength: 1 }, value: anyJsonValueSchema },
    required: ['key', 'value'],
    additionalProperties: false,
  },
} as const;

export const nullableAttributesSchema = {
  ...suppliedAttributesSchema,
  type: ['object', 'array', 'null'],
} as const;

function entityReferenceSchema<Side extends 'principal' | 'resource'>(side: Side) {
  return {
    type: ['object', 'null'],
    description: `The ${side}: a registered \`uri\`, supplied \`attributes\`, or both (merged).`,
    properties: {
      uri: { type: ['string', 'null'] },
      attributes: nullableAttributesSchema,
      type: { enum: [side, null] },
    },
    additionalProperties: false,
  } as const;
}

/** The principal as a policy test names it: no token there, whose claims a test gives as the `claims` attribute. */
export const principalWithoutTokenSchema = entityReferenceSchema('principal');
const principalBase = principalWithoutTokenSchema;
export const principalReferenceSchema = {
  ...principalBase,
  description: 'The principal: a registered `uri`, supplied `attributes`, or both (merged); and/or a bearer `token` whose verified claims become its `claims` attribute.',
  properties: {
    ...principalBase.properties,
    token: {
      type: ['string', 'null'],
      description: `A signed JWT, verified with the key sets of \`--tokens\`; never logged. One longer than ${MAX_TOKEN_LENGTH} characters is refused as a token (401; in a bulk, its item denied).`,
    },
  },
} as const;
export const resourceReferenceSchema = entityReferenceSchema('resource');

/** The action of a check: its name, or its name and attributes (a string is a name with no attributes). */
export const checkActionSchema = {
  type: ['string', 'object', 'null'],
  description: 'Defaults to `access`. A name, or `{"name": ..., "attributes": {...}}` with attributes that `action_conditions` read.',
  properties: { name: { type: 'string' }, attributes: nullableAttributesSchema },
  required: ['name'],
  additionalProperties: false,
} as const;

/** The context of a check: a flat object of attributes of the request itself, which `context_conditions` read. */
export const checkContextSchema = {
  type: ['object', 'null'],
  description: 'Attributes of the request itself (time, address, channel...), e.g. `{"ip": "10.1.2.3"}`.',
  propertyNames: { minLength: 1 },
  additionalProperties: anyJsonValueSchema,
} as const;

/** What every form of a check may say of its action and context, besides the entities. */
export const actionAndContextProperties = {
  action: checkActionSchema,
  action_attributes: { ...nullableAttributesSchema, description: 'The flat form of `action.attributes`.' },
  context: checkContextSchema,
} as const;

/** Both forms of a check request: nested (`principal`, `resource`) and flat (`principal_uri`, ...). */
export const checkRequestSchema = {
  type: 'object',
  properties: {
    principal: principalReferenceSchema,
    resource: resourceReferenceSchema,
    ...actionAndContextProperties,
    principal_uri: { type: ['string', 'null'] },
    principal_attributes: nullableAttributesSchema,
    resource_uri: { type: ['string', 'null'] },
    resource_attributes: nullableAttributesSchema,
  },
  // An unknown field is most likely a typo ("acton" would leave the action `access`).
  additionalProperties: false,
} as const;
export type CheckRequest = FromSchema<typeof checkRequestSchema>;
/** The fields of any request that reads an action and a context as a check does. */
export type ActionAndContext = Pick<CheckRequest, 'action' | 'action_attributes' | 'context'>;
export type EntityReference = FromSchema<typeof principalReferenceSchema> | FromSchema<typeof resourceReferenceSchema>;
export type SuppliedAttributes = FromSchema<typeof suppliedAttributesSchema>;

export const checkRequestListSchema = { type: 'array', items: checkRequestSchema } as const;

/** A check to try at another time (POST /admin/check-at). */
export const checkAtSchema = {
  type: 'object',
  properties: {
    check: checkRequestSchema,
    time: { type: 'string', maxLength: 64, description: "The decision's time to decide at: an RFC 3339 date-time with its offset.", examples: ['2026-11-27T08:30:00Z'] },
  },
  required: ['check', 'time'],
  additionalProperties: false,
} as const;

const effectSchema = { type: 'string', enum: ['allow', 'deny'] } as const;

const entityTraceSchema = {
  type: 'object',
  description: 'The uri named (or null) and the attributes the decision was made on, registered and supplied merged.',
  properties: { uri: { type: ['string', 'null'] }, attributes: { type: 'object', additionalProperties: true } },
  required: ['uri', 'attributes'],
} as const;

/**
 * What `?explain=true` adds to an answer (see src/engine/explain.ts). Required properties come
 * first: the serializer writes them first, and the pool's workers must write the same bytes.
 */
const sideSchema = { type: 'string', enum: ['principal', 'resource', 'action', 'context'] } as const;

/** What an explanation says of a condition that did not hold. */
const failedConditionProperties = {
  path: { type: 'string' },
  operator: { type: 'string' },
  value_from: { type: 'string' },
  expected: anyJsonValueSchema,
  actual: anyJsonValueSchema,
  missing: { type: 'boolean' },
  value_from_missing: { type: 'boolean' },
  undecidable: { type: 'string', description: 'Why the condition could not be evaluated on the value it read (an evaluation error): it does not hold in an allow rule.' },
} as const;

/** What an explanation says of a condition or a group (whose alternatives hold conditions only: a set's own) that did not hold. */
const failedSetItemProperties = {
  ...failedConditionProperties,
  group: { type: 'string', enum: GROUP_KINDS },
  alternatives: { type: 'array', items: { type: 'object', properties: failedConditionProperties, required: ['path', 'operator'] } },
  held: { type: 'integer' },
} as const;

/** What an explanation says of a condition or a group that did not hold: an alternative of a rule's group fails on a condition or a set. */
const failedItemProperties = {
  ...failedSetItemProperties,
  alternatives: {
    type: 'array',
    items: { type: 'object', properties: { ...failedConditionProperties, set: { type: 'string' }, from: { type: 'string' }, failed: { type: 'object', properties: failedSetItemProperties } } },
  },
} as const;

export const explanationSchema = {
  type: 'object',
  description: 'How the decision came about.',
  properties: {
    revision: { type: 'integer', description: 'The policy snapshot revision decided on.' },
    action: { type: 'string' },
    principal: entityTraceSchema,
    resource: entityTraceSchema,
    policies: {
      type: 'array',
      description: 'Every policy with a rule for the action, in creation order, and each such rule in order.',
      items: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          default_effect: { type: 'string', enum: DEFAULT_EFFECTS },
          rules: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                name: { type: 'string' },
                effect: effectSchema,
                matched: { type: 'boolean' },
                failed: {
                  type: 'object',
                  description:
                    'The first condition that did not hold (`expected`: its value, absent for `exists` and `not_exists`; for a condition with ' +
                    '`value_from`, the value the reference resolved to, or `value_from_missing: true`): the value found at its path, or `missing: true`. ' +
                    'When it is a group (`group`): for `any_of`, how each of its `alternatives` failed (its first failing condition, as above, or set, as below); ' +
                    'for `none_of`, the alternative that `held` (counted from 0). When it is a reference to a condition `set` (`from` another policy): the ' +
                    'first item of the set that did not hold, as `failed`, none when the set is out of reach.',
                  properties: {
                    side: sideSchema,
                    ...failedItemProperties,
                    set: { type: 'string' },
                    from: { type: 'string' },
                    failed: { type: 'object', properties: failedSetItemProperties },
                  },
                  required: ['side'],
                },
                alternatives_held: {
                  type: 'array',
                  description: 'For a matched rule with `any_of` groups: the first alternative (counted from 0) of each that held.',
                  items: { type: 'object', properties: { side: sideSchema, alternative: { type: 'integer' } }, required: ['side', 'alternative'] },
                },
                undecidable: {
                  type: 'array',
                  description: 'For a matched deny rule: its conditions that could not be evaluated on the values they read (`why`), and so counted as holding.',
                  items: {
                    type: 'object',
                    properties: { side: sideSchema, path: { type: 'string' }, operator: { type: 'string' }, actual: anyJsonValueSchema, why: { type: 'string' } },
                    required: ['side', 'path', 'operator', 'actual', 'why'],
                  },
                },
              },
              required: ['name', 'effect', 'matched'],
            },
          },
        },
        required: ['name', 'default_effect', 'rules'],
      },
    },
    decided_by: {
      type: 'object',
      description: 'The rule whose decision this is, or the default effect that applied, with a sentence saying why.',
      properties: {
        kind: { type: 'string', enum: ['rule', 'default', 'no_policies'] },
        effect: effectSchema,
        why: { type: 'string' },
        policy: { type: 'string' },
        rule: { type: 'string' },
      },
      required: ['kind', 'effect', 'why'],
    },
    action_attributes: { type: 'object', additionalProperties: true, description: "The action's attributes, when the check sent some." },
    context: { type: 'object', additionalProperties: true, description: "The check's context, when it sent one." },
    time: { type: 'string', description: "The decision's time (`context.time`, RFC 3339 in UTC) that the server supplied, when a condition read it." },
    schema_violations: {
      type: 'array',
      items: { type: 'string' },
      description: 'What the attributes of the check break in the attribute schemas, when it was decided despite them (`--schema-enforcement warn`).',
    },
  },
  required: ['revision', 'action', 'principal', 'resource', 'policies', 'decided_by'],
} as const;

export const checkResponseSchema = {
  type: 'object',
  properties: { allowed: { type: 'boolean' }, reason: { type: 'string' }, explain: explanationSchema },
  required: ['allowed', 'reason'],
  additionalProperties: false,
} as const;

/** The query string of the check routes. */
export const checkQuerySchema = {
  type: 'object',
  properties: {
    explain: { type: 'boolean', default: false, description: 'Add an `explain` object to each answer: how its decision came about.' },
  },
} as const;
export type CheckResponse = FromSchema<typeof checkResponseSchema>;

/** The query string of `POST /check/bulk`: `explain`, what a check that cannot be decided as asked does to the call, and spans for its items. */
export const bulkCheckQuerySchema = {
  type: 'object',
  properties: {
    ...checkQuerySchema.properties,
    conflicts: {
      type: 'string',
      enum: ['deny', 'refuse'],
      default: 'deny',
      description:
        "A check whose attributes conflict with its registered entity's (or break the attribute schemas under `reject`), which `/check` refuses with 400: " +
        '`deny` (the default) denies that check alone, saying why; `refuse` refuses the call with 422 naming each such check (`type` `attribute_conflict`, ' +
        "its `msg` the 400's detail), so that a client batching checks can answer each caller as `/check` would.",
    },
    trace_items: {
      type: 'boolean',
      default: false,
      description:
        'With tracing on (`--otlp-endpoint`) and this request sampled: each item decided is a span of its own, the child of the request\'s, saying what decided it; ' +
        'decided on the front thread or in the worker pool, as any bulk. Ignored otherwise.',
    },
  },
} as const;

export const checkResponseListSchema = { type: 'array', items: checkResponseSchema } as const;

/** The nested form only, with both sides present: what the simple-policy endpoint takes. */
export const nestedCheckRequestSchema = {
  type: 'object',
  properties: {
    principal: principalReferenceSchema,
    resource: resourceReferenceSchema,
    action: { ...actionNameSchema, default: 'access' },
  },
  required: ['principal', 'resource'],
  additionalProperties: false,
} as const;
