import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync } from 'fastify';
import fastifyStatic from '@fastify/static';
import { servePagesSafely } from './page-headers.js';

/** Where `npm run build` puts the dashboard (dashboard/build.mjs's output), beside the compiled server in dist/. */
export const DASHBOARD_ROOT = fileURLToPath(new URL('../../public/dashboard/', import.meta.url));

/** The ops dashboard: a single page at /dashboard/ that works through the public and admin API. */
export const dashboardRoutes: FastifyPluginAsync = async (app) => {
  servePagesSafely(app);
  await app.register(fastifyStatic, {
    root: DASHBOARD_ROOT,
    prefix: '/dashboard',
    redirect: true,
    decorateReply: false,
    schemaHide: true,
  });
};
