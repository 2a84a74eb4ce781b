import t from 'tap';
import { readFileSync } from 'node:fs';
import { request } from 'undici';
import { VerdictClient } from '../../clients/node/src/index.js';
import { documentsApp } from '../../examples/documents-app/app.js';
import { startServer } from '../helpers/server.js';

// examples/documents-app: the app guards its routes with the Node client, against a real Verdict.

t.test('the documents app lets through what its policy allows, and answers 403 otherwise', async (t) => {
  const verdict = await startServer();
  t.teardown(verdict.close);
  for (const policy of JSON.parse(readFileSync('examples/documents-app/policies.json', 'utf8')) as unknown[]) t.equal((await verdict.call('POST', '/admin/policies', policy)).status, 200);
  for (const [uri, attributes] of [['document:1', { owner: 'user:alice', status: 'draft' }], ['document:2', { owner: 'user:alice', status: 'published' }]] as const) {
    t.equal((await verdict.call('POST', '/admin/fetchers/registry/entities', { uri, type: 'resource', attributes })).status, 200);
  }
  const client = new VerdictClient({ url: verdict.url, cache: true });
  const app = documentsApp(client);
  t.teardown(async () => {
    await app.close();
    await client.close();
  });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const as = async (user: string, method: 'GET' | 'DELETE', id: number) => {
    const response = await request(`${address}/documents/${id}`, { method, headers: { 'x-user': user } });
    return { status: response.statusCode, reason: response.headers['verdict-reason'], body: await response.body.json() };
  };
  t.match(await as('bob', 'GET', 2), { status: 200, body: { id: '2' } }, 'a published document, read by anyone');
  t.match(await as('bob', 'GET', 1), { status: 403, reason: undefined, body: { detail: 'Forbidden' } }, "someone else's draft: 403, and the read route keeps the reason to itself");
  const denied = await as('bob', 'DELETE', 2);
  t.match(denied, { status: 403 });
  t.equal(decodeURIComponent(denied.reason as string), 'Action denied by default effect', 'the delete route sends the reason, as it asks');
  t.match(await as('alice', 'DELETE', 1), { status: 200, body: { deleted: '1' } }, 'the owner deletes her draft');

  // Ownership moves in the registry: the app sees it at once, through the client's own write.
  await client.updateEntity('document:1', { type: 'resource', attributes: { owner: 'user:bob', status: 'draft' } });
  t.match(await as('bob', 'DELETE', 1), { status: 200 });
  t.match(await as('alice', 'GET', 1), { status: 403 });

  await verdict.close();
  t.match(await as('alice', 'GET', 2), { status: 503, body: { detail: /Authorization could not be decided/ } }, 'Verdict gone: 503, never a pass');
});
