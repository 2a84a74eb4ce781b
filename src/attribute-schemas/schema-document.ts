import type { Ajv, AnySchema } from 'ajv';
import { requireWhenUsed, stopsAfterTooManyErrors } from '../schemas/validation.js';
import { linearRegExp, PatternError } from '../engine/linear-regexp.js';

/** The longest schema document accepted, in characters of JSON: a schema is compiled into code at start. */
export const MAX_SCHEMA_DOCUMENT_LENGTH = 1024 * 1024;

/**
 * Most objects and lists a schema document's schemas may hold together: what compiling it costs grows
 * with them, and a process compiles a document it is given while its checks wait (see docs/schemas.md
 * for the figures). Far more than attribute schemas need: hundreds of attributes and their rules.
 */
export const MAX_SCHEMA_NODES = 2000;

/** The parts of a check whose attributes a schema document describes. */
export const SCHEMA_PARTS = ['principal', 'resource', 'action', 'context'] as const;
export type SchemaPart = (typeof SCHEMA_PARTS)[number];

/**
 * The schemas of one part: `attributes` for every entity of it, `types` for those of one type (the
 * `<type>:` prefix of a principal's or resource's uri, an action's name), in addition.
 */
export interface PartSchemas {
  attributes?: AnySchema;
  types?: Record<string, AnySchema>;
}

/** A schema document: the JSON Schemas of the attributes of principals, resources, actions and the context. */
export type SchemaDocument = Partial<Record<SchemaPart, PartSchemas>>;

/** A schema document that cannot be used: the message says where and why. */
export class SchemaDocumentError extends Error {}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isSchema = (value: unknown): value is AnySchema => isObject(value) || typeof value === 'boolean';

/**
 * Ajv's regular expression engine for `pattern` and `patternProperties`: the linear-time one (see
 * linearRegExp), since these run against the strings clients send. A pattern it does not take fails
 * the schema's compilation, naming the pattern.
 */
const schemaPatterns = Object.assign(
  (pattern: string) => {
    try {
      const regExp = linearRegExp(pattern);
      // A string too long for the pattern to be matched against within its bound does not match it.
      return { test: (text: string) => regExp.test(text) === true };
    } catch (error) {
      const shown = pattern.length > 100 ? `${pattern.slice(0, 100)}…` : pattern;
      throw new PatternError(`the pattern ${JSON.stringify(shown)}, which ${(error as Error).message}`);
    }
  },
  { code: 'linearRegExp' },
);

/**
 * An Ajv for attribute schemas: strict, so that a misspelled keyword is refused rather than ignored
 * (a schema that silently checks nothing is what schemas are there to prevent), with the standard
 * formats, and patterns on the linear-time engine. `allErrors`: find every error, stopping past
 * MAX_COLLECTED_ERRORS (a list of a million wrong items would otherwise cost an error object each).
 */
export function createSchemaAjv(allErrors = false): Ajv {
  const { Ajv } = requireWhenUsed('ajv') as typeof import('ajv');
  const addFormats = (requireWhenUsed('ajv-formats') as { default: (ajv: Ajv) => Ajv }).default;
  // Without Ajv's code optimization a schema compiles about four times faster, and the code it makes
  // validates attributes as fast (measured): a process compiles every document it is given.
  const code = { optimize: false, regExp: schemaPatterns, ...(allErrors ? { process: stopsAfterTooManyErrors } : {}) };
  return addFormats(new Ajv({ strict: true, allowUnionTypes: true, allErrors, code }));
}

/**
 * The schema document `text` holds (JSON), its shape checked and every schema in it compiled by a
 * strict Ajv. Throws SchemaDocumentError naming the part, the type and what Ajv refused.
 */
export function readSchemaDocument(text: string): SchemaDocument {
  if (text.length > MAX_SCHEMA_DOCUMENT_LENGTH) throw new SchemaDocumentError(`longer than ${MAX_SCHEMA_DOCUMENT_LENGTH} characters`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new SchemaDocumentError(`not JSON: ${(error as Error).message}`);
  }
  const document = schemaDocumentOf(parsed);
  if (holdsMoreNodesThan(document, MAX_SCHEMA_NODES)) {
    throw new SchemaDocumentError(`holds more than ${MAX_SCHEMA_NODES} objects and lists in its schemas (what compiling it costs grows with them)`);
  }
  const ajv = createSchemaAjv();
  for (const [label, schema] of schemasOf(document)) {
    try {
      ajv.compile(schema);
    } catch (error) {
      if (error instanceof PatternError) throw new SchemaDocumentError(`${label} has ${error.message}`);
      throw new SchemaDocumentError(`${label} is not a valid JSON Schema: ${(error as Error).message}`);
    }
  }
  return document;
}

/** `value` as a schema document, or SchemaDocumentError saying which field is wrong. */
function schemaDocumentOf(value: unknown): SchemaDocument {
  if (!isObject(value)) throw new SchemaDocumentError('must be an object of principal, resource, action and context');
  const document: SchemaDocument = {};
  for (const key in value) {
    if (!(SCHEMA_PARTS as readonly string[]).includes(key)) throw new SchemaDocumentError(`'${key}' is not one of ${SCHEMA_PARTS.join(', ')}`);
    const part = value[key];
    if (!isObject(part)) throw new SchemaDocumentError(`${key} must be an object of attributes and types`);
    for (const field in part) {
      if (field !== 'attributes' && !(field === 'types' && key !== 'context')) {
        throw new SchemaDocumentError(`${key}.${field} is not expected: ${key === 'context' ? 'the context has attributes only' : 'a part has attributes and types'}`);
      }
    }
    if (part.attributes !== undefined && !isSchema(part.attributes)) throw new SchemaDocumentError(`${key}.attributes must be a JSON Schema (an object)`);
    if (part.types !== undefined) {
      if (!isObject(part.types)) throw new SchemaDocumentError(`${key}.types must be an object of a JSON Schema by type`);
      for (const type in part.types) if (!isSchema(part.types[type])) throw new SchemaDocumentError(`${key}.types.${type} must be a JSON Schema (an object)`);
    }
    document[key as SchemaPart] = part as PartSchemas;
  }
  return document;
}

/** Whether the schemas of a document hold more objects and lists than `most`, counted without recursion (a deep one cannot overflow the stack). */
function holdsMoreNodesThan(document: SchemaDocument, most: number): boolean {
  const pending: unknown[] = [...schemasOf(document)].map(([, schema]) => schema);
  let nodes = 0;
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value !== 'object' || value === null) continue;
    if (++nodes > most) return true;
    for (const inner of Object.values(value)) pending.push(inner);
  }
  return false;
}

/** Every schema of a document with where it sits (`principal.types.user`). */
export function* schemasOf(document: SchemaDocument): Generator<[string, AnySchema]> {
  for (const part of SCHEMA_PARTS) {
    const schemas = document[part];
    if (schemas === undefined) continue;
    if (schemas.attributes !== undefined) yield [`${part}.attributes`, schemas.attributes];
    for (const type in schemas.types ?? {}) yield [`${part}.types.${type}`, schemas.types![type]!];
  }
}
