import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import type { Store } from './store/store.js';
import { composeServices } from './services/compose.js';
import { buildServer } from './http/server.js';

/**
 * The services the configuration asks for (src/services/compose.ts) and the HTTP server on them
 * (src/http/server.ts), ready to listen.
 * `openedStore`: a store already open (tests that inject faults); by default the one the configuration names.
 */
export async function buildApp(config: Config, openedStore?: Store): Promise<FastifyInstance> {
  return buildServer(config, await composeServices(config, openedStore));
}
