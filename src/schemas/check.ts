import type { FromSchema } from 'json-schema-to-ts';
import { anyJsonValueSchema } from './json.js';

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
  } as const;
}

export const principalReferenceSchema = entityReferenceSchema('principal');
export const resourceReferenceSchema = entityReferenceSchema('resource');

/** Both forms of a check request: nested (`principal`, `resource`) and flat (`principal_uri`, ...). */
export const checkRequestSchema = {
  type: 'object',
  properties: {
    principal: principalReferenceSchema,
    resource: resourceReferenceSchema,
    action: { type: ['string', 'null'], description: 'Defaults to `access`.' },
    principal_uri: { type: ['string', 'null'] },
    principal_attributes: nullableAttributesSchema,
    resource_uri: { type: ['string', 'null'] },
    resource_attributes: nullableAttributesSchema,
  },
} as const;
export type CheckRequest = FromSchema<typeof checkRequestSchema>;
export type EntityReference = FromSchema<typeof principalReferenceSchema> | FromSchema<typeof resourceReferenceSchema>;
export type SuppliedAttributes = FromSchema<typeof suppliedAttributesSchema>;

export const checkRequestListSchema = { type: 'array', items: checkRequestSchema } as const;

export const checkResponseSchema = {
  type: 'object',
  properties: { allowed: { type: 'boolean' }, reason: { type: 'string' } },
  required: ['allowed', 'reason'],
  additionalProperties: false,
} as const;
export type CheckResponse = FromSchema<typeof checkResponseSchema>;

export const checkResponseListSchema = { type: 'array', items: checkResponseSchema } as const;

/** The nested form only, with both sides present: what the simple-policy endpoint takes. */
export const nestedCheckRequestSchema = {
  type: 'object',
  properties: {
    principal: principalReferenceSchema,
    resource: resourceReferenceSchema,
    action: { type: 'string', minLength: 1, default: 'access' },
  },
  required: ['principal', 'resource'],
} as const;
export type NestedCheckRequest = FromSchema<typeof nestedCheckRequestSchema>;
