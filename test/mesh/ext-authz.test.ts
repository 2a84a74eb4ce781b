import t, { type Test } from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { ready, scratchDir, startServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import { AUDIENCE, ISSUER, signingKey, TokenIssuer, tokenFor, unsignedToken } from '../helpers/token-issuer.js';
import { MESH_MAPPING as MAPPING, MESH_POLICIES as POLICIES } from '../helpers/mesh-example.js';
import { authorizationRequest, throughEnvoy, type EnvoyFilter } from '../helpers/envoy-ext-authz.js';

// Envoy's HTTP external authorization against a real server: a harness sends what Envoy's filter
// sends (its documented header handling is held below), and says what Envoy would do with the answer.

async function meshServer(t: Test, issuer: TokenIssuer, mapping: unknown = MAPPING, config: Record<string, unknown> = {}): Promise<{ server: TestServer; filter: EnvoyFilter }> {
  const dir = scratchDir(t);
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_url: issuer.jwksUrl }] }));
  writeFileSync(join(dir, 'mapping.json'), JSON.stringify(mapping));
  const server = await startServer({ tokens: join(dir, 'tokens.json'), extAuthz: join(dir, 'mapping.json'), ...config });
  t.teardown(server.close);
  await ready(server);
  for (const policy of POLICIES) t.equal((await server.call('POST', '/admin/policies', policy)).status, 200, 'policy written');
  for (const [uri, owner] of [['document:1', 'alice'], ['document:red/7', 'bob']]) {
    t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri, type: 'resource', attributes: { owner } })).status, 200);
  }
  const filter: EnvoyFilter = {
    serverUri: server.url,
    pathPrefix: '/ext-authz',
    allowedHeaders: ['x-forwarded-for'],
    allowedUpstreamHeaders: ['x-verdict-principal'],
    useRemoteAddress: true,
  };
  return { server, filter };
}

t.test("the harness sends what Envoy's filter documents: the method, the prefixed path, Host, Authorization, Content-Length 0 and the allowed headers only", async (t) => {
  const filter: EnvoyFilter = { serverUri: 'http://unused', pathPrefix: '/ext-authz', allowedHeaders: ['x-forwarded-for', 'x-b3-*'], headersToAdd: { 'x-added': 'yes' } };
  const made = authorizationRequest(filter, {
    method: 'PUT',
    host: 'docs.example.com',
    path: '/documents/1?draft=true',
    headers: { Authorization: 'Bearer t', Cookie: 'session=secret', 'X-Forwarded-For': '10.0.0.1', 'x-b3-traceid': 'abc', 'content-type': 'application/json' },
    body: '{"title": "x"}',
  });
  t.same(made, {
    method: 'PUT',
    path: '/ext-authz/documents/1?draft=true',
    headers: { host: 'docs.example.com', authorization: 'Bearer t', 'x-forwarded-for': '10.0.0.1', 'x-b3-traceid': 'abc', 'x-added': 'yes', 'content-length': '0' },
    body: '',
  });
  const withBody = authorizationRequest({ ...filter, withRequestBody: { maxRequestBytes: 4 } }, { method: 'POST', host: 'h', path: '/', headers: { 'content-type': 'text/plain' }, body: 'abcdefgh' });
  t.same([withBody.body, withBody.headers['content-length'], withBody.headers['content-type']], ['abcd', '4', 'text/plain'], 'a forwarded body is cut at max_request_bytes');
});

t.test('ext_authz: the owner passes (with the principal header upstream), another user, a path no route maps and a refused token are stopped', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const { server, filter } = await meshServer(t, issuer);
  const bearer = async (sub: string, extra = {}) => ({ authorization: `Bearer ${await tokenFor(key, sub, { extra })}` });
  const get = async (path: string, headers: Record<string, string>, method = 'GET', peerAddress = '198.51.100.7') => throughEnvoy(filter, { method, host: 'docs.example.com', path, headers, peerAddress });

  t.same(await get('/documents/1', await bearer('alice')), { passed: true, upstreamHeaders: { 'x-verdict-principal': 'user:alice' } });
  const other = await get('/documents/1', await bearer('mallory'));
  t.match(other, { passed: false, status: 403, body: 'Forbidden' }, "another user is stopped, and not told the policies' reasons");
  t.match(await get('/documents/1', await bearer('alice'), 'DELETE'), { passed: false, status: 403 }, 'DELETE maps to delete, which no rule allows');
  t.match(await get('/documents/1', await bearer('mallory', { groups: ['editors'] }), 'PUT'), { passed: true }, 'PUT maps to update');
  t.match(await get('/teams/red/documents/7?x=1', await bearer('bob')), { passed: true }, 'a resource_uri template; the query is not part of the path');
  t.match(await get('/teams/red/documents/7', await bearer('bob'), 'PUT'), { passed: false, status: 403 }, 'a route for GET only maps no PUT');
  t.match(await get('/documents/1', await bearer('alice'), 'GET', '203.0.113.9'), { passed: false, status: 403 }, 'the client address Envoy saw, read as context');

  const unmapped = await get('/admin/everything', await bearer('alice'));
  t.match(unmapped, { passed: false, status: 403, body: 'Forbidden' }, 'unmapped routes are denied by default');
  for (const path of ['/documents/../admin', '/documents/%2e%2e', '/documents/1/', '/documents']) {
    t.match(await get(path, await bearer('alice')), { passed: false, status: 403 }, `${path} maps to nothing`);
  }
  t.match(await get('/documents/%E0%A4%A', await bearer('alice')), { passed: false, status: 400 }, 'a path that does not decode is refused before it is read');

  const expired = await get('/documents/1', { authorization: `Bearer ${await tokenFor(key, 'alice', { expiresIn: -120 })}` });
  t.same([expired.passed, !expired.passed && expired.status, !expired.passed && expired.body], [false, 401, 'The bearer token was not accepted'], 'a refused token is told no more than that');
  t.match(expired, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } });
  const otherIssuer = await get('/documents/1', { authorization: `Bearer ${await tokenFor(key, 'alice', { issuer: 'https://elsewhere.test' })}` });
  t.notMatch(JSON.stringify(otherIssuer), /idp|elsewhere|key set|issuer/, 'neither key sets nor issuers are named to the client');
  t.match(await get('/documents/1', { authorization: `Bearer ${unsignedToken('alice', 'k1')}` }), { passed: false, status: 401 }, 'alg none');
  t.match(await get('/documents/1', { authorization: `Bearer ${await tokenFor(await signingKey('k1'), 'alice')}` }), { passed: false, status: 401 }, 'wrongly signed');
  t.match(await get('/documents/1', { authorization: `Bearer ${await tokenFor(await signingKey('k7'), 'alice')}` }), { passed: false, status: 401 }, 'unknown kid');
  t.match(await get('/documents/1', {}), { passed: false, status: 403 }, 'no token: decided as nobody, and denied');
  t.same(
    await get('/public/notice', { 'x-verdict-principal': 'user:alice' }),
    { passed: true, upstreamHeaders: { 'x-verdict-principal': '' } },
    'allowed with no principal: the principal header is still set, empty, so a client cannot pass one off as its own',
  );

  const posted = await throughEnvoy({ ...filter, withRequestBody: { maxRequestBytes: 1024 } }, { method: 'PUT', host: 'h', path: '/documents/1', headers: { ...(await bearer('alice')), 'content-type': 'application/octet-stream' }, body: 'raw bytes', peerAddress: '198.51.100.7' });
  t.match(posted, { passed: true }, 'a forwarded body of any type is let through unread');

  const live = (await server.call('GET', '/admin/live')).body;
  t.ok(JSON.stringify(live).length > 0, 'the decisions are counted as any check');
});

t.test('with a decision log, a request whose principal comes from its token is decided, logged with its verified claims, and the process lives on', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const log = join(scratchDir(t), 'decisions.ndjson');
  const { server } = await meshServer(t, issuer, MAPPING, { decisionLog: log });
  const token = await tokenFor(key, 'alice');
  const answer = await request(`${server.url}/ext-authz/documents/1`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': '198.51.100.7' } });
  await answer.body.dump();
  t.equal(answer.statusCode, 200);
  await until(() => existsSync(log) && /"claims":\{[^}]*"sub":"alice"/.test(readFileSync(log, 'utf8')), 'the decision logged with the claims it read');
  t.match(readFileSync(log, 'utf8'), /"allowed":true/);
  t.equal((await server.call('GET', '/health')).status, 200, 'and the server still answers');
  t.notOk(readFileSync(log, 'utf8').includes(token), 'the token is not logged');
});

t.test('the mapping file: problems stop the start, saying what to fix', async (t) => {
  const dir = scratchDir(t);
  const start = async (mapping: unknown, tokens = true) => {
    writeFileSync(join(dir, 'mapping.json'), JSON.stringify(mapping));
    writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ key_sets: [{ name: 'local', jwks_file: 'jwks.json' }] }));
    writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [] }));
    return startServer({ extAuthz: join(dir, 'mapping.json'), ...(tokens && { tokens: join(dir, 'tokens.json') }) }).then(
      async (server) => {
        await server.close();
        return 'started';
      },
      (error: Error) => error.message,
    );
  };
  t.match(await start({ routes: [] }), /routes must NOT have fewer than 1 items/);
  t.match(await start({ routes: [{ path: '/a/{id}' }] }), /must have required property 'resource_type'/);
  t.match(await start({ routes: [{ path: '/a/x{id}', resource_type: 'a' }] }), /a parameter must be a whole segment/);
  t.match(await start({ routes: [{ path: '/a/{id}/{id}', resource_type: 'a' }] }), /parameter 'id' appears twice/);
  t.match(await start({ routes: [{ path: '/a', resource_type: 'a' }] }), /resource_type needs a parameter/);
  t.match(await start({ routes: [{ path: '/a/{id}', resource_uri: 'a:{name}' }] }), /reads \{name\}, which the path does not have/);
  t.match(await start({ principal: { uri: 'user:{sub}' }, routes: [{ path: '/a/{id}', resource_type: 'a' }] }, false), /no tokens are verified \(give --tokens\)/);
  t.equal(await start({ principal: { uri: 'user:{sub}' }, routes: [{ path: '/a/{id}', resource_type: 'a' }] }), 'started');
});

t.test('without --ext-authz there is no such route', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const response = await request(`${server.url}/ext-authz/documents/1`);
  t.equal(response.statusCode, 404);
  await response.body.dump();
});

/** Starts a server on `tokens` and `mapping`; the start's error message when it refuses. */
async function startedWith(t: Test, dir: string, mapping: unknown): Promise<TestServer | string> {
  writeFileSync(join(dir, 'mapping.json'), JSON.stringify(mapping));
  return startServer({ tokens: join(dir, 'tokens.json'), extAuthz: join(dir, 'mapping.json') }).then(
    async (server) => {
      t.teardown(server.close);
      await ready(server);
      return server;
    },
    (error: Error) => error.message,
  );
}

t.test("a route names the key set its tokens are verified by, whatever their issuer; a token of one key set never becomes a principal of another's: a partner's 'alice' is not your 'alice'", async (t) => {
  const idpKey = await signingKey('k1');
  const partnerKey = await signingKey('p1');
  const issuer = await TokenIssuer.start([idpKey]);
  t.teardown(() => issuer.close());
  const dir = scratchDir(t);
  writeFileSync(join(dir, 'partners.json'), JSON.stringify({ keys: [partnerKey.publicJwk] }));
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_url: issuer.jwksUrl }, { name: 'partners', issuer: 'https://partners.test', jwks_file: 'partners.json' }] }));
  const routes = [{ path: '/partner/{id}', resource_type: 'partner-doc', key_set: 'partners' }, { path: '/documents/{id}', resource_type: 'document' }];
  const shared = await startedWith(t, dir, { principal: { uri: 'user:{sub}' }, routes });
  t.match(shared, /key sets 'idp' and 'partners' share a name space \('user:…' and 'user:…'\)/, 'one template for two key sets stops the start, saying how to part them');
  t.match(await startedWith(t, dir, { principal: { uri: '{sub}' }, routes }), /share a name space/, 'so does a template that begins with a claim');
  t.match(await startedWith(t, dir, { principal: { uri: 'user:{sub}', key_sets: { partners: 'user:p-{sub}' } }, routes }), /share a name space/, "and one set's text that begins another's");

  const server = await startedWith(t, dir, { principal: { uri: 'user:{sub}', key_sets: { partners: 'partner:{sub}' } }, routes, upstream_headers: { principal_uri: 'x-verdict-principal' } });
  if (typeof server === 'string') throw new Error(server);
  const anyone = { name: 'signed-in', rules: [{ name: 'any-subject', effect: 'allow', principal_conditions: [{ path: 'attributes.claims.sub', operator: 'exists' }], actions: ['read'] }] };
  t.equal((await server.call('POST', '/admin/policies', anyone)).status, 200);
  const filter: EnvoyFilter = { serverUri: server.url, pathPrefix: '/ext-authz', allowedUpstreamHeaders: ['x-verdict-principal'] };
  const get = async (path: string, token: string) => throughEnvoy(filter, { method: 'GET', host: 'h', path, headers: { authorization: `Bearer ${token}` } });
  const partnerAlice = await tokenFor(partnerKey, 'alice', { issuer: 'https://partners.test', audience: 'anyone' });
  t.match(await get('/partner/1', partnerAlice), { passed: true, upstreamHeaders: { 'x-verdict-principal': 'partner:alice' } }, "the partners' key set verifies the partner's token on its route");
  t.match(await get('/partner/1', await tokenFor(idpKey, 'alice')), { passed: false, status: 401 }, "the identity provider's token is not verified by the partners' set");
  t.match(await get('/documents/1', partnerAlice), { passed: true, upstreamHeaders: { 'x-verdict-principal': 'partner:alice' } }, "elsewhere the token's issuer chooses its key set, and its principal stays the partner's");
  t.match(await get('/documents/1', await tokenFor(idpKey, 'alice')), { passed: true, upstreamHeaders: { 'x-verdict-principal': 'user:alice' } });

  const byName = await startedWith(t, dir, { principal: { uri: 'user:{key_set}:{sub}' }, routes, upstream_headers: { principal_uri: 'x-verdict-principal' } });
  if (typeof byName === 'string') throw new Error(byName);
  t.equal((await byName.call('POST', '/admin/policies', anyone)).status, 200);
  const forged = await tokenFor(partnerKey, 'alice', { issuer: 'https://partners.test', audience: 'anyone', extra: { key_set: 'idp' } });
  t.match(await throughEnvoy({ ...filter, serverUri: byName.url }, { method: 'GET', host: 'h', path: '/documents/1', headers: { authorization: `Bearer ${forged}` } }), { passed: true, upstreamHeaders: { 'x-verdict-principal': 'user:partners:alice' } }, '{key_set} is the set that verified the token, never a claim of that name');

  t.match(await startedWith(t, dir, { routes: [{ path: '/x/{id}', resource_type: 'x', key_set: 'nobody' }] }), /routes name key sets that --tokens does not have: nobody/);
  t.match(await startedWith(t, dir, { principal: { key_sets: { nobody: 'x:{sub}' } }, routes }), /principal.key_sets names key sets that --tokens does not have: nobody/);
  t.match(await startedWith(t, dir, { principal: { headers: { 'x-claims': 'claims' } }, routes }), /the attribute 'claims' is reserved for a token's verified claims/, 'a header is never read as the claims');
});
