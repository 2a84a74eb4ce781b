import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { API_KEY_HEADER } from '../schemas/wire.js';
import { VERSION } from '../version.js';
import { servePagesSafely } from './page-headers.js';

/**
 * The one inline <style> swagger-ui renders (in its top bar's logo, from swagger-ui-standalone-preset.js),
 * allowed by its hash. Should an update of @fastify/swagger-ui change it, the logo loses its colours,
 * nothing else, and the dashboard's end-to-end test, which loads /docs, reports the blocked style.
 */
const SWAGGER_LOGO_STYLE = 'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w=';

/**
 * The OpenAPI document, generated from the route schemas that also validate and serialize, and
 * the interactive documentation at /docs; the document also at /docs/json and /openapi.json. Registered before
 * the routes it describes, so that it sees them all (see pages.ts).
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
        securitySchemes: {
          adminApiKey: { type: 'apiKey', in: 'header', name: API_KEY_HEADER.toUpperCase() },
          // Only when the server is given a token (AUTHZEN_TOKEN); otherwise the AuthZEN routes are public.
          authzenBearer: { type: 'http', scheme: 'bearer' },
        },
      },
    },
  });
  // Where Eunomia (FastAPI) serves its document, for the tools pointed at it there.
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  await app.register(async (docs) => {
    servePagesSafely(docs, [SWAGGER_LOGO_STYLE]);
    await docs.register(swaggerUi, { routePrefix: '/docs' });
  });
}
