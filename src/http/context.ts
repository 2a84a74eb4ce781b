import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Config } from '../config.js';
import type { CheckService } from '../services/checks.js';
import type { PlanService } from '../services/plans.js';
import type { PolicyService } from '../services/policies.js';
import type { RegistryService } from '../services/registry.js';
import type { SchemaService } from '../services/attribute-schemas.js';
import type { BulkPool } from '../pool/bulk-pool.js';
import type { MeasuredPlacement } from '../pool/measured-placement.js';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import type { Readiness } from '../services/readiness.js';
import type { AuditTrail } from '../audit/audit-trail.js';
import type { ServedRevision } from './revision.js';

/** What the route plugins work with; built once by buildApp. */
export interface AppContext {
  config: Config;
  snapshots: PolicySnapshots;
  /** The revision of the snapshot in use, which every answer names (see revision.ts). */
  revision: ServedRevision;
  checks: CheckService;
  plans: PlanService;
  policies: PolicyService;
  registry: RegistryService;
  schemas: SchemaService;
  audit: AuditTrail;
  readiness: Readiness;
  /**
   * Present when bulks may go to the pool (see bulkPlacement): bulk bodies of at least `minimumBodyLength` characters go to it, or,
   * with `placement`, those that come while it chooses the pool.
   */
  pool?: { bulk: BulkPool; minimumBodyLength: number; placement?: MeasuredPlacement };
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
