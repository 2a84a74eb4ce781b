import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ready, scratchDir, startServer, type TestServer } from '../helpers/server.js';
import { AUDIENCE, ISSUER, signingKey, TokenIssuer, tokenFor, unsignedToken } from '../helpers/token-issuer.js';
import type { Config } from '../../src/config/config.js';

// A credential is verified at the front, once: no worker of the pool decides an item that names one,
// however its key is spelled, and a principal's `claims` attribute is only ever a verified token's
// claims while key sets are configured. Every door is asked the same question and must answer alike.

/** Allows `read` when the principal's claims name the resource's owner: no registry, so a bulk of such checks may go to the pool. */
const OWNERS_READ = {
  name: 'owners',
  rules: [{ name: 'owner-reads', effect: 'allow', principal_conditions: [{ path: 'attributes.claims.sub', operator: '==', value_from: 'resource.attributes.owner' }], actions: ['read'] }],
};

async function tokenServer(t: Test, issuer: TokenIssuer, config: Partial<Config> = {}): Promise<TestServer> {
  const file = join(scratchDir(t), 'tokens.json');
  writeFileSync(file, JSON.stringify({ key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_url: issuer.jwksUrl }] }));
  const server = await startServer({ tokens: file, ...config });
  t.teardown(server.close);
  await ready(server);
  t.equal((await server.call('POST', '/admin/policies', OWNERS_READ)).status, 200);
  return server;
}

/** A bulk item whose token key is written with a JSON escape, so that no byte scan of the body finds it, beside claims the caller wrote. */
const escapedTokenItem = (token: string) => `{"principal":{"t\\u006fken":${JSON.stringify(token)},"attributes":{"claims":{"sub":"alice"}}},"resource":{"attributes":{"owner":"alice"}},"action":"read"}`;

t.test('a pooled bulk never decides an item that names a token, however its key is written: a forged token beside written claims is denied, as /check refuses it', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const forged = unsignedToken('alice', 'k1');
  for (const [what, config, query] of [
    ['--evaluation pool', { evaluation: 'pool', workers: 1 }, ''],
    ['--evaluation pool, explained', { evaluation: 'pool', workers: 1 }, '?explain=true'],
    ['--evaluation auto, explained', { evaluation: 'auto', workers: 1 }, '?explain=true'],
  ] as const) {
    const server = await tokenServer(t, issuer, config);
    const body = `[${escapedTokenItem(forged)},${escapedTokenItem(await tokenFor(key, 'alice'))}]`;
    const bulk = await server.send('POST', `/check/bulk${query}`, body, { 'content-type': 'application/json' });
    t.equal(bulk.status, 200, `${what}: ${JSON.stringify(bulk.body)}`);
    t.equal(bulk.body[0].allowed, false, `${what}: the forged token is not allowed`);
    t.equal(bulk.body[1].allowed, false, `${what}: written claims beside a valid token are refused too`);
    t.match(bulk.body[0].reason, /token was not accepted|'claims' is reserved/, what);
    const single = await server.send('POST', '/check', escapedTokenItem(forged), { 'content-type': 'application/json' });
    t.ok(single.status === 400 || single.status === 401, `${what}: /check refuses it (${single.status})`);
  }
});

t.test("while key sets are configured, a principal's written `claims` attribute is refused on every door: 400 on /check, a denied item in a bulk (front and pool), 400 on AuthZEN", async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const written = { principal: { attributes: { claims: { sub: 'alice' } } }, resource: { attributes: { owner: 'alice' } }, action: 'read' };
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await tokenServer(t, issuer, { evaluation, workers: 1 });
    const single = await server.call('POST', '/check', written);
    t.equal(single.status, 400, `${evaluation}: ${JSON.stringify(single.body)}`);
    t.match(single.body.detail, /'claims' is reserved for the verified claims of a token/);
    const flat = await server.call('POST', '/check', { principal_attributes: { claims: { sub: 'alice' } }, resource_attributes: { owner: 'alice' }, action: 'read' });
    t.equal(flat.status, 400, `${evaluation}: the flat form too`);
    const bulk = await server.call('POST', '/check/bulk', [written, { principal: { token: await tokenFor(key, 'alice') }, resource: { attributes: { owner: 'alice' } }, action: 'read' }]);
    t.equal(bulk.status, 200, JSON.stringify(bulk.body));
    t.same(bulk.body.map((answer: { allowed: boolean }) => answer.allowed), [false, true], `${evaluation}: only the item that wrote claims is denied`);
    t.match(bulk.body[0].reason, /'claims' is reserved/);
    const authzen = await server.call('POST', '/access/v1/evaluation', { subject: { type: 'user', id: 'alice', properties: { claims: { sub: 'alice' } } }, action: { name: 'read' }, resource: { type: 'document', id: '1', properties: { owner: 'alice' } } });
    t.equal(authzen.status, 400, `AuthZEN: ${JSON.stringify(authzen.body)}`);
  }
});

t.test('without key sets, `claims` is an attribute like any other, as Eunomia reads it', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', OWNERS_READ)).status, 200);
  const answer = await server.call('POST', '/check', { principal: { attributes: { claims: { sub: 'alice' } } }, resource: { attributes: { owner: 'alice' } }, action: 'read' });
  t.same([answer.status, answer.body.allowed], [200, true]);
});

t.test('a token over 16 KB refuses its own check (401) and denies only its own bulk item; through external authorization it is a 401 too', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const long = `${await tokenFor(key, 'alice')}.${'x'.repeat(16 * 1024)}`;
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await tokenServer(t, issuer, { evaluation, workers: 1 });
    const check = (token: string) => ({ principal: { token }, resource: { attributes: { owner: 'alice' } }, action: 'read' });
    const single = await server.call('POST', '/check', check(long));
    t.equal(single.status, 401, `${evaluation}: ${JSON.stringify(single.body).slice(0, 200)}`);
    t.match(single.body.detail, /longer than 16384 characters/);
    const bulk = await server.call('POST', '/check/bulk', [check(long), check(await tokenFor(key, 'alice'))]);
    t.equal(bulk.status, 200, `${evaluation}: the bulk is answered, ${JSON.stringify(bulk.body).slice(0, 200)}`);
    t.same(bulk.body.map((answer: { allowed: boolean }) => answer.allowed), [false, true], `${evaluation}: only the long token's item is denied`);
  }
  const dir = scratchDir(t);
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_url: issuer.jwksUrl }] }));
  writeFileSync(join(dir, 'mapping.json'), JSON.stringify({ principal: { uri: 'user:{sub}' }, routes: [{ path: '/documents/{id}', resource_type: 'document' }] }));
  const mesh = await startServer({ tokens: join(dir, 'tokens.json'), extAuthz: join(dir, 'mapping.json') });
  t.teardown(mesh.close);
  await ready(mesh);
  const through = await mesh.send('GET', '/ext-authz/documents/1', '', { authorization: `Bearer ${long}` });
  t.equal(through.status, 401, 'ext-authz: a 401 with the challenge, not a 431');
  t.equal(through.headers['www-authenticate'], 'Bearer error="invalid_token"');
});
