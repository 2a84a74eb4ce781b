import type { FastifyInstance } from 'fastify';
import type { Config } from './config/config.js';
import { composeServices, type Substitutes } from './services/compose.js';
import { buildServer } from './http/server.js';

/**
 * The services the configuration asks for (src/services/compose.ts) and the HTTP server on them
 * (src/http/server.ts), ready to listen. `substitutes`: parts tests put in place of the real ones.
 */
export async function buildApp(config: Config, substitutes: Substitutes = {}): Promise<FastifyInstance> {
  return buildServer(config, await composeServices(config, substitutes));
}
