import t, { type Test } from 'tap';
import fc from 'fast-check';
import { VerdictClient } from '../../clients/node/src/index.js';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AUDIENCE, ISSUER, signingKey, TokenIssuer, tokenFor } from '../helpers/token-issuer.js';
import { ready, startServer, temporaryDataDir, type TestServer } from '../helpers/server.js';
import { answeredAlone, requestsOn, roleRule } from './helpers.js';

// The Node client's decision cache, against a real Verdict: it never answers what a write changed,
// once the change feed has told it of the write; it serves nothing while it does not follow the
// feed. CACHE_RUNS sets the number of random sequences.

const RUNS = Number(process.env.CACHE_RUNS ?? 12);

/** Resolves once the client has applied more than `count` changes of the feed. */
async function changeApplied(client: VerdictClient, count: number): Promise<void> {
  while (client.changesApplied <= count) await new Promise((resolve) => setTimeout(resolve, 1));
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** The checks the sequences ask, again and again: by uri (the registry decides) and by attributes. */
const CHECKS = [
  { principal: { uri: 'user:alice' }, resource: { uri: 'doc:1' }, action: 'read' },
  { principal: { uri: 'user:bob' }, resource: { uri: 'doc:1' }, action: 'read' },
  { principal_uri: 'user:alice', resource_uri: 'doc:2', action: 'write' },
  { principal: { attributes: { role: 'reader' } }, resource: { uri: 'doc:1' }, action: 'read' },
  { principal: { attributes: { role: 'writer' } }, resource: { attributes: { kind: 'doc' } }, action: 'write' },
];

type Step = { kind: 'policy'; role: string } | { kind: 'entity'; uri: string; role: string; throughClient: boolean } | { kind: 'schemas' } | { kind: 'checks'; picks: number[] };

const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('policy' as const), role: fc.constantFrom('reader', 'writer') }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('entity' as const), uri: fc.constantFrom('user:alice', 'user:bob'), role: fc.constantFrom('reader', 'writer'), throughClient: fc.boolean() }), weight: 3 },
  { arbitrary: fc.constant({ kind: 'schemas' as const }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('checks' as const), picks: fc.array(fc.integer({ min: 0, max: CHECKS.length - 1 }), { minLength: 1, maxLength: 8 }) }), weight: 6 },
);

async function setUp(t: Test, server: TestServer): Promise<void> {
  for (const policy of [roleRule('readers', 'reader'), roleRule('writers', 'writer', 'write')]) t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
  for (const uri of ['user:alice', 'user:bob']) t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri, type: 'principal', attributes: { role: 'reader' } })).status, 200);
  for (const uri of ['doc:1', 'doc:2']) t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri, type: 'resource', attributes: { kind: 'doc' } })).status, 200);
}

/** A server set up for the sequences, and a client whose cache serves. */
async function cachingClient(t: Test): Promise<{ server: TestServer; client: VerdictClient }> {
  const server = await startServer();
  t.teardown(server.close);
  await setUp(t, server);
  const client = new VerdictClient({ url: server.url, cache: true });
  t.teardown(() => client.close());
  await until(() => client.cacheServing);
  return { server, client };
}

t.test(`random writes and checks: a cached decision is never one a write changed, once the feed told of it (${RUNS} sequences)`, async (t) => {
  const { server, client } = await cachingClient(t);
  const delays: number[] = [];
  const seen = { hits: 0, asked: 0, writes: 0 };
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 30 }), async (steps) => {
      for (const each of steps) {
        const applied = client.changesApplied;
        if (each.kind === 'checks') {
          const before = await requestsOn(server, '/check') + (await requestsOn(server, '/check/bulk'));
          const decisions = await client.checkMany(each.picks.map((pick) => CHECKS[pick]!));
          const after = await requestsOn(server, '/check') + (await requestsOn(server, '/check/bulk'));
          seen.asked += each.picks.length;
          if (after === before) seen.hits += each.picks.length;
          for (const [index, pick] of each.picks.entries()) {
            const alone = await answeredAlone(server, CHECKS[pick]);
            if (JSON.stringify(decisions[index]) !== alone.body) throw new Error(`${JSON.stringify(CHECKS[pick])}: the client answered ${JSON.stringify(decisions[index])}, /check ${alone.body}`);
          }
          continue;
        }
        seen.writes++;
        if (each.kind === 'entity' && each.throughClient) {
          // The client's own write: its next checks see it at once, before the feed tells of it.
          await client.updateEntity(each.uri, { type: 'principal', attributes: { role: each.role } });
          continue;
        }
        if (each.kind === 'policy') t.equal((await server.call('PUT', '/admin/policies/readers', roleRule('readers', each.role))).status, 200);
        if (each.kind === 'entity') t.equal((await server.call('PUT', `/admin/fetchers/registry/entities/${encodeURIComponent(each.uri)}`, { uri: each.uri, type: 'principal', attributes: { role: each.role } })).status, 200);
        if (each.kind === 'schemas') t.equal((await server.call('PUT', '/admin/schemas', { principal: { attributes: { type: 'object' } } })).status, 200);
        await changeApplied(client, applied);
        delays.push(client.changeDelayMs!);
      }
    }),
    { numRuns: RUNS },
  );
  t.ok(seen.hits > 0 && seen.hits < seen.asked, `${seen.hits} of ${seen.asked} checks answered from the cache, across ${seen.writes} writes`);
  delays.sort((one, other) => one - other);
  t.comment(`the feed's delay, from the server knowing a change to the client applying it: median ${delays[Math.floor(delays.length / 2)]} ms, max ${delays.at(-1)} ms, over ${delays.length} changes`);
});

t.test('a policy that reads the decision time: nothing is cached while it is in force', async (t) => {
  const { server, client } = await cachingClient(t);
  const applied = client.changesApplied;
  const fresh = { name: 'fresh', rules: [{ name: 'r', effect: 'allow', actions: ['sign'], principal_conditions: [{ path: 'attributes.signed_in', operator: 'within', value: { last: 'PT1S' } }] }] };
  t.equal((await server.call('POST', '/admin/policies', fresh)).status, 200);
  await changeApplied(client, applied);
  t.equal(client.cacheServing, false, 'a time-dependent revision: the cache serves nothing');
  const check = { principal: { attributes: { signed_in: new Date().toISOString() } }, resource: { uri: 'doc:1' }, action: 'sign' };
  t.equal((await client.check(check)).allowed, true);
  await new Promise((resolve) => setTimeout(resolve, 1100));
  t.equal((await client.check(check)).allowed, false, 'a second later, the same check is denied: it was not kept');
});

t.test('without the feed the cache serves nothing: no admin key, a server gone and back', async (t) => {
  const key = 'k'.repeat(32);
  const guarded = await startServer({ adminAuthRequired: true, adminApiKey: key });
  t.teardown(guarded.close);
  await guarded.call('POST', '/admin/policies', roleRule('readers', 'reader'), { 'way-api-key': key });
  const errors: unknown[] = [];
  const keyless = new VerdictClient({ url: guarded.url, cache: true, onBackgroundError: (error) => errors.push(error) });
  t.teardown(() => keyless.close());
  const check = { principal: { attributes: { role: 'reader' } }, resource: { uri: 'doc:1' }, action: 'read' };
  t.equal((await keyless.check(check)).allowed, true);
  await until(() => errors.length > 0);
  t.match(String(errors[0]), /401/, 'the feed is refused without a key, and the client says so');
  t.equal(keyless.cacheServing, false);
  await keyless.check(check);
  t.equal(await requestsOn(guarded, '/check'), 2, 'each check went to the server');

  const dataDir = temporaryDataDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const server = await startServer({ dataDir });
  await setUp(t, server);
  const port = Number(new URL(server.url).port);
  const client = new VerdictClient({ url: server.url, cache: true, retries: 0 });
  t.teardown(() => client.close());
  await until(() => client.cacheServing);
  t.equal((await client.check(CHECKS[0]!)).allowed, true);
  await server.close();
  await until(() => !client.cacheServing);
  const refused = await client.check(CHECKS[0]!).catch((error: unknown) => error);
  t.match(refused, { name: 'VerdictUnavailableError', status: undefined }, 'a check while the server is gone fails at once, from the cache too');
  const back = await startServer({ port, dataDir });
  t.teardown(back.close);
  await until(() => client.cacheServing);
  t.equal((await client.check(CHECKS[0]!)).allowed, true, 'the feed followed again once the server is back');
});

t.test('a check whose principal is a token is never served from the cache: the token expires, and its allow with it', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const dir = temporaryDataDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_url: issuer.jwksUrl }], leeway_seconds: 0 }));
  const server = await startServer({ tokens: join(dir, 'tokens.json') });
  t.teardown(server.close);
  await ready(server);
  t.equal((await server.call('POST', '/admin/policies', { name: 'signed-in', rules: [{ name: 'anyone', effect: 'allow', principal_conditions: [{ path: 'attributes.claims.sub', operator: 'exists' }], actions: ['read'] }] })).status, 200);
  const client = new VerdictClient({ url: server.url, cache: true });
  t.teardown(() => client.close());
  await until(() => client.cacheServing);
  const check = { principal: { token: await tokenFor(key, 'alice', { expiresIn: 2 }) }, resource: { uri: 'doc:1' }, action: 'read' };
  t.equal((await client.check(check)).allowed, true);
  await new Promise((resolve) => setTimeout(resolve, 2500));
  const afterExpiry = await client.check(check).then(
    (decision) => `answered ${JSON.stringify(decision)}`,
    (error: Error) => error.message,
  );
  t.match(afterExpiry, /token has expired/, 'asked of the server again, which refuses the expired token');
});
