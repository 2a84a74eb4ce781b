import type { FastifyPluginAsync } from 'fastify';
import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import {
  checkRequestListSchema,
  checkRequestSchema,
  checkResponseListSchema,
  checkResponseSchema,
} from '../schemas/check.js';
import { ClientError } from '../errors.js';
import type { RoutesOptions } from './context.js';
import { ERROR_RESPONSES } from './responses.js';

/** The public check interface: `POST /check` and `POST /check/bulk`. No authentication. */
export const checkRoutes: FastifyPluginAsync<RoutesOptions> = async (fastify, { context }) => {
  const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
  const { checks, config } = context;

  app.post('/check', {
    schema: {
      tags: ['checks'],
      summary: 'Decide one check',
      description:
        'Principal and resource each by registered `uri`, supplied `attributes`, or both (merged). Nested or flat form.',
      body: checkRequestSchema,
      response: { 200: checkResponseSchema, ...ERROR_RESPONSES },
    },
    handler: (request) => checks.check(request.body),
  });

  app.post('/check/bulk', {
    schema: {
      tags: ['checks'],
      summary: 'Decide many checks in one call',
      description: `A list of check requests; the answers come back in the same order. At most ${config.bulkCheckMaxRequests} per call.`,
      body: checkRequestListSchema,
      response: { 200: checkResponseListSchema, ...ERROR_RESPONSES },
    },
    // Counted before validation, so an oversized batch is refused without validating every item.
    preValidation: async (request) => {
      if (!Array.isArray(request.body)) return;
      if (request.body.length === 0) throw new ClientError(400, 'Empty request list');
      if (request.body.length > config.bulkCheckMaxRequests) {
        throw new ClientError(400, `Too many requests. Maximum allowed: ${config.bulkCheckMaxRequests}`);
      }
    },
    handler: (request) => checks.checkMany(request.body),
  });
};
