import { createRequire } from 'node:module';
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import type { FastifySchemaValidationError } from 'fastify';
import type { ValidationIssue } from './errors.js';

/** Loads CommonJS packages synchronously, where a schema is first compiled (see createAjv). */
export const requireWhenUsed = createRequire(import.meta.url);

/**
 * Errors an exhaustive validation collects before it stops: well past the 20 a 422 lists (see
 * listedIssues), so that those are final (an `if` may hold errors it later drops, but only the
 * latest), and few enough that a body with an error at every turn costs no more than a short one.
 */
export const MAX_COLLECTED_ERRORS = 100;

/** What an exhaustive validator throws once it holds more than MAX_COLLECTED_ERRORS errors. */
interface TooManyErrors {
  tooManyErrors: ErrorObject[];
}

export const isTooManyErrors = (thrown: unknown): thrown is TooManyErrors => typeof thrown === 'object' && thrown !== null && 'tooManyErrors' in thrown;

const STOP_AFTER_TOO_MANY = `if(errors>${MAX_COLLECTED_ERRORS}){throw {tooManyErrors:vErrors};}`;

/**
 * Ajv's generated code for `allErrors`, made to stop once it holds too many errors: Ajv has no such
 * option, and without one a hostile body costs an error object for each of its values. Every error
 * Ajv adds ends in `errors++;`, and errors taken over from a called validator in
 * `errors = vErrors.length;` (Ajv 8's code generator; test/http/error-lists.test.ts holds it to that).
 */
export function stopsAfterTooManyErrors(code: string): string {
  return code.replaceAll('errors++;', `errors++;${STOP_AFTER_TOO_MANY}`).replaceAll('errors = vErrors.length;', `errors = vErrors.length;${STOP_AFTER_TOO_MANY}`);
}

/**
 * An Ajv for request schemas. Ajv and its formats are loaded by the first call rather than at
 * start: schemas are compiled when their route is first used (see lazySchemaCompilers), and
 * loading Ajv was a tenth of a start's CPU time. `allErrors`: find every error (up to
 * MAX_COLLECTED_ERRORS), not only the first.
 */
export function createAjv(coerceTypes: boolean, allErrors = false): Ajv {
  const { Ajv } = requireWhenUsed('ajv') as typeof import('ajv');
  const addFormats = (requireWhenUsed('ajv-formats') as { default: (ajv: Ajv) => Ajv }).default;
  // Bodies keep their JSON types ("1" is not 1); query strings and paths are text and are coerced.
  const ajv = new Ajv({
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    allErrors,
    allowUnionTypes: true,
    strict: false,
    ...(allErrors ? { code: { process: stopsAfterTooManyErrors } } : {}),
  });
  return addFormats(ajv);
}

/** Ajv instances shared by every validator of one kind: (coerced or not) × (first error or every error). */
const ajvs = new Map<string, Ajv>();
const sharedAjv = (coerceTypes: boolean, allErrors: boolean): Ajv => {
  const key = `${coerceTypes}/${allErrors}`;
  let ajv = ajvs.get(key);
  if (ajv === undefined) ajvs.set(key, (ajv = createAjv(coerceTypes, allErrors)));
  return ajv;
};

/**
 * A validator of `schema` that stops at the first error (Ajv's advice for servers: a valid body,
 * the common case, costs no more), and on a body it refuses looks again for every error, up to
 * MAX_COLLECTED_ERRORS: `errors` then holds them all, in the order of the body. The validator that
 * looks for every error is compiled by the first body refused.
 */
export function compileListingErrors<T>(schema: object, coerceTypes = false): ValidateFunction<T> {
  const firstError = sharedAjv(coerceTypes, false).compile<T>(schema);
  let everyError: ValidateFunction<T> | undefined;
  let errors: ErrorObject[] | null = null;
  const validate = ((data: unknown, context?: Parameters<ValidateFunction<T>>[1]) => {
    if (firstError(data, context)) {
      errors = null;
      return true;
    }
    everyError ??= sharedAjv(coerceTypes, true).compile<T>(schema);
    try {
      everyError(data, context);
      errors = everyError.errors ?? firstError.errors ?? null;
    } catch (thrown) {
      if (!isTooManyErrors(thrown)) throw thrown;
      // Ajv counts the errors of an `if` clause as empty placeholders, dropped once the clause is
      // decided: a cut inside one leaves them in the list, and only real errors are kept.
      errors = thrown.tooManyErrors.filter((error) => typeof error.instancePath === 'string' && typeof error.keyword === 'string');
    }
    return false;
  }) as ValidateFunction<T>;
  Object.defineProperties(validate, {
    errors: { get: () => errors },
    schemaEnv: { get: () => firstError.schemaEnv },
    schema: { get: () => firstError.schema },
  });
  return validate;
}

/**
 * A validator compiled on its first call, so that a start compiles no schema of a route that is
 * never asked, and a worker thread none that the bodies it reads never need. It is the compiled one
 * in every respect Fastify uses: `errors` after a call, and `schemaEnv` (which tells Fastify to pass
 * the parent, so that Ajv may coerce a root value).
 */
export function compiledOnFirstUse<T>(compile: () => ValidateFunction<T>): ValidateFunction<T> {
  let compiled: ValidateFunction<T> | undefined;
  const validator = ((data: unknown, context?: Parameters<ValidateFunction<T>>[1]) => (compiled ??= compile())(data, context)) as ValidateFunction<T>;
  Object.defineProperties(validator, {
    errors: { get: () => compiled?.errors },
    schemaEnv: { get: () => (compiled ??= compile()).schemaEnv },
  });
  return validator;
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

/** `a`, `a or b`, `a, b or c`. */
const alternatives = (words: string[]) => (words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`);

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
      return { msg: `must be of type ${alternatives(String(params.type).split(','))}`, type: 'type_error' };
    // The only schemas that are `false` are the group keywords inside a group's alternatives, and `set` inside a condition set (see policy.ts).
    case 'false schema':
      return error.instancePath.endsWith('/set')
        ? { msg: 'is not allowed here: a condition set refers to no other set', type: 'value_error' }
        : { msg: 'is not allowed here: groups do not nest (an alternative holds conditions and, in a rule, references to condition sets)', type: 'value_error' };
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
