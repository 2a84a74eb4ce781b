import t, { type Test } from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportSPKI, importJWK, SignJWT } from 'jose';
import { ready, scratchDir, startServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { AUDIENCE, ISSUER, signingKey, TokenIssuer, tokenFor, unsignedToken } from '../helpers/token-issuer.js';
import type { Config } from '../../src/config/config.js';

// Principals from verified bearer tokens, over real HTTP, with the key set served by a test
// identity provider: owners allowed, others denied, and no token that fails verification ever
// allowed or answered with a 5xx.

const OWNERS_READ = {
  name: 'owners',
  rules: [{ name: 'owner-reads', effect: 'allow', principal_conditions: [{ path: 'attributes.claims.sub', operator: '==', value_from: 'resource.attributes.owner' }], actions: ['read'] }],
};

/**
 * A server verifying tokens by `issuer`'s key set, with the owners policy and document:1; once its keys are fetched, unless `keysFetched` is false.
 * Its clock moves only when the test moves it (`clock.advance`): refetch intervals pass without sleeping.
 */
async function tokenServer(t: Test, issuer: TokenIssuer, tokens: Record<string, unknown> = {}, config: Partial<Config> = {}, keysFetched = true): Promise<TestServer & { clock: ManualClock }> {
  const dir = scratchDir(t);
  const file = join(dir, 'tokens.yaml');
  writeFileSync(file, JSON.stringify({ key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_url: issuer.jwksUrl, min_refetch_seconds: 1 }], ...tokens }));
  const clock = new ManualClock();
  const server = await startServer({ tokens: file, ...config }, { clock });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', OWNERS_READ)).status, 200);
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'document:1', type: 'resource', attributes: { owner: 'alice' } })).status, 200);
  if (keysFetched) await ready(server);
  return { ...server, clock };
}

/** Resolves once `/ready` says what `pattern` matches (a fetch under way has ended, say); its body. */
async function readinessSays(server: TestServer, pattern: RegExp): Promise<{ status: number; body: string }> {
  for (let attempt = 0; ; attempt++) {
    const readiness = await server.call('GET', '/ready');
    const body = JSON.stringify(readiness.body);
    if (pattern.test(body)) return { status: readiness.status, body };
    if (attempt === 500) throw new Error(`/ready never said ${pattern}: ${body}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const checkWith = (token: string) => ({ principal: { token }, resource: { uri: 'document:1' }, action: 'read' });

t.test('a valid token for the owner is allowed, one for another user denied; the claims are read as principal attributes, explained, and the token never logged', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const log = join(scratchDir(t), 'decisions.ndjson');
  const server = await tokenServer(t, issuer, {}, { decisionLog: log });
  const alice = await tokenFor(key, 'alice', { extra: { groups: ['staff'] } });
  const allowed = await server.call('POST', '/check?explain=true', checkWith(alice));
  t.equal(allowed.status, 200, JSON.stringify(allowed.body));
  t.equal(allowed.body.allowed, true);
  t.match(allowed.body.explain.principal.attributes, { claims: { sub: 'alice', groups: ['staff'], iss: ISSUER } }, 'the explanation shows the claims decided on');
  const bob = await server.call('POST', '/check', checkWith(await tokenFor(key, 'bob')));
  t.same([bob.status, bob.body.allowed], [200, false]);
  t.equal((await server.call('POST', '/check', checkWith(alice))).body.allowed, true, 'again, from the cache');
  t.equal((await server.call('POST', '/check', checkWith(await tokenFor(key, 'alice', { expiresIn: -10 })))).body.allowed, true, 'expired 10 s ago: within the 30 s leeway');
  const plan = await server.call('POST', '/plan', { principal: { token: alice }, action: 'read' });
  t.equal(plan.status, 200, JSON.stringify(plan.body));
  t.match(plan.body.condition, { path: 'attributes.owner', value: 'alice' }, "a plan reads the token's claims as a check does");
  t.equal((await server.call('POST', '/plan', { principal: { token: await tokenFor(key, 'alice', { expiresIn: -120 }) }, action: 'read' })).status, 401);
  const atTime = await server.call('POST', '/admin/check-at', { check: checkWith(alice), time: new Date().toISOString() });
  t.same([atTime.status, atTime.body.allowed], [200, true], 'the playground tries checks with tokens as well');

  const sentClaims = await server.call('POST', '/check', { principal: { token: await tokenFor(key, 'bob'), attributes: { claims: { sub: 'alice' } } }, resource: { uri: 'document:1' }, action: 'read' });
  t.same([sentClaims.status, sentClaims.body.allowed], [400, undefined], 'claims written beside a token are refused: only a verified token gives them');

  const bulk = await server.call('POST', '/check/bulk', [checkWith(alice), checkWith(await tokenFor(key, 'bob')), checkWith(await tokenFor(key, 'alice', { expiresIn: -120 }))]);
  t.equal(bulk.status, 200, JSON.stringify(bulk.body));
  t.same(bulk.body.map((answer: { allowed: boolean }) => answer.allowed), [true, false, false]);
  t.match(bulk.body[2].reason, /token was not accepted: the token has expired/, 'a refused token denies its own bulk item, saying why');

  const metrics = (await server.call('GET', '/metrics')).body as string;
  t.match(metrics, /verdict_token_verifications_total\{outcome="cached"\} [1-9]/);
  t.match(metrics, /verdict_token_key_set_keys\{key_set="idp"\} 1/);
  await until(() => readFileSync(log, 'utf8').split('\n').length > 6, 'the decisions logged');
  const logged = readFileSync(log, 'utf8');
  t.notOk(logged.includes(alice), 'the decision log never records the token');
  t.match(logged, /"claims":\{[^}]*"sub":"alice"/, 'it records the claims decided on');
});

t.test('an expired, not-yet-valid, wrongly signed, alg none, HMAC-with-the-public-key, wrong audience or unknown-kid token is never allowed: 401 saying why, never a 5xx', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const server = await tokenServer(t, issuer);
  const impostor = await signingKey('k1');
  const publicPem = await exportSPKI((await importJWK(key.publicJwk, 'ES256', { extractable: true })) as CryptoKey);
  const now = Math.floor(Date.now() / 1000);
  const hmacWithPublicKey = await new SignJWT({ sub: 'alice' }).setProtectedHeader({ alg: 'HS256', kid: 'k1' }).setIssuer(ISSUER).setAudience(AUDIENCE).setExpirationTime(now + 600).sign(new TextEncoder().encode(publicPem));
  const cases: [string, string, RegExp][] = [
    ['expired', await tokenFor(key, 'alice', { expiresIn: -120 }), /has expired/],
    ['signed by another key under the same kid', await tokenFor(impostor, 'alice'), /signature does not verify/],
    ['alg none', unsignedToken('alice', 'k1'), /not allowed|not a signed JWT/],
    ['HS256 keyed with the public key', hmacWithPublicKey, /algorithm is not allowed/],
    ['for another audience', await tokenFor(key, 'alice', { audience: 'other-app' }), /the token's 'aud' claim names no audience key set 'idp' accepts/],
    ['not valid before an hour from now', await tokenFor(key, 'alice', { extra: { nbf: Math.floor(Date.now() / 1000) + 3600 } }), /the token is not valid yet \('nbf'\)/],
    ['of an unknown issuer', await tokenFor(key, 'alice', { issuer: 'https://elsewhere.test' }), /no key set verifies tokens of issuer/],
    ['of an unknown kid', await tokenFor(await signingKey('k9'), 'alice'), /no key of key set 'idp' matches/],
    ['not a JWT', 'not.a-jwt', /not a JWT/],
  ];
  for (const [what, token, why] of cases) {
    const answer = await server.call('POST', '/check', checkWith(token));
    t.equal(answer.status, 401, `${what}: ${JSON.stringify(answer.body)}`);
    t.equal(answer.headers['www-authenticate'], 'Bearer error="invalid_token"', `${what}: the challenge of RFC 6750`);
    t.match(answer.body.detail, why, what);
    t.notMatch(answer.body.detail, /check_failed|: (missing|invalid|unspecified)\b/, `${what}: in words, not the verifier's codes`);
  }
  server.clock.advance(1000);
  const fetchesBefore = issuer.fetches;
  for (let index = 0; index < 5; index++) await server.call('POST', '/check', checkWith(await tokenFor(await signingKey(`unknown-${index}`), 'alice')));
  t.equal(issuer.fetches - fetchesBefore, 1, 'five unknown kids within a second refetch the key set once');
  server.clock.advance(999);
  await server.call('POST', '/check', checkWith(await tokenFor(await signingKey('unknown-5'), 'alice')));
  t.equal(issuer.fetches - fetchesBefore, 1, 'nor again before the second is up');
  server.clock.advance(1);
  await server.call('POST', '/check', checkWith(await tokenFor(await signingKey('unknown-6'), 'alice')));
  t.equal(issuer.fetches - fetchesBefore, 2, 'once it is, an unknown kid refetches it');
});

t.test('a key rotation is followed: a token signed by a new key refetches the set once; a failing refresh keeps the keys it had, and /ready says so', async (t) => {
  const first = await signingKey('k1');
  const issuer = await TokenIssuer.start([first]);
  t.teardown(() => issuer.close());
  const server = await tokenServer(t, issuer);
  t.equal((await server.call('POST', '/check', checkWith(await tokenFor(first, 'alice')))).body.allowed, true);
  const second = await signingKey('k2', 'RS256');
  issuer.served = [second];
  server.clock.advance(1000);
  const rotated = await server.call('POST', '/check', checkWith(await tokenFor(second, 'alice')));
  t.same([rotated.status, rotated.body.allowed], [200, true], JSON.stringify(rotated.body));
  t.equal((await server.call('POST', '/check', checkWith(await tokenFor(first, 'alice', { extra: { fresh: 1 } })))).status, 401, 'the retired key no longer verifies');

  issuer.failWith = 500;
  server.clock.advance(1000);
  t.equal((await server.call('POST', '/check', checkWith(await tokenFor(await signingKey('k3'), 'alice')))).status, 401);
  const readiness = await server.call('GET', '/ready');
  t.equal(readiness.status, 200, 'a failing refresh degrades, it does not take the process out of service');
  t.match(JSON.stringify(readiness.body), /key set 'idp' refresh failing .*answered 500/);
  t.equal((await server.call('POST', '/check', checkWith(await tokenFor(second, 'alice', { extra: { again: 1 } })))).body.allowed, true, 'the last good keys still verify');
});

t.test('a key set that cannot be fetched at start: not ready, and fetched when it comes back', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  issuer.failWith = 503;
  const server = await tokenServer(t, issuer, {}, {}, false);
  const notReady = await server.call('GET', '/ready');
  t.equal(notReady.status, 503);
  t.match(JSON.stringify(notReady.body), /key set 'idp' not fetched yet: .*answered 503/);
  issuer.failWith = undefined;
  server.clock.advance(1000);
  await until(() => issuer.fetches >= 2, 'the key set fetched again a second later', 5000);
  await until(() => true, 'settled');
  t.equal((await server.call('POST', '/check', checkWith(await tokenFor(key, 'alice')))).body.allowed, true);
  t.equal((await server.call('GET', '/ready')).status, 200);
});

t.test('on_invalid: unauthenticated decides a refused token without claims (never an allow it did not earn)', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const server = await tokenServer(t, issuer, { on_invalid: 'unauthenticated' });
  const expired = await server.call('POST', '/check?explain=true', checkWith(await tokenFor(key, 'alice', { expiresIn: -120 })));
  t.same([expired.status, expired.body.allowed], [200, false]);
  t.notOk('claims' in expired.body.explain.principal.attributes, 'decided without claims');
  const forged = await server.call('POST', '/check', { principal: { token: unsignedToken('alice', 'k1'), attributes: { claims: { sub: 'alice' } } }, resource: { uri: 'document:1' }, action: 'read' });
  t.same([forged.status, forged.body.allowed], [400, undefined], 'claims written beside a refused token are refused, never used');
});

t.test('a token on a server that verifies none is refused, saying what to do; the token field is for principals only', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const refused = await server.call('POST', '/check', { principal: { token: 'a.b.c' }, resource: { uri: 'document:1' }, action: 'read' });
  t.equal(refused.status, 401);
  t.match(refused.body.detail, /verifies no tokens \(it runs without --tokens\)/);
  t.equal((await server.call('POST', '/check', { principal: { uri: 'user:a' }, resource: { token: 'a.b.c' }, action: 'read' })).status, 422);
  t.equal((await server.call('POST', '/check', { principal: { token: 'x'.repeat(16 * 1024 + 1) }, resource: { uri: 'document:1' } })).status, 401, 'a long token is refused as a token, not as a body');
});

t.test('hostile key sets: an oversized JWKS, one of too many keys, and one that never answers are not used, and /ready says why', async (t) => {
  const key = await signingKey('k1');
  const cases: [string, (issuer: TokenIssuer) => void, RegExp][] = [
    ['oversized', (issuer) => (issuer.body = JSON.stringify({ keys: [key.publicJwk], padding: 'x'.repeat(2 * 1024 * 1024) })), /sent more than 1048576 bytes/],
    ['too many keys', (issuer) => (issuer.body = JSON.stringify({ keys: Array.from({ length: 101 }, () => key.publicJwk) })), /holds 101 keys; at most 100/],
    ['not JSON', (issuer) => (issuer.body = '<html>'), /not JSON/],
    ['never answering', (issuer) => (issuer.hang = true), /did not answer within 1000 ms/],
  ];
  for (const [what, spoil, why] of cases) {
    const issuer = await TokenIssuer.start([key]);
    t.teardown(() => issuer.close());
    spoil(issuer);
    const server = await tokenServer(t, issuer, { key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_url: issuer.jwksUrl, min_refetch_seconds: 60, timeout_ms: 1000 }] }, {}, false);
    // The start does not wait for the fetch: /ready says why once it has failed.
    const readiness = await readinessSays(server, why);
    t.equal(readiness.status, 503, what);
    const refused = await server.call('POST', '/check', checkWith(await tokenFor(key, 'alice')));
    t.equal(refused.status, 401, `${what}: no key, no allow`);
  }
});

t.test('the verified tokens remembered are bounded: past cache_size the oldest is verified again', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const server = await tokenServer(t, issuer, { cache_size: 1 });
  const [alice, bob] = [await tokenFor(key, 'alice'), await tokenFor(key, 'bob')];
  for (const token of [alice, alice, bob, alice]) await server.call('POST', '/check', checkWith(token));
  const metrics = (await server.call('GET', '/metrics')).body as string;
  t.match(metrics, /verdict_token_verifications_total\{outcome="verified"\} 3/, 'alice, bob, alice again once bob took her place');
  t.match(metrics, /verdict_token_verifications_total\{outcome="cached"\} 1/);
});

t.test('AuthZEN: a subject of type jwt is its token; evaluations and searches read its verified claims, and a refused token is never allowed', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const server = await tokenServer(t, issuer);
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'document:2', type: 'resource', attributes: { owner: 'bob' } })).status, 200);
  const alice = await tokenFor(key, 'alice');
  const evaluation = (token: string, id = '1') => ({ subject: { type: 'jwt', id: token }, action: { name: 'read' }, resource: { type: 'document', id } });
  t.same((await server.call('POST', '/access/v1/evaluation', evaluation(alice))).body, { decision: true });
  t.same((await server.call('POST', '/access/v1/evaluation', evaluation(alice, '2'))).body, { decision: false });
  const expired = await server.call('POST', '/access/v1/evaluation', evaluation(await tokenFor(key, 'alice', { expiresIn: -120 })));
  t.same([expired.status, expired.headers['www-authenticate']], [401, 'Bearer error="invalid_token"']);
  const many = await server.call('POST', '/access/v1/evaluations', { subject: { type: 'jwt', id: alice }, action: { name: 'read' }, evaluations: [{ resource: { type: 'document', id: '1' } }, { resource: { type: 'document', id: '2' } }] });
  t.same(many.body, { evaluations: [{ decision: true }, { decision: false }] });
  const found = await server.call('POST', '/access/v1/search/resource', { subject: { type: 'jwt', id: alice }, action: { name: 'read' }, resource: { type: 'document' } });
  t.equal(found.status, 200, JSON.stringify(found.body));
  t.same(found.body.results, [{ type: 'document', id: '1' }], "the documents alice's token may read");
  const refused = await server.call('POST', '/access/v1/search/resource', { subject: { type: 'jwt', id: unsignedToken('alice', 'k1') }, action: { name: 'read' }, resource: { type: 'document' } });
  t.same(refused.body.results ?? [], [], 'an unsigned token finds nothing');
});

t.test('a JWKS that trickles its body a byte at a time: the start does not wait for it, checks without tokens are answered, /ready says what is slow, and it is fetched when it answers', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  issuer.trickleEveryMs = 50;
  const server = await tokenServer(t, issuer, { key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_url: issuer.jwksUrl, min_refetch_seconds: 1, timeout_ms: 300 }] }, {}, false);
  t.equal((await server.call('POST', '/check', { principal: { attributes: { role: 'x' } }, resource: { uri: 'document:1' }, action: 'read' })).status, 200, 'a check without a token is answered while the keys are fetched');
  const refused = await server.call('POST', '/check', checkWith(await tokenFor(key, 'alice')));
  t.equal(refused.status, 401, 'a token is refused while no key is held');
  const readiness = await server.call('GET', '/ready');
  t.equal(readiness.status, 503);
  t.match(JSON.stringify(readiness.body), /key set 'idp' not fetched yet/);
  t.match((await readinessSays(server, /did not answer within/)).body, /did not answer within 300 ms/, '/ready says the fetch was too slow');
  issuer.trickleEveryMs = undefined;
  server.clock.advance(1000);
  await ready(server);
  t.equal((await server.call('POST', '/check', checkWith(await tokenFor(key, 'alice')))).body.allowed, true, 'fetched once it answers');
});

t.test('after the start, a refetch for an unknown key that trickles is cut at its timeout: the check is answered, and later refreshes run', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const server = await tokenServer(t, issuer, { key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_url: issuer.jwksUrl, min_refetch_seconds: 1, timeout_ms: 300 }] });
  issuer.trickleEveryMs = 50;
  const unknown = await server.call('POST', '/check', checkWith(await tokenFor(await signingKey('k9'), 'alice')));
  t.equal(unknown.status, 401, 'a token naming a key not held is answered, refused, once the refetch is cut');
  issuer.trickleEveryMs = undefined;
  const fetched = issuer.fetches;
  server.clock.advance(1000);
  await server.call('POST', '/check', checkWith(await tokenFor(await signingKey('k8'), 'alice')));
  t.ok(issuer.fetches > fetched, 'a later refetch runs');
  t.equal((await server.call('POST', '/check', checkWith(await tokenFor(key, 'alice')))).body.allowed, true);
});

t.test('a jwks_url over plain http:// beyond loopback stops the start, unless insecure_http says the network is trusted', async (t) => {
  const dir = scratchDir(t);
  const start = async (keySet: Record<string, unknown>) => {
    writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ key_sets: [{ name: 'idp', issuer: ISSUER, ...keySet }] }));
    return startServer({ tokens: join(dir, 'tokens.json') }).then(
      async (server) => {
        await server.close();
        return 'started';
      },
      (error: Error) => error.message,
    );
  };
  t.match(await start({ jwks_url: 'http://idp.example.com/jwks.json' }), /key set 'idp' fetches its keys over plain http:\/\/ from beyond this machine .*Use https:\/\/, or set insecure_http: true/);
  t.match(await start({ jwks_url: 'http://10.1.2.3/jwks.json' }), /over plain http:\/\//);
  t.equal(await start({ jwks_url: 'http://idp.example.com/jwks.json', insecure_http: true }), 'started');
  for (const url of ['https://idp.example.com/jwks.json', 'http://127.0.0.1:9/jwks.json', 'http://localhost:9/jwks.json', 'http://[::1]:9/jwks.json']) t.equal(await start({ jwks_url: url }), 'started', url);
});

t.test('a key set closed while its first fetch is to be tried again fetches nothing more', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  issuer.failWith = 503;
  const server = await tokenServer(t, issuer, { key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_url: issuer.jwksUrl, min_refetch_seconds: 1 }] }, {}, false);
  // Once the first fetch has failed, its retry is due in a second.
  await readinessSays(server, /answered 503/);
  const failedOnce = issuer.fetches;
  server.clock.advance(1000);
  await until(() => issuer.fetches > failedOnce, 'the failed first fetch tried again a second later');
  await server.close();
  const fetched = issuer.fetches;
  server.clock.advance(60_000);
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(issuer.fetches, fetched, 'no retry after close');
});

t.test('a token signed with an algorithm outside its key set’s list is refused for that reason, though the key verifies it', async (t) => {
  const rsa = await signingKey('r1', 'RS256');
  const issuer = await TokenIssuer.start([rsa]);
  t.teardown(() => issuer.close());
  const server = await tokenServer(t, issuer, { key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_url: issuer.jwksUrl, algorithms: ['ES256'] }] }, {}, true);
  const refused = await server.call('POST', '/check', checkWith(await tokenFor(rsa, 'alice')));
  t.equal(refused.status, 401);
  t.match(refused.body.detail, /the token's algorithm is not allowed by key set 'idp'/);
});

t.test('a token without an expiry is refused: exp is required', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const server = await tokenServer(t, issuer);
  const forever = await new SignJWT({}).setProtectedHeader({ alg: key.alg, kid: key.kid }).setSubject('alice').setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt().sign(key.privateKey);
  const refused = await server.call('POST', '/check', checkWith(forever));
  t.equal(refused.status, 401, JSON.stringify(refused.body));
  t.match(refused.body.detail, /the token has no 'exp' claim, which key set 'idp' requires/);
});
