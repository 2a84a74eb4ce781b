import t, { type Test } from 'tap';
import type { Config } from '../../src/config/config.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { ADMIN_WRITES } from '../helpers/admin-writes.js';

/**
 * With admin authentication off, the admin routes and the earlier family's writes trust whoever
 * reaches them; these tests hold that a web page the operator visits cannot reach them through the
 * operator's browser: not by DNS rebinding (a Host naming another site), not by a cross-site form or
 * fetch (a foreign Origin, or a POST that is not JSON, which a browser sends without asking first).
 */

const EARLIER_FAMILY = ['/create-policy', '/register-entity', '/update-entity', '/delete-entity'];
const JSON_TYPE = { 'content-type': 'application/json' };

async function open(t: Test, overrides: Partial<Config> = {}): Promise<TestServer> {
  const server = await startServer(overrides);
  t.teardown(server.close);
  return server;
}

const portOf = (server: TestServer) => new URL(server.url).port;

/** Every admin and earlier-family route the server documents, with its path parameters filled in. */
async function adminRoutes(server: TestServer): Promise<{ method: string; path: string }[]> {
  const openapi = (await server.call('GET', '/docs/json')).body as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(openapi.paths)
    .filter(([path]) => path.startsWith('/admin/') || EARLIER_FAMILY.includes(path))
    .flatMap(([path, methods]) => Object.keys(methods).map((method) => ({ method: method.toUpperCase(), path: path.replace(/\{[^}]+\}/g, 'x') })));
}

/** What the server holds that any admin write would change: the policies, the entities and the audit trail. */
async function holdings(server: TestServer) {
  const [policies, entities, audit] = await Promise.all(
    ['/admin/policies', '/admin/fetchers/registry/entities', '/admin/audit'].map((path) => server.call('GET', path)),
  );
  return { policies: policies!.body, entities: entities!.body, audit: audit!.body };
}

t.test('with authentication off, a Host that does not name the server is 421 on every admin route, reads too', async (t) => {
  const server = await open(t);
  await server.call('POST', '/admin/policies', { name: 'x', rules: [] });
  const before = await holdings(server);
  const routes = await adminRoutes(server);
  t.ok(routes.length >= 20, `${routes.length} admin routes`);
  t.ok(routes.some((route) => route.method === 'GET' && route.path === '/admin/fetchers/registry/entities'), 'the registry reads among them');
  for (const rebound of ['attacker.example', `attacker.example:${portOf(server)}`, '127.0.0.1.attacker.example', 'localhost.attacker.example', '10.0.0.8']) {
    for (const { method, path } of routes) {
      const answer = method === 'GET' ? await server.call(method, path, undefined, { host: rebound }) : await server.send(method, path, '{}', { ...JSON_TYPE, host: rebound });
      if (answer.status !== 421) t.fail(`${method} ${path} with Host ${rebound}: ${answer.status}`);
    }
    const refused = await server.call('GET', '/admin/policies', undefined, { host: rebound });
    t.equal(refused.status, 421, `Host ${rebound}`);
    t.match(refused.body.detail, /Host .* does not name this server.*--admin-hosts/, 'the detail says what to fix');
  }
  for (const write of ADMIN_WRITES) {
    t.equal((await server.call(write.method, write.path, write.body, { host: 'attacker.example' })).status, 421, `${write.method} ${write.route}`);
  }
  t.same(await holdings(server), before, 'nothing changed');
});

t.test('loopback names and addresses, the listen address and --admin-hosts name the server', async (t) => {
  const server = await open(t, { adminHosts: ['verdict.internal', '10.1.2.3'] });
  const port = portOf(server);
  const named = ['localhost', `localhost:${port}`, 'LOCALHOST', 'localhost.', `127.0.0.1:${port}`, '127.8.9.10', `[::1]:${port}`, '[::1]', 'verdict.internal', `Verdict.Internal:${port}`, '10.1.2.3:80'];
  for (const host of named) {
    t.equal((await server.call('GET', '/admin/policies', undefined, { host })).status, 200, `Host ${host}`);
  }
  t.equal((await server.call('GET', '/admin/policies', undefined, { host: 'other.internal' })).status, 421, 'a name not listed');

  const wildcard = await open(t, { host: '0.0.0.0' });
  t.equal((await wildcard.call('GET', '/admin/policies', undefined, { host: `0.0.0.0:${portOf(wildcard)}` })).status, 200, 'the listen address');
});

t.test('the public interface answers whatever the Host: only admin routes are held to it', async (t) => {
  const server = await open(t);
  const host = { host: 'attacker.example' };
  const check = { principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } } };
  t.equal((await server.call('POST', '/check', check, host)).status, 200);
  t.equal((await server.call('POST', '/check-access', check, host)).status, 200);
  for (const path of ['/health', '/ready', '/metrics', '/docs/json', '/dashboard/']) t.equal((await server.call('GET', path, undefined, host)).status, 200, path);
});

t.test('with authentication off, a write that is not JSON is 400 and changes nothing', async (t) => {
  const server = await open(t);
  const before = await holdings(server);
  // What a cross-site form or a no-cors fetch can send: no content type, or a form's or text's.
  for (const contentType of [undefined, 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
    for (const write of ADMIN_WRITES.filter((candidate) => candidate.method !== 'DELETE')) {
      const headers: Record<string, string> = contentType === undefined ? {} : { 'content-type': contentType };
      const answer = await server.send(write.method, write.path, write.body === undefined ? '' : JSON.stringify(write.body), headers);
      t.equal(answer.status, 400, `${write.method} ${write.path} as ${contentType ?? 'no content type'}`);
      t.match(answer.body.detail, /application\/json/, 'the detail says what to send');
    }
  }
  t.same(await holdings(server), before, 'nothing changed');
});

t.test('with authentication off, a write from a foreign Origin is 403 and changes nothing; from the server\'s own it succeeds', async (t) => {
  const server = await open(t);
  const before = await holdings(server);
  const sendJson = (write: (typeof ADMIN_WRITES)[number], origin: string) =>
    server.send(write.method, write.path, write.body === undefined ? '' : JSON.stringify(write.body), { ...JSON_TYPE, origin });
  for (const origin of ['http://attacker.example', `http://attacker.example:${portOf(server)}`, 'null', 'http://127.0.0.1:1', 'http://localhost', 'not a url']) {
    for (const write of ADMIN_WRITES) {
      const answer = await sendJson(write, origin);
      t.equal(answer.status, 403, `${write.method} ${write.path} from ${origin}`);
      t.match(answer.body.detail, /Origin/, 'the detail names the header');
    }
  }
  t.same(await holdings(server), before, 'nothing changed');
  // The dashboard's own calls: same origin, JSON (a body-less POST such as a restore sends the type too).
  for (const write of ADMIN_WRITES) {
    const answer = await sendJson(write, server.url);
    t.equal(answer.status, 200, `${write.method} ${write.path} from ${server.url}`);
  }
  t.equal((await server.call('GET', '/admin/policies', undefined, { origin: 'http://attacker.example' })).status, 200, 'a read is not a write: the browser keeps its answer from the page');
});

t.test("a DELETE needs no content type: a browser cannot send one from another origin without asking, and Eunomia's SDKs send none", async (t) => {
  const server = await open(t);
  await server.call('POST', '/admin/policies', { name: 'p', rules: [] });
  const deleted = await server.send('DELETE', '/admin/policies/p', '');
  t.same([deleted.status, deleted.body], [200, true]);
});

t.test('with authentication on, the key decides: no Host, Origin or content-type rule', async (t) => {
  const key = { 'way-api-key': 'k3y' };
  const server = await open(t, { adminAuthRequired: true, adminApiKey: 'k3y' });
  t.equal((await server.call('GET', '/admin/policies', undefined, { ...key, host: 'verdict.example.com' })).status, 200, 'any Host');
  await server.call('POST', '/admin/policies', { name: 'p', rules: [] }, key);
  await server.call('PUT', '/admin/policies/p', { name: 'p', description: 'v2', rules: [] }, key);
  const restored = await server.send('POST', '/admin/policies/p/restore?version=1', '', { ...key, origin: 'https://tools.example.com' });
  t.equal(restored.status, 200, 'a body-less POST with no content type, from another origin, with the key');
  t.equal((await server.call('GET', '/admin/policies/p', undefined, { host: 'attacker.example' })).status, 401, 'without the key: 401, as always');
});
