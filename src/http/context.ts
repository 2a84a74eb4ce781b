import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Config } from '../config/config.js';
import type { Services } from '../services/compose.js';
import type { ServedRevision } from './revision.js';

/** The services the routes call. */
type RoutedServices = Pick<Services, 'snapshots' | 'checks' | 'plans' | 'policies' | 'impact' | 'shadows' | 'registry' | 'schemas' | 'audit' | 'authzen' | 'authzenSearch' | 'readiness' | 'bulks'>;

/** What the route plugins work with; built once by buildApp. */
export interface AppContext extends RoutedServices {
  config: Config;
  /** The revision of the snapshot in use, which every answer names (see revision.ts). */
  revision: ServedRevision;
  /** Holds a check back until this process serves the revision it asks for (see min-revision.ts). */
  minRevisionCheck: onRequestHookHandler;
  /** Run first on every admin and earlier-family write route: the admin key check (admin-auth.ts) when authentication is on, else the open admin guard (open-admin.ts). */
  adminGuard: onRequestHookHandler;
  /**
   * Asked before a route explains a decision, while admin authentication is on (undefined while it is
   * off): explanations show what the admin API protects, so they need a key of any role.
   */
  explainGuard?: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
}

export interface RoutesOptions {
  context: AppContext;
}
