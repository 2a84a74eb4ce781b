import type { FastifyPluginAsync } from 'fastify';
import { API_KEY_SECURITY } from './admin-auth.js';
import { ERROR_RESPONSES } from './responses.js';
import { ANONYMOUS } from './writer.js';

const whoamiSchema = {
  type: 'object',
  properties: {
    actor: { type: 'string', description: 'The name of the admin key sent (`default` for ADMIN_API_KEY); `anonymous` when authentication is off.' },
    role: { type: 'string', enum: ['admin', 'read'], description: '`read` keys may only read.' },
  },
  required: ['actor', 'role'],
  additionalProperties: false,
} as const;

/** `GET /admin/whoami`: which key a client holds and what it may do (the dashboard hides what it may not). */
export const whoamiRoutes: FastifyPluginAsync = async (app) => {
  app.get('/admin/whoami', {
    schema: { tags: ['audit'], security: API_KEY_SECURITY, summary: 'The admin key used, and its role', response: { 200: whoamiSchema, ...ERROR_RESPONSES } },
    handler: (request) => (request.adminKey === null ? { actor: ANONYMOUS, role: 'admin' } : { actor: request.adminKey.name, role: request.adminKey.role }),
  });
};
