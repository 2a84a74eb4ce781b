import type { Ajv } from 'ajv';
import type { FastifyInstance } from 'fastify';
import { createAjv } from '../schemas/validation.js';

/** Validates bodies strictly and coerces query strings and path parameters. */
export function installValidators(app: FastifyInstance): void {
  const bodies = createAjv(false);
  const textParts = createAjv(true);
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? bodies : textParts).compile(schema) as ReturnType<Ajv['compile']>,
  );
}
