import { errorResponseSchema, validationErrorResponseSchema } from '../schemas/errors.js';

/** Error responses every route may give, for serialization and the OpenAPI document. */
export const ERROR_RESPONSES = {
  '4xx': errorResponseSchema,
  422: validationErrorResponseSchema,
} as const;
