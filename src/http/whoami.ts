import type { FastifyPluginAsync } from 'fastify';
import { API_KEY_SECURITY } from './admin-auth.js';
import { ERROR_RESPONSES } from './responses.js';
import { ANONYMOUS } from './writer.js';
import { OPERATOR_STYLES, type OperatorStyle } from '../engine/operators/index.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Asked by the dashboard to learn whether it needs a key: a 401 here is its question answered,
     * not a client's mistake, and the live view does not count it as a client error.
     */
    accessProbe?: boolean;
  }
}

const whoamiSchema = {
  type: 'object',
  properties: {
    actor: { type: 'string', description: 'The name of the admin key sent (`default` for ADMIN_API_KEY); `anonymous` when authentication is off.' },
    role: { type: 'string', enum: ['admin', 'read'], description: '`read` keys may only read.' },
    operator_style: { type: 'string', enum: OPERATOR_STYLES, description: 'How this server spells operators in its answers (`--operator-style`); the dashboard offers those spellings.' },
    policy_files: {
      type: ['string', 'null'],
      description: 'The directory the policies come from (`--policies`), where they are changed instead of written (writes answer 409); null when they are written through this API.',
    },
  },
  required: ['actor', 'role', 'operator_style', 'policy_files'],
  additionalProperties: false,
} as const;

/**
 * `GET /admin/whoami`: which key a client holds and what it may do (the dashboard hides what it may
 * not), how the server spells operators (the dashboard offers those spellings), and whether policies
 * come from files (the dashboard then offers no policy write).
 */
export const whoamiRoutes: FastifyPluginAsync<{ operatorStyle: OperatorStyle; policyFiles: string | null }> = async (app, { operatorStyle, policyFiles }) => {
  app.get('/admin/whoami', {
    schema: { tags: ['audit'], security: API_KEY_SECURITY, summary: 'The admin key used, its role, and the operator style', response: { 200: whoamiSchema, ...ERROR_RESPONSES } },
    config: { accessProbe: true },
    handler: (request) => ({
      ...(request.adminKey === null ? { actor: ANONYMOUS, role: 'admin' as const } : { actor: request.adminKey.name, role: request.adminKey.role }),
      operator_style: operatorStyle,
      policy_files: policyFiles,
    }),
  });
};
