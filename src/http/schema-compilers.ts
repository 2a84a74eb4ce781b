import type { ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler, FastifyServerOptions } from 'fastify';
import type FastJsonStringifyCompiler from '@fastify/fast-json-stringify-compiler';
import { compiledOnFirstUse, compileListingErrors, requireWhenUsed } from '../schemas/validation.js';

type SerializerCompiler = FastJsonStringifyCompiler.SerializerCompiler;

/** The keywords of a query string's schema that an empty query string is sure to meet, whatever their values. */
const MET_BY_NO_PARAMETERS = new Set(['type', 'properties', 'additionalProperties', 'description', 'title']);

/**
 * A query string's validator that accepts one with no parameters, what a hot route is nearly always
 * sent, by giving it the schema's defaults as Ajv would, without Ajv; any other gets Ajv's verdict.
 * It has no `schemaEnv`, which Fastify would read before every call: a query string is an object,
 * whose values Ajv coerces in place without its parent.
 */
function emptyQueryFirst(schema: object, validate: ValidateFunction<unknown>): ValidateFunction<unknown> {
  const properties = (schema as { properties?: Record<string, { default?: unknown }> }).properties ?? {};
  // A default that is an object or a list is copied for each query, as Ajv does; a scalar needs no copy (it is on the path of every /check).
  const copies = Object.entries(properties)
    .filter(([, property]) => 'default' in property)
    .map(([name, { default: value }]) => [name, typeof value === 'object' && value !== null ? () => structuredClone(value) : () => value] as const);
  const validator = ((query: Record<string, unknown> | null) => {
    if (typeof query !== 'object' || query === null || Object.keys(query).length > 0) return validate(query);
    for (const [name, copy] of copies) query[name] = copy();
    return true;
  }) as ValidateFunction<unknown>;
  Object.defineProperty(validator, 'errors', { get: () => validate.errors });
  return validator;
}

/** Fastify's validator of a route's part: its schema compiled when first used, query strings and path parameters coerced (Ajv). */
export const lazyValidator: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  const validate = compiledOnFirstUse(() => compileListingErrors(schema, httpPart !== 'body'));
  if (httpPart !== 'querystring' || !Object.keys(schema).every((keyword) => MET_BY_NO_PARAMETERS.has(keyword))) return validate;
  return emptyQueryFirst(schema, validate);
};

/**
 * A route's validator compiler: Fastify's own, but the body is first shown to `handCheck`, and Ajv
 * asked only of the bodies it does not accept. The common body of a hot route is then accepted by a
 * walk written for its schema, without Ajv's generic code (a few microseconds of each request); any
 * other gets Ajv's verdict and its errors. `handCheck` must accept nothing Ajv would refuse.
 */
export function bodyHandCheckedFirst(handCheck: (body: unknown) => boolean): FastifySchemaCompiler<object> {
  return (route) => {
    const validate = lazyValidator(route) as ValidateFunction<unknown>;
    if (route.httpPart !== 'body') return validate;
    const validator = ((body: unknown) => handCheck(body) || validate(body)) as ValidateFunction<unknown>;
    Object.defineProperty(validator, 'errors', { get: () => validate.errors });
    return validator;
  };
}

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;

/**
 * Fastify's schema compilers, each schema compiled when its route first uses it (a start compiled
 * them all, most of its CPU time): bodies validated strictly, query strings and path parameters
 * coerced (Ajv), answers serialized by Fastify's own fast-json-stringify.
 */
export const lazySchemaCompilers: CompilersFactory = {
  // Fastify's typings describe @fastify/ajv-compiler's factory; Fastify calls what it returns as a FastifySchemaCompiler.
  buildValidator: (() => {
    // Bodies keep their JSON types; query strings and path parameters are text, coerced.
    return lazyValidator;
  }) as unknown as CompilersFactory['buildValidator'],
  buildSerializer: (externalSchemas, options) => {
    let fastJsonStringify: SerializerCompiler | undefined;
    const compile: SerializerCompiler = (route) => {
      const { SerializerSelector } = requireWhenUsed('@fastify/fast-json-stringify-compiler') as typeof FastJsonStringifyCompiler;
      return (fastJsonStringify ??= SerializerSelector()(externalSchemas, options))(route);
    };
    return (route: Parameters<SerializerCompiler>[0]) => {
      let serialize: ((data: unknown) => string) | undefined;
      return (data: unknown) => (serialize ??= compile(route))(data);
    };
  },
};
