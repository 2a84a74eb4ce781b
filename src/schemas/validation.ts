import { createRequire } from 'node:module';
import type { Ajv, ErrorObject } from 'ajv';
import type { FastifySchemaValidationError } from 'fastify';
import type { ValidationIssue } from './errors.js';

/** Loads CommonJS packages synchronously, where a schema is first compiled (see createAjv). */
export const requireWhenUsed = createRequire(import.meta.url);

/**
 * An Ajv for request schemas. Ajv and its formats are loaded by the first call rather than at
 * start: schemas are compiled when their route is first used (see lazySchemaCompilers), and
 * loading Ajv was a tenth of a start's CPU time.
 */
export function createAjv(coerceTypes: boolean): Ajv {
  const { Ajv } = requireWhenUsed('ajv') as typeof import('ajv');
  const addFormats = (requireWhenUsed('ajv-formats') as { default: (ajv: Ajv) => Ajv }).default;
  // Bodies keep their JSON types ("1" is not 1); query strings and paths are text and are coerced.
  const ajv = new Ajv({
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    allErrors: false,
    allowUnionTypes: true,
    strict: false,
  });
  return addFormats(ajv);
}

const LOCATION_OF_PART: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

function pointerSegments(pointer: string): (string | number)[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((segment) => (/^(0|[1-9][0-9]*)$/.test(segment) ? Number(segment) : segment));
}

function describe(error: ErrorObject): { last?: string; msg: string; type: string } {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return { last: String(params.missingProperty), msg: 'Field required', type: 'missing' };
    case 'additionalProperties':
      return { last: String(params.additionalProperty), msg: 'Extra inputs are not permitted', type: 'extra_forbidden' };
    case 'enum':
      return {
        msg: `must be one of: ${(params.allowedValues as unknown[]).map((value) => JSON.stringify(value)).join(', ')}`,
        type: 'enum',
      };
    case 'type':
      return { msg: `must be of type ${String(params.type).replace(',', ' or ')}`, type: 'type_error' };
    default:
      return { msg: error.message ?? 'is invalid', type: error.keyword };
  }
}

/** Ajv's errors as the `loc`/`msg`/`type` items of a 422 body. */
export function validationIssues(errors: FastifySchemaValidationError[], part: string | undefined): ValidationIssue[] {
  const root = LOCATION_OF_PART[part ?? 'body'] ?? 'body';
  // An `if` error only says that a branch failed; the branch's own errors say what is wrong.
  return errors.filter((error) => error.keyword !== 'if').map((error) => {
    const { last, msg, type } = describe(error as ErrorObject);
    const loc = [root, ...pointerSegments(error.instancePath)];
    if (last !== undefined) loc.push(last);
    return { loc, msg, type };
  });
}
