import type { ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler, FastifyServerOptions } from 'fastify';
import type FastJsonStringifyCompiler from '@fastify/fast-json-stringify-compiler';
import { compileListingErrors, requireWhenUsed } from '../schemas/validation.js';

type SerializerCompiler = FastJsonStringifyCompiler.SerializerCompiler;

/**
 * A validator compiled on its first call, so that a start compiles no schema of a route that is
 * never asked. It is the compiled one in every respect Fastify uses: `errors` after a call, and
 * `schemaEnv` (which tells Fastify to pass the parent, so that Ajv may coerce a root value).
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

/** Fastify's validator of a route's part: its schema compiled when first used, query strings and path parameters coerced (Ajv). */
const lazyValidator: FastifySchemaCompiler<object> = ({ schema, httpPart }) => compiledOnFirstUse(() => compileListingErrors(schema, httpPart !== 'body'));

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
