import type { FastifyPluginAsync } from 'fastify';
import fastifyStatic from '@fastify/static';
import { servePagesSafely } from './page-headers.js';
import { DASHBOARD_ROOT } from '../build-output.js';

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
