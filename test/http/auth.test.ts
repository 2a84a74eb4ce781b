import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { buildApp } from '../../src/app.js';
import { ConfigError, DEFAULT_CONFIG, loadConfig, type Config } from '../../src/config/config.js';
import { isLocalClient } from '../../src/http/admin-auth.js';
import { ask } from '../helpers/child.js';
import { startServer, temporaryDataDir, type TestServer } from '../helpers/server.js';
import { ADMIN_WRITES } from '../helpers/admin-writes.js';
import { examplePath, isAdminRoute, operationsOf } from '../helpers/openapi.js';

const KEY = 'k3y';
const INVALID = { detail: 'Invalid API key. Please provide a valid API key.' };
const GOOD = { 'WAY-API-KEY': KEY };
const ENTITIES = '/admin/fetchers/registry/entities';

/** A body that would be valid on each protected route that takes one, so that only the key decides. */
const BODIES = new Map<string, { path: string; body?: unknown }>([
  ...ADMIN_WRITES.map((write): [string, { path: string; body?: unknown }] => [`${write.method} ${write.route}`, write]),
  ['POST /admin/policies/validate', { path: '/admin/policies/validate', body: { name: 'p', rules: [] } }],
  ['POST /admin/check-at', { path: '/admin/check-at', body: { check: { principal: { uri: 'u' }, resource: { uri: 'r' }, action: 'read' }, time: '2026-11-27T08:30:00Z' } }],
  ['POST /admin/policies/impact', { path: '/admin/policies/impact', body: { delete: ['p'] } }],
]);

/** One call of every route the server's OpenAPI document says takes the key, and a few more forms of some. */
async function protectedCalls(t: Test, server: TestServer): Promise<{ method: string; path: string; body?: unknown }[]> {
  const operations = operationsOf((await server.call('GET', '/docs/json', undefined, GOOD)).body);
  t.strictSame(
    operations.filter((operation) => operation.secured !== isAdminRoute(operation.route)).map(({ method, route }) => `${method} ${route}`),
    [],
    'the document marks exactly the admin routes and the earlier family\'s writes as taking the key',
  );
  const calls = operations.filter((operation) => operation.secured).map((operation) => {
    const example = BODIES.get(`${operation.method} ${operation.route}`);
    if (operation.takesBody && example === undefined) t.fail(`${operation.method} ${operation.route}: no example body`);
    return { method: operation.method, path: example?.path ?? examplePath(operation), body: example?.body };
  });
  t.ok(calls.length > 20, `${calls.length} protected routes`);
  return [
    ...calls,
    { method: 'GET', path: `${ENTITIES}?offset=0&limit=5` },
    { method: 'POST', path: '/delete-entity', body: { uri: 'e' } },
  ];
}

const WRONG_KEYS: [string, Record<string, string>][] = [
  ['no header', {}],
  ['a wrong key of the same length', { 'WAY-API-KEY': 'k3z' }],
  ['a wrong key of another length', { 'WAY-API-KEY': 'k3y-but-longer' }],
  ['a prefix of the key', { 'WAY-API-KEY': 'k3' }],
  ['the key in another case', { 'WAY-API-KEY': 'K3Y' }],
  ['an empty key', { 'WAY-API-KEY': '' }],
  ['the key under another header', { authorization: `Bearer ${KEY}`, 'x-api-key': KEY }],
];

async function protectedServer(t: { teardown(fn: () => unknown): void }): Promise<TestServer> {
  // These tests make hundreds of refused calls from one address; the failure limit has its own tests below.
  const server = await startServer({ adminAuthRequired: true, adminApiKey: KEY, adminAuthFailuresPerMinute: 100_000 });
  t.teardown(server.close);
  return server;
}

t.test('with auth on, every admin route and earlier-family write refuses a missing or wrong key', async (t) => {
  const server = await protectedServer(t);
  for (const route of await protectedCalls(t, server)) {
    for (const [label, headers] of WRONG_KEYS) {
      const response = await server.call(route.method, route.path, route.body, headers);
      t.equal(response.status, 401, `${route.method} ${route.path} with ${label}`);
      t.strictSame(response.body, INVALID, `${route.method} ${route.path} with ${label}`);
      t.match(response.headers['content-type'], /^application\/json/);
    }
  }
  // Nothing was written by the refused calls.
  const policies = await server.call('GET', '/admin/policies', undefined, GOOD);
  t.equal(policies.status, 200);
  t.same(policies.body, []);
  const count = await server.call('GET', `${ENTITIES}/$count`, undefined, GOOD);
  t.equal(count.status, 200);
  t.equal(count.body, 0);
});

t.test('with auth on, the right key opens every protected route', async (t) => {
  const server = await protectedServer(t);
  const call = (method: string, path: string, body?: unknown) => server.call(method, path, body, GOOD);

  const validated = await call('POST', '/admin/policies/validate', { name: 'p', rules: [] });
  t.equal(validated.status, 200);
  t.same(validated.body.warnings, []);
  const created = await call('POST', '/admin/policies', { name: 'p', rules: [] });
  t.equal(created.status, 200);
  t.equal(created.body.name, 'p');
  t.equal((await call('GET', '/admin/policies')).status, 200);
  t.equal((await call('GET', '/admin/policies/p')).status, 200);
  t.equal((await call('PUT', '/admin/policies/p', { name: 'p', rules: [], description: 'd' })).body.description, 'd');
  const simple = await call('POST', '/admin/policies/simple?name=s', {
    principal: { attributes: { a: 1 } },
    resource: { attributes: { b: 2 } },
    action: 'read',
  });
  t.equal(simple.status, 200);
  t.equal(simple.body.name, 's');
  const deleted = await call('DELETE', '/admin/policies/p');
  t.equal(deleted.status, 200);
  t.equal(deleted.body, true);

  t.equal((await call('POST', ENTITIES, { uri: 'e', attributes: { a: 1 } })).status, 200);
  t.equal((await call('GET', ENTITIES)).status, 200);
  t.equal((await call('GET', `${ENTITIES}/$count`)).body, 1);
  t.equal((await call('GET', `${ENTITIES}/e`)).status, 200);
  t.equal((await call('PUT', `${ENTITIES}/e`, { uri: 'e', attributes: { a: 2 } })).status, 200);
  const deletedEntity = await call('DELETE', `${ENTITIES}/e`);
  t.equal(deletedEntity.status, 200);
  t.equal(deletedEntity.body, true);

  const registered = await call('POST', '/register-entity', { uri: 'e2', attributes: { a: 1 } });
  t.equal(registered.status, 200);
  t.equal(registered.body.uri, 'e2');
  const updated = await call('POST', '/update-entity', { uri: 'e2', attributes: { a: 2 } });
  t.equal(updated.status, 200);
  t.same(updated.body.attributes.map((attribute: { key: string; value: unknown }) => [attribute.key, attribute.value]), [['a', 2]]);
  const legacyDelete = await call('POST', '/delete-entity?uri=e2');
  t.equal(legacyDelete.status, 200);
  t.same(legacyDelete.body, { uri: 'e2', message: 'Entity deleted successfully' });
  const legacyPolicy = await call('POST', '/create-policy', { name: 'legacy', rules: [] });
  t.equal(legacyPolicy.status, 200);
  t.equal(legacyPolicy.body.name, 'legacy');

  // The header name is case-insensitive, as HTTP header names are.
  const lower = await server.call('GET', '/admin/policies', undefined, { 'way-api-key': KEY });
  t.equal(lower.status, 200);
  t.same(lower.body.map((policy: { name: string }) => policy.name), ['s', 'legacy']);
});

t.test('with auth on, the check interface and /health stay public', async (t) => {
  const server = await protectedServer(t);
  await server.call('POST', '/admin/policies/simple?name=pub', {
    principal: { attributes: { a: 1 } },
    resource: { attributes: { b: 2 } },
    action: 'read',
  }, GOOD);
  const request = { principal: { attributes: { a: 1 } }, resource: { attributes: { b: 2 } }, action: 'read' };
  for (const headers of [{}, { 'WAY-API-KEY': 'wrong' }, GOOD]) {
    const check = await server.call('POST', '/check', request, headers);
    t.equal(check.status, 200);
    t.same(check.body, { allowed: true, reason: 'Rule pub allowed the action in policy pub' });
    const bulk = await server.call('POST', '/check/bulk', [request, { ...request, action: 'write' }], headers);
    t.equal(bulk.status, 200);
    t.same(bulk.body, [
      { allowed: true, reason: 'Rule pub allowed the action in policy pub' },
      { allowed: false, reason: 'Action denied by default effect' },
    ]);
    const access = await server.call('POST', '/check-access', request, headers);
    t.equal(access.status, 200);
    t.equal(access.body, true);
    const health = await server.call('GET', '/health', undefined, headers);
    t.equal(health.status, 200);
    t.match(health.body, { status: 'ok', revision: Number });
  }
  // Every route the OpenAPI document leaves without the key answers without one.
  const plan = { principal: { attributes: { a: 1 } }, action: 'read' };
  const authzen = { subject: { type: 'user', id: 'a', properties: { a: 1 } }, action: { name: 'read' }, resource: { type: 'doc', id: '1', properties: { b: 2 } } };
  const publicBodies = new Map<string, unknown>([
    ['POST /check', request],
    ['POST /check/bulk', [request]],
    ['POST /check-access', request],
    ['POST /plan', plan],
    ['POST /plan/bulk', [plan]],
    ['POST /access/v1/evaluation', authzen],
    ['POST /access/v1/evaluations', { ...authzen, evaluations: [{}] }],
    ['POST /access/v1/search/subject', authzen],
    ['POST /access/v1/search/resource', authzen],
    ['POST /access/v1/search/action', authzen],
  ]);
  const publicOperations = operationsOf((await server.call('GET', '/docs/json')).body).filter((operation) => !operation.secured);
  t.ok(publicOperations.length >= 8, `${publicOperations.length} public routes`);
  for (const operation of publicOperations) {
    const name = `${operation.method} ${operation.route}`;
    if (operation.takesBody && !publicBodies.has(name)) t.fail(`${name}: no example body`);
    t.equal((await server.call(operation.method, examplePath(operation), publicBodies.get(name))).status, 200, `${name} without a key`);
  }
  // Public routes keep their own errors: a bad check is 422, not 401.
  const invalid = await server.call('POST', '/check', { principal: {} });
  t.equal(invalid.status, 422);
  const docs = await server.call('GET', '/docs/json');
  t.equal(docs.status, 200);
});

t.test('with auth on, the key is checked before the body is read or validated', async (t) => {
  const server = await protectedServer(t);
  const json = { 'content-type': 'application/json' };
  const bodies: [string, string, Record<string, string>][] = [
    ['malformed JSON', '{"name": ', json],
    ['a schema violation', '{"colour": "red"}', json],
    ['a JSON array', '[1, 2, 3]', json],
    ['text/plain', 'hello', { 'content-type': 'text/plain' }],
    ['no content type', 'hello', {}],
  ];
  // Every protected route that takes a body.
  const writes = (await protectedCalls(t, server)).filter((call) => call.body !== undefined).map(({ method, path }) => [method, path] as const);
  for (const [method, path] of writes) {
    for (const [label, text, headers] of bodies) {
      const response = await server.send(method, path, text, headers);
      t.equal(response.status, 401, `${method} ${path} with ${label}`);
      t.strictSame(response.body, INVALID, `${method} ${path} with ${label}`);
      const wrongKey = await server.send(method, path, text, { ...headers, 'WAY-API-KEY': 'nope' });
      t.equal(wrongKey.status, 401, `${method} ${path} with ${label} and a wrong key`);
    }
  }
  // Invalid query parameters are not looked at either.
  const badQuery = await server.call('GET', `${ENTITIES}?limit=-1`);
  t.equal(badQuery.status, 401);
  t.strictSame(badQuery.body, INVALID);

  // With the key, the same bodies get their ordinary errors.
  const malformed = await server.send('POST', '/admin/policies', '{"name": ', { ...json, ...GOOD });
  t.equal(malformed.status, 400);
  const violation = await server.send('POST', '/admin/policies', '{"colour": "red"}', { ...json, ...GOOD });
  t.equal(violation.status, 422);
});

t.test('with auth off, admin routes work without the header', async (t) => {
  const server = await startServer({ adminAuthRequired: false, adminApiKey: KEY });
  t.teardown(server.close);
  for (const headers of [{}, { 'WAY-API-KEY': 'whatever' }] as Record<string, string>[]) {
    const created = await server.call('POST', '/admin/policies', { name: 'open', rules: [] }, headers);
    t.equal(created.status, 200);
    t.equal((await server.call('GET', '/admin/policies', undefined, headers)).status, 200);
    t.equal((await server.call('DELETE', '/admin/policies/open', undefined, headers)).body, true);
    t.equal((await server.call('POST', '/register-entity', { uri: 'e', attributes: { a: 1 } }, headers)).status, 200);
    t.equal((await server.call('POST', '/update-entity', { uri: 'e', attributes: { a: 2 } }, headers)).status, 200);
    t.equal((await server.call('GET', `${ENTITIES}/e`, undefined, headers)).status, 200);
    t.equal((await server.call('POST', '/delete-entity', { uri: 'e' }, headers)).status, 200);
    t.equal((await server.call('POST', '/create-policy', { name: 'legacy', rules: [] }, headers)).status, 200);
    t.equal((await server.call('DELETE', '/admin/policies/legacy', undefined, headers)).status, 200);
  }

  const defaults = await startServer();
  t.teardown(defaults.close);
  const open = await defaults.call('GET', '/admin/policies');
  t.equal(open.status, 200);
  t.same(open.body, []);
});

/** The address a proxy on loopback reports for a client elsewhere (a documentation range). */
const REMOTE = { 'x-forwarded-for': '203.0.113.7' };

async function limitedServer(t: Test, overrides: Partial<Config> = {}): Promise<TestServer> {
  const server = await startServer({ adminAuthRequired: true, adminApiKey: KEY, adminAuthFailuresPerMinute: 3, ...overrides });
  t.teardown(server.close);
  return server;
}

t.test('from another address, repeated failures are answered 429 with a detail, whatever key follows', async (t) => {
  const server = await limitedServer(t, { trustProxy: ['loopback'] });
  // Successes do not count: far more than three of them in a row.
  for (let index = 0; index < 20; index++) {
    t.equal((await server.call('GET', '/admin/policies', undefined, { ...GOOD, ...REMOTE })).status, 200);
  }
  const protectedPaths: [string, string][] = [['GET', '/admin/policies'], ['POST', '/create-policy'], ['GET', ENTITIES]];
  for (const [method, path] of protectedPaths) {
    const refused = await server.call(method, path, undefined, { 'WAY-API-KEY': 'guess', ...REMOTE });
    t.equal(refused.status, 401, `failure on ${path}: still 401 below the limit`);
    t.strictSame(refused.body, INVALID);
  }
  // The limit covers every protected route and, once reached, every key, so guessing gains nothing.
  for (const [method, path, headers] of [
    ['GET', '/admin/policies', { 'WAY-API-KEY': 'guess' }],
    ['POST', '/register-entity', {}],
    ['GET', '/admin/policies', GOOD],
  ] as const) {
    const limited = await server.call(method, path, undefined, { ...headers, ...REMOTE });
    t.equal(limited.status, 429, `${method} ${path} after three failures`);
    t.match(limited.body, { detail: /^Too many failed authentication attempts; retry in \d+ seconds$/ });
    t.ok(Number(limited.headers['retry-after']) > 0, 'a Retry-After header');
  }
  // The count is per address: another forwarded address, and the proxy's own loopback clients, are untouched.
  t.equal((await server.call('GET', '/admin/policies', undefined, { ...GOOD, 'x-forwarded-for': '203.0.113.8' })).status, 200);
  t.equal((await server.call('GET', '/admin/policies', undefined, GOOD)).status, 200, 'no forwarded header: loopback');
  t.equal((await server.call('GET', '/admin/policies', undefined, { ...GOOD, 'x-forwarded-for': '127.0.0.1' })).status, 200);
  // The public interface is not behind the admin key, so not behind its limit either.
  const check = await server.call('POST', '/check', { principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } } }, REMOTE);
  t.equal(check.status, 200);
});

t.test('--trust-proxy true: the address the connecting proxy reports is the one limited', async (t) => {
  const server = await limitedServer(t, { trustProxy: true });
  // A client behind the proxy cannot escape by naming loopback itself: only the entry the proxy added counts.
  const spoofed = { 'x-forwarded-for': '127.0.0.1, 203.0.113.9' };
  for (let index = 0; index < 3; index++) {
    t.equal((await server.call('GET', '/admin/policies', undefined, { 'WAY-API-KEY': 'guess', ...spoofed })).status, 401);
  }
  t.equal((await server.call('GET', '/admin/policies', undefined, { ...GOOD, ...spoofed })).status, 429);
  t.equal((await server.call('GET', '/admin/policies', undefined, { ...GOOD, 'x-forwarded-for': '203.0.113.9' })).status, 429);
});

t.test('from loopback, 50 wrong keys then the right key: the right key works', async (t) => {
  for (const [label, trustProxy, headers] of [
    ['no proxy trusted', false, {}],
    ['no proxy trusted: a forwarded header is ignored', false, REMOTE],
    ['the peer is not a trusted proxy: its forwarded header is ignored', ['10.0.0.0/8'], REMOTE],
  ] as const) {
    const server = await limitedServer(t, { trustProxy: trustProxy as Config['trustProxy'] });
    for (let index = 0; index < 50; index++) {
      const wrong = await server.call('GET', '/admin/policies', undefined, { 'WAY-API-KEY': `guess-${index}`, ...headers });
      if (wrong.status !== 401) t.fail(`${label}: wrong key ${index} answered ${wrong.status}`);
    }
    const right = await server.call('GET', '/admin/policies', undefined, { ...GOOD, ...headers });
    t.equal(right.status, 200, label);
    t.strictSame(right.body, [], label);
    const stillWrong = await server.call('GET', '/admin/policies', undefined, { 'WAY-API-KEY': 'guess', ...headers });
    t.equal(stillWrong.status, 401, `${label}: a wrong key is still 401, not 429`);
  }
});

t.test('over the Unix socket, 50 wrong keys then the right key: the right key works', async (t) => {
  const directory = temporaryDataDir();
  const socket = join(directory, 'verdict.sock');
  const app = await buildApp({
    ...DEFAULT_CONFIG,
    logLevel: 'silent',
    workers: 1,
    dataDir: directory,
    adminAuthRequired: true,
    adminApiKey: KEY,
    adminAuthFailuresPerMinute: 3,
  });
  await app.listen({ path: socket });
  t.teardown(async () => {
    await app.close();
    rmSync(directory, { recursive: true, force: true });
  });
  for (let index = 0; index < 50; index++) {
    const wrong = await ask(`unix:${socket}`, 'GET', '/admin/policies', undefined, { 'WAY-API-KEY': `guess-${index}` });
    if (wrong.status !== 401) t.fail(`wrong key ${index} answered ${wrong.status}`);
  }
  const right = await ask(`unix:${socket}`, 'GET', '/admin/policies', undefined, GOOD);
  t.equal(right.status, 200);
  t.strictSame(right.body, []);
});

t.test('loopback and socket clients are local; every other address is not', async (t) => {
  for (const address of [undefined, '127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) t.ok(isLocalClient(address), String(address));
  for (const address of ['10.0.0.1', '192.168.1.2', '203.0.113.7', '::ffff:10.0.0.1', 'fe80::1', '2001:db8::1', '', 'unknown']) {
    t.notOk(isLocalClient(address), address);
  }
});

t.test('--trust-proxy (TRUST_PROXY): off by default; true, addresses and ranges; anything else refused', async (t) => {
  t.equal(DEFAULT_CONFIG.trustProxy, false);
  t.equal(loadConfig([], {}).trustProxy, false);
  t.equal(loadConfig(['--trust-proxy', 'false'], { TRUST_PROXY: 'true' }).trustProxy, false, 'the flag wins');
  t.equal(loadConfig([], { TRUST_PROXY: 'true' }).trustProxy, true);
  t.strictSame(loadConfig(['--trust-proxy', '10.0.0.0/8, loopback,fd00::1'], {}).trustProxy, ['10.0.0.0/8', 'loopback', 'fd00::1']);
  for (const bad of ['yes-please', '2', '10.0.0.0/33', '300.1.1.1', '::1/129', '10.0.0.1/8/8', 'loopback,']) {
    const refusal = (() => {
      try {
        loadConfig(['--trust-proxy', bad], {});
      } catch (error) {
        return error;
      }
    })();
    t.ok(refusal instanceof ConfigError && refusal.message.startsWith('--trust-proxy takes'), `'${bad}' is refused, naming the flag`);
  }
});

t.test('with auth off there is no failure limit', async (t) => {
  const server = await startServer({ adminAuthFailuresPerMinute: 1 });
  t.teardown(server.close);
  for (let index = 0; index < 5; index++) {
    t.equal((await server.call('GET', '/admin/policies', undefined, { 'WAY-API-KEY': 'anything' })).status, 200);
  }
});
