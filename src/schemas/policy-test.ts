import type { FromSchema } from 'json-schema-to-ts';
import { policySchema } from './policy.js';
import { actionAndContextProperties, principalWithoutTokenSchema, resourceReferenceSchema, suppliedAttributesSchema } from './check.js';

/**
 * A policy test file, as `verdict test` reads it (YAML or JSON). Shipped as JSON Schema in
 * docs/policy-test.schema.json, which test/cli/policy-tests.test.ts keeps equal to this.
 */
export const policyTestFileSchema = {
  title: 'Verdict policy test file',
  description: 'Policies under test, optional registry entities, and cases each deciding one check against them.',
  type: 'object',
  properties: {
    description: { type: 'string' },
    policies: {
      type: 'array',
      description:
        'The whole policy set under test, in creation order: policies written inline, files holding a policy or a list of them, or directories of such files.',
      items: {
        anyOf: [
          {
            type: 'object',
            properties: { file: { type: 'string', minLength: 1, description: 'A JSON or YAML policy file, relative to this test file.' } },
            required: ['file'],
            additionalProperties: false,
          },
          {
            type: 'object',
            properties: {
              directory: {
                type: 'string',
                minLength: 1,
                description: 'A directory of policy files, relative to this test file: its files in the order `verdict start --policies` reads them (by name; names starting with `.` and schemas.json left out).',
              },
            },
            required: ['directory'],
            additionalProperties: false,
          },
          policySchema,
        ],
      },
      default: [],
    },
    entities: {
      type: 'array',
      description: 'Registry entities that cases may name by uri.',
      items: {
        type: 'object',
        properties: {
          uri: { type: 'string', minLength: 1 },
          type: { enum: ['principal', 'resource'] },
          attributes: suppliedAttributesSchema,
        },
        required: ['uri', 'attributes'],
        additionalProperties: false,
      },
      default: [],
    },
    cases: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        properties: {
          name: { type: 'string', minLength: 1 },
          principal: principalWithoutTokenSchema,
          resource: resourceReferenceSchema,
          ...actionAndContextProperties,
          action: { ...actionAndContextProperties.action, type: ['string', 'object'], minLength: 1 },
          allowed: { type: 'boolean', description: 'The decision expected.' },
          reason: { type: 'string', description: 'The reason expected, exactly; not compared when absent.' },
          time: {
            type: 'string',
            description: "The decision's time (context.time), RFC 3339 with its offset ('2026-11-27T10:00:00Z'), so that the case decides the same whenever it runs; the time it runs when absent.",
          },
        },
        required: ['name', 'principal', 'resource', 'allowed'],
        additionalProperties: false,
      },
    },
  },
  required: ['cases'],
  additionalProperties: false,
} as const;

export type PolicyTestFile = FromSchema<typeof policyTestFileSchema>;
export type PolicyTestCase = PolicyTestFile['cases'][number];
