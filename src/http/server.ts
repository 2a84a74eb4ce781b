import Fastify, { LogController, type FastifyInstance, type FastifyReply } from 'fastify';
import type { Config } from '../config/config.js';
import type { Services } from '../services/compose.js';
import type { Readiness } from '../services/readiness.js';
import type { Metrics } from '../live/metrics.js';
import type { AppContext } from './context.js';
import { lazySchemaCompilers } from './schema-compilers.js';
import { installErrorHandling } from './errors.js';
import { installJsonBodyParser } from './json-body.js';
import { adminKeyCheck, EXPLAIN_NEEDS_KEY, trustedProxies } from './admin-auth.js';
import { API_KEY_HEADER } from '../schemas/wire.js';
import { openAdminGuard } from './open-admin.js';
import { servePagesOnFirstUse } from './pages.js';
import { healthRoutes } from './health.js';
import { checkRoutes } from './check.js';
import { authzenRoutes } from './authzen.js';
import { planRoutes } from './plan.js';
import { extAuthzRoutes } from './ext-authz.js';
import type { GrpcExtAuthz } from '../grpc/ext-authz.js';
import { policyHistoryRoutes, policyRoutes } from './policies.js';
import { policyChangeRoutes } from './policy-changes.js';
import { checkAtRoutes } from './check-at.js';
import { attributeSchemaRoutes } from './attribute-schemas.js';
import { registryRoutes } from './registry.js';
import { eunomiaEarlierRoutes } from './eunomia-earlier-family.js';
import { instrumentRoutes, metricsRoutes } from './metrics.js';
import { auditRoutes } from './audit.js';
import { whoamiRoutes } from './whoami.js';
import { minRevisionCheck } from './min-revision.js';
import { revisionOnEveryAnswer, type ServedRevision } from './revision.js';
import { liveRoutes } from './live.js';
import { changeRoutes } from './changes.js';
import { lazyRequestLogger } from './request-logger.js';
import { requestIds } from './request-ids.js';
import { traceDecidingRequests } from './tracing.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Flipped by a shutdown before the listeners close. */
    readiness: Readiness;
    /** Served at GET /metrics, or on its own port (see Config.metricsPort). */
    metrics: Metrics;
    /** Where bulk checks are decided, and why (see bulkPlacement): the ready log line says it. */
    evaluation: string;
    /** How many worker threads the pool may run, and why (see workerSizing): the ready log line says it. */
    workers: string;
    /** Envoy's gRPC external authorization, once the app is ready (`--ext-authz-grpc`). */
    extAuthzGrpc: GrpcExtAuthz | undefined;
    /** The checks decided or refused since a time (epoch ms), by every door. */
    checksSince: (epochMs: number) => number;
  }
}

/** Entity URIs arrive percent-encoded as path parameters (see MAX_ENTITY_URI_LENGTH); find-my-way's default of 100 is too short. */
const MAX_PATH_PARAMETER_LENGTH = 8192;

/**
 * The Fastify server on `services`: its options, the hooks every route shares and the route plugins,
 * ready to listen. Starts the services' background work with the server's logger; closing the server
 * closes them.
 */
/** The request headers read, in bytes: Node's default (16 KiB) would refuse a long token before it is looked at. */
const MAX_HEADER_BYTES = 64 * 1024;

export async function buildServer(config: Config, services: Services): Promise<FastifyInstance> {
  const { snapshots, metrics, readiness } = services;
  const app = Fastify({
    logger: {
      level: config.logLevel,
      redact: { paths: [`req.headers["${API_KEY_HEADER}"]`, 'req.headers.authorization'], censor: '[redacted]' },
    },
    // Per-request log lines only when asked for: the hot path stays free of logging by default.
    logController: new LogController({ disableRequestLogging: !['debug', 'trace'].includes(config.logLevel) }),
    childLoggerFactory: lazyRequestLogger,
    schemaController: { compilersFactory: lazySchemaCompilers },
    bodyLimit: config.bodyLimit,
    // Room for a bearer token longer than tokens may be (MAX_TOKEN_LENGTH) beside the other headers, so that
    // it is refused as a token (401), not as a request Node cannot read (431).
    http: { maxHeaderSize: MAX_HEADER_BYTES },
    // Unique across processes and restarts: audit records name the request that wrote them.
    genReqId: requestIds(),
    // Which peers may name the client address in X-Forwarded-For (the admin-auth failure limit keys on it).
    trustProxy: trustedProxies(config.trustProxy),
    onProtoPoisoning: 'ignore',
    onConstructorPoisoning: 'ignore',
    routerOptions: { maxParamLength: MAX_PATH_PARAMETER_LENGTH },
    // Errors raised before routing (a bad percent-escape, an over-long parameter) keep the {detail} shape.
    frameworkErrors: (error, _request, reply) => {
      const status = (error as { statusCode?: number }).statusCode ?? 400;
      void (reply as FastifyReply).code(status).send({ detail: error.message });
    },
  });
  app.decorate('readiness', readiness);
  app.decorateRequest('adminKey', null);
  app.decorate('metrics', metrics);
  app.decorate('evaluation', services.evaluation);
  app.decorate('workers', services.workers);
  app.decorate('checksSince', (epochMs: number) => services.liveWindow.checksSince(epochMs));
  services.start(app.log);
  if (services.tracing !== undefined) traceDecidingRequests(app, services.tracing);
  app.addHook('onClose', () => services.close());
  instrumentRoutes(app, metrics, services.live);

  // Which policy snapshot answered: after an admin write, the revision that includes it.
  const revision: ServedRevision = () => snapshots.current.revision;
  revisionOnEveryAnswer(app, revision);
  installErrorHandling(app, revision);
  installJsonBodyParser(app, config);
  servePagesOnFirstUse(app, revision);
  const keyCheck = services.adminKeys === undefined ? undefined : await adminKeyCheck(app, config, services.adminKeys);
  const context: AppContext = {
    ...services,
    config,
    revision,
    minRevisionCheck: minRevisionCheck(snapshots, config.minRevisionWaitMs),
    adminGuard: keyCheck?.guard ?? openAdminGuard(config),
    explainGuard: keyCheck && ((request, reply) => keyCheck.requireKey(request, reply, EXPLAIN_NEEDS_KEY)),
  };
  await app.register(healthRoutes, { context });
  if (config.metricsPort === undefined) await app.register(metricsRoutes, { metrics });
  await app.register(checkRoutes, { context });
  await app.register(authzenRoutes, { context });
  await app.register(planRoutes, { context });
  if (services.extAuthz !== undefined) await app.register(extAuthzRoutes, { context, extAuthz: services.extAuthz });
  serveGrpcExtAuthz(app, config, services);
  await app.register(eunomiaEarlierRoutes, { context });
  await app.register(async (admin) => {
    admin.addHook('onRequest', context.adminGuard);
    await admin.register(policyRoutes, { context });
    await admin.register(policyChangeRoutes, { context });
    await admin.register(checkAtRoutes, { context });
    await admin.register(policyHistoryRoutes, { context });
    await admin.register(attributeSchemaRoutes, { context });
    await admin.register(auditRoutes, { context });
    await admin.register(whoamiRoutes, { operatorStyle: config.operatorStyle, policyFiles: config.policiesDir === '' ? null : config.policiesDir });
    await admin.register(liveRoutes, { window: services.liveWindow, counters: services.live });
    await admin.register(changeRoutes, { feed: services.changes });
    if (config.registryEnabled) await admin.register(registryRoutes, { context });
  });
  await app.ready();
  return app;
}

/** The gRPC door of external authorization (`--ext-authz-grpc`), opened once the app is ready and drained before it closes. */
function serveGrpcExtAuthz(app: FastifyInstance, config: Config, services: Services): void {
  app.decorate('extAuthzGrpc', undefined);
  const { extAuthz } = services;
  if (extAuthz === undefined || config.extAuthzGrpc === '') return;
  app.addHook('onReady', async () => {
    const { startGrpcExtAuthz } = await import('../grpc/ext-authz.js');
    app.extAuthzGrpc = await startGrpcExtAuthz(
      { target: config.extAuthzGrpc, host: config.host },
      extAuthz,
      services.readiness,
      app.log,
      requestIds(),
      services.metrics.grpcCallDuration,
      services.tracing?.tracing,
    );
    app.log.info({ address: app.extAuthzGrpc.address }, "Envoy's gRPC external authorization listens");
  });
  app.addHook('preClose', async () => {
    await app.extAuthzGrpc?.close();
  });
}
