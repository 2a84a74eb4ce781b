import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest, type RouteOptions } from 'fastify';
import { installErrorHandling } from './errors.js';
import { revisionOnEveryAnswer, type ServedRevision } from './revision.js';

/** Where the pages answer: the API documentation and its OpenAPI document, and the dashboard. */
const PAGE_URLS = ['/docs', '/docs/*', '/openapi.json', '/dashboard', '/dashboard/*'];

/**
 * The API documentation (/docs, /openapi.json) and the dashboard (/dashboard/), made on the first
 * request for one of them: the packages they need (the OpenAPI generator and its YAML parser,
 * swagger-ui, the static file server) would cost every start a fifth of its time, and a sidecar may
 * never serve a page. They run in a Fastify instance of their own, to which the server hands each
 * request for a page, connection and all. The OpenAPI document describes the server's routes,
 * recorded as the server declares them: call this before declaring any.
 */
export function servePagesOnFirstUse(app: FastifyInstance, revision: ServedRevision): void {
  const routes: RouteOptions[] = [];
  let pages: Promise<FastifyInstance> | undefined;
  const answerWithPage = async (request: FastifyRequest, reply: FastifyReply) => {
    pages ??= pagesServing(routes, app, revision).catch((error: unknown) => {
      pages = undefined;
      throw error;
    });
    const serving = await pages;
    // The pages instance answers on the server's connection itself, streaming each file as it is read.
    reply.hijack();
    serving.routing(request.raw, reply.raw);
  };
  app.addHook('onRoute', (route) => {
    // The documentation leaves HEAD routes out, and the pages instance makes its own.
    if (route.handler !== answerWithPage && route.method !== 'HEAD') routes.push(route);
  });
  for (const url of PAGE_URLS) app.get(url, { schema: { hide: true } }, answerWithPage);
  app.addHook('onClose', async () => {
    await (await pages?.catch(() => undefined))?.close();
  });
}

/** The pages, on a Fastify instance that holds `routes` for its OpenAPI document to describe; none of them is served there. */
async function pagesServing(routes: RouteOptions[], app: FastifyInstance, revision: ServedRevision): Promise<FastifyInstance> {
  const [{ registerDocs }, { dashboardRoutes }] = await Promise.all([import('./docs.js'), import('./dashboard.js')]);
  const pages = Fastify({ loggerInstance: app.log, logController: new LogController({ disableRequestLogging: true }) });
  revisionOnEveryAnswer(pages, revision);
  installErrorHandling(pages, revision);
  // The routes are there to be described: no request reaches them, so nothing of theirs is compiled.
  pages.setValidatorCompiler(() => () => true);
  pages.setSerializerCompiler(() => (data) => JSON.stringify(data));
  await registerDocs(pages);
  const describedOnly = async () => {
    throw new Error('a route of the server was asked of the pages');
  };
  for (const route of routes) pages.route({ method: route.method, url: route.url, schema: route.schema, handler: describedOnly });
  await pages.register(dashboardRoutes);
  await pages.ready();
  return pages;
}
