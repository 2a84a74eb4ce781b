import t from 'tap';
import express from 'express';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { expressGuard, VerdictClient } from '../../clients/node/src/index.js';
import { startServer } from '../helpers/server.js';
import { roleRule } from './helpers.js';

// The Express guard, in a real Express app (the Fastify guard runs in examples/documents-app).

t.test('an Express route guarded by Verdict: next() when allowed, 403 when denied, the reason only when asked, 503 when undecided', async (t) => {
  const verdict = await startServer();
  t.teardown(verdict.close);
  t.equal((await verdict.call('POST', '/admin/policies', roleRule('readers', 'reader'))).status, 200);
  const client = new VerdictClient({ url: verdict.url, retries: 0 });
  t.teardown(() => client.close());
  const mapping = (request: express.Request) => ({ principal: { attributes: { role: String(request.headers['x-role']) } }, resource: { uri: `report:${request.params.id}` }, action: 'read' });
  const app = express();
  app.get('/reports/:id', expressGuard(client, mapping), (request, response) => void response.json({ id: request.params.id }));
  app.get('/explained/:id', expressGuard(client, mapping, { reasonHeader: 'x-why' }), (request, response) => void response.json({ id: request.params.id }));
  const listening = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => listening.once('listening', resolve));
  t.teardown(() => new Promise((resolve) => listening.close(resolve)));
  const base = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
  const get = async (path: string, role: string) => {
    const response = await request(base + path, { headers: { 'x-role': role } });
    return { status: response.statusCode, why: response.headers['x-why'], body: await response.body.json() };
  };
  t.match(await get('/reports/7', 'reader'), { status: 200, body: { id: '7' } });
  t.match(await get('/reports/7', 'guest'), { status: 403, why: undefined, body: { detail: 'Forbidden' } });
  const explained = await get('/explained/7', 'guest');
  t.equal(explained.status, 403);
  t.equal(decodeURIComponent(explained.why as string), 'Action denied by default effect');
  await verdict.close();
  t.match(await get('/reports/7', 'reader'), { status: 503 }, 'Verdict gone: 503');
});
