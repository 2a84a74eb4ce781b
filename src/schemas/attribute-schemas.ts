import type { FromSchema } from 'json-schema-to-ts';
import { validationIssueSchema } from './errors.js';

/** A JSON Schema of an attributes object, as the document holds it (any JSON Schema; checked by a strict Ajv, not here). */
const attributesSchema = { type: ['object', 'boolean'], additionalProperties: true, description: 'A JSON Schema (draft-07) of the attributes object.' } as const;

const partSchema = {
  type: 'object',
  properties: {
    attributes: attributesSchema,
    types: { type: 'object', additionalProperties: attributesSchema, description: 'A JSON Schema by entity type (the `<type>:` prefix of a uri; an action name).' },
  },
  additionalProperties: false,
} as const;

/**
 * The attribute schema document, as the admin API takes and gives it: its shape. Each schema in it
 * is then checked by readSchemaDocument, exactly as a file's is (compiled by a strict Ajv), so that a
 * refusal names the schema and what is wrong with it.
 */
export const schemaDocumentSchema = {
  type: 'object',
  additionalProperties: false,
  description:
    'JSON Schemas of the attributes of principals, resources and actions (`attributes` for all, `types` by type) and of the context (`attributes`); see docs/schemas.md. ' +
    'At most 1 MiB of JSON, and at most 2,000 objects and lists in its schemas; every schema is compiled by Ajv in strict mode.',
  properties: {
    principal: partSchema,
    resource: partSchema,
    action: partSchema,
    context: { type: 'object', properties: { attributes: attributesSchema }, additionalProperties: false },
  },
} as const;

const versionSchema = { type: 'integer', minimum: 0, description: 'The version of the document the write that made it made (0: from a file).' } as const;

export const schemasAnswerSchema = {
  type: 'object',
  properties: {
    document: schemaDocumentSchema,
    version: versionSchema,
    file: { type: ['string', 'null'], description: 'The file the document comes from (`--schemas`, or schemas.json beside `--policies`); null when it is managed through this API.' },
  },
  required: ['document', 'version', 'file'],
  additionalProperties: false,
} as const;

/** What `GET /admin/schemas` answers (the dashboard reads it). */
export type SchemasAnswerBody = FromSchema<typeof schemasAnswerSchema>;

export const schemasWriteAnswerSchema = {
  type: 'object',
  properties: {
    document: { anyOf: [schemaDocumentSchema, { type: 'null' }], description: 'The document in force after the write; null after a deletion.' },
    version: versionSchema,
    recheck: {
      type: 'object',
      description:
        'The stored policies that have problems against the document written, each problem as a policy write would report it (`loc` within the policy). ' +
        'They stay in force. At most 100 problems are listed; `complete` is false when some were left out.',
      properties: {
        policies: {
          type: 'array',
          items: {
            type: 'object',
            properties: { name: { type: 'string' }, problems: { type: 'array', items: validationIssueSchema } },
            required: ['name', 'problems'],
            additionalProperties: false,
          },
        },
        complete: { type: 'boolean' },
      },
      required: ['policies', 'complete'],
      additionalProperties: false,
    },
  },
  required: ['document', 'version', 'recheck'],
  additionalProperties: false,
} as const;
