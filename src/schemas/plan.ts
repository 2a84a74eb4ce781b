import type { FromSchema } from 'json-schema-to-ts';
import { actionAndContextProperties, nullableAttributesSchema, principalReferenceSchema } from './check.js';
import { anyJsonValueSchema } from './json.js';

const knownResourceSchema = {
  type: ['object', 'null'],
  description: 'What every resource in question is known to have, e.g. `{"attributes": {"type": "document"}}`: conditions on these attributes are decided, not left in the plan.',
  properties: {
    attributes: nullableAttributesSchema,
    type: { enum: ['resource', null] },
  },
  additionalProperties: false,
} as const;


/** Where a plan's MongoDB filter finds a resource's attributes and its uri, unless the request says otherwise. */
export const DEFAULT_MONGO_FILTER_OPTIONS = { attributesPrefix: 'attributes.', uriField: 'uri' } as const;

/** A plan request: a principal, an action and a context as `/check` takes them (nested or flat), and what is known of the resources. */
export const planRequestSchema = {
  type: 'object',
  properties: {
    principal: principalReferenceSchema,
    principal_uri: { type: ['string', 'null'] },
    principal_attributes: nullableAttributesSchema,
    ...actionAndContextProperties,
    resource: knownResourceSchema,
    resource_attributes: nullableAttributesSchema,
    mongodb: {
      type: 'object',
      description: 'Where the resource fields live in your MongoDB documents.',
      properties: {
        attributes_prefix: {
          type: 'string',
          default: DEFAULT_MONGO_FILTER_OPTIONS.attributesPrefix,
          description: 'Put before an attribute path\'s keys: `attributes.` for `{"attributes": {...}}`, `""` for attributes at the top level.',
        },
        uri_field: { type: 'string', default: DEFAULT_MONGO_FILTER_OPTIONS.uriField, description: "The field holding the resource's uri, e.g. `_id`." },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const;
export type PlanRequest = FromSchema<typeof planRequestSchema>;

export const planRequestListSchema = { type: 'array', items: planRequestSchema } as const;

export const PLAN_KINDS = ['always_allowed', 'always_denied', 'conditional'] as const;

export const planResponseSchema = {
  type: 'object',
  properties: {
    kind: { type: 'string', enum: PLAN_KINDS },
    condition: {
      ...anyJsonValueSchema,
      description:
        'Which resources are allowed: `true`, `false`, or a tree of `{"and": [...]}`, `{"or": [...]}`, `{"not": ...}` and `{"path", "operator", "value"}` comparisons.',
    },
    mongodb: {
      type: 'object',
      additionalProperties: true,
      description: 'The condition as a MongoDB filter, for `find()`; absent when no filter says exactly the same (the reason says why).',
    },
    reason: { type: 'string' },
    exact: {
      type: 'boolean',
      const: false,
      description:
        'Present, `false`, when the exact plan was too long to state (see --max-plan-size): `condition` then holds for some of the allowed resources and for none that is denied; the reason says which deny rules were stated more broadly.',
    },
  },
  required: ['kind', 'condition', 'reason'],
  additionalProperties: false,
} as const;
export type PlanResponse = FromSchema<typeof planResponseSchema>;

export const planResponseListSchema = { type: 'array', items: planResponseSchema } as const;
