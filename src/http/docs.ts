import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { API_KEY_HEADER } from './admin-auth.js';
import { VERSION } from '../version.js';

/**
 * The OpenAPI document, generated from the route schemas that also validate and serialize, and
 * the interactive documentation at /docs. Registered before the routes so that it sees them all.
 */
export async function registerDocs(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Verdict',
        version: VERSION,
        description: 'Attribute-based authorization decisions, compatible with the Eunomia API.',
      },
      components: {
        securitySchemes: { adminApiKey: { type: 'apiKey', in: 'header', name: API_KEY_HEADER.toUpperCase() } },
      },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
}
