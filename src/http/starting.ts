import type { RequestListener } from 'node:http';
import { REVISION_HEADER } from '../schemas/wire.js';
import { readyBody } from './health.js';

/** Until the store is open and the policies compiled, readiness says so. */
const STARTING_CHECKS = { snapshot: 'loading policies', store: 'opening', workers: 'starting' };

/**
 * What the listeners answer while the app is still being built: 503 everywhere, with GET /ready
 * naming what is still loading. GET /health says `starting` with 503 too, so that a 200 from it
 * always means "serving"; a Kubernetes startup probe covers this phase.
 */
export const answerWhileStarting: RequestListener = (request, response) => {
  const path = (request.url ?? '').split('?')[0];
  const reply = (status: number, body: unknown) => {
    response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', [REVISION_HEADER]: '0', 'retry-after': '1' });
    response.end(JSON.stringify(body));
  };
  if (request.method === 'GET' && path === '/health') return reply(503, { status: 'starting', revision: 0 });
  if (request.method === 'GET' && path === '/ready') return reply(503, readyBody({ ready: false, degraded: false, checks: STARTING_CHECKS }));
  reply(503, { detail: 'Verdict is starting; retry shortly' });
};
