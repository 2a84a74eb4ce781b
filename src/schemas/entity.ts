import type { FromSchema } from 'json-schema-to-ts';
import { anyJsonValueSchema } from './json.js';
import { suppliedAttributesSchema } from './check.js';

export const ENTITY_TYPES = ['principal', 'resource'] as const;
export type EntityType = (typeof ENTITY_TYPES)[number];

/**
 * Longest entity uri, in UTF-16 code units. A uri travels percent-encoded in request paths, at
 * most nine characters per unit, and must stay within the router's limit for a path parameter.
 */
export const MAX_ENTITY_URI_LENGTH = 900;

const nonEmptyAttributesSchema = { ...suppliedAttributesSchema, minProperties: 1, minItems: 1 } as const;

export const entityCreateSchema = {
  type: 'object',
  properties: {
    uri: { type: ['string', 'null'], minLength: 1, maxLength: MAX_ENTITY_URI_LENGTH, description: 'Generated (a UUID) when absent.' },
    type: { enum: [...ENTITY_TYPES, null] },
    attributes: nonEmptyAttributesSchema,
  },
  required: ['attributes'],
  additionalProperties: false,
} as const;
export type EntityCreate = FromSchema<typeof entityCreateSchema>;

export const entityCreateListSchema = { type: 'array', items: entityCreateSchema } as const;

export const entityUpdateSchema = {
  type: 'object',
  properties: {
    uri: { type: 'string', minLength: 1, maxLength: MAX_ENTITY_URI_LENGTH },
    type: { enum: [...ENTITY_TYPES, null] },
    attributes: nonEmptyAttributesSchema,
  },
  required: ['uri', 'attributes'],
  additionalProperties: false,
} as const;
export type EntityUpdate = FromSchema<typeof entityUpdateSchema>;

export const overrideQuerySchema = {
  type: 'object',
  properties: {
    override: { type: 'boolean', default: false, description: 'true: replace all attributes; false: upsert the keys sent, keep the others.' },
  },
} as const;

export const registeredAttributeSchema = {
  type: 'object',
  properties: {
    key: { type: 'string' },
    value: anyJsonValueSchema,
    updated_at: { type: 'string', format: 'date-time' },
    registered_at: { type: 'string', format: 'date-time' },
  },
  required: ['key', 'value', 'updated_at', 'registered_at'],
  additionalProperties: false,
} as const;

export const entitySchema = {
  type: 'object',
  properties: {
    uri: { type: 'string' },
    type: { type: ['string', 'null'], enum: [...ENTITY_TYPES, null] },
    attributes: { type: 'array', items: registeredAttributeSchema },
    registered_at: { type: 'string', format: 'date-time' },
  },
  required: ['uri', 'type', 'attributes', 'registered_at'],
  additionalProperties: false,
} as const;
export type Entity = FromSchema<typeof entitySchema>;
export type RegisteredAttribute = Entity['attributes'][number];

export const entityListSchema = { type: 'array', items: entitySchema } as const;

/** The query of a registry list; `limit` at most `maxPageSize` (configurable). */
export const entityPageQuerySchema = (maxPageSize: number) =>
  ({
    type: 'object',
    properties: {
      offset: { type: 'integer', minimum: 0, default: 0 },
      limit: { type: 'integer', minimum: 0, maximum: maxPageSize, default: 10 },
    },
  }) as const;

export const entityUriParamsSchema = {
  type: 'object',
  properties: { uri: { type: 'string', description: 'Percent-encoded; `%2F` for `/`.' } },
  required: ['uri'],
} as const;
