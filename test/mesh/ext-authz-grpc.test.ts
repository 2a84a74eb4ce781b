import t, { type Test } from 'tap';
import fc from 'fast-check';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { ready, scratchDir, startServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import { AUDIENCE, ISSUER, signingKey, TokenIssuer, tokenFor } from '../helpers/token-issuer.js';
import { loadConfig } from '../../src/config/config.js';
import { EnvoyGrpc } from '../helpers/envoy-grpc.js';
import { ExtAuthzMapping } from '../../src/ext-authz/mapping.js';
import { MESH_MAPPING as MAPPING, MESH_POLICIES as POLICIES } from '../helpers/mesh-example.js';

// Envoy's gRPC external authorization (`--ext-authz-grpc`) against a real server, over a real socket:
// a gRPC client sends what Envoy's filter sends, and every answer equals the HTTP flavour's for the
// same request (the same mapping, tokens and decision path).

async function meshServer(t: Test, issuer: TokenIssuer, mapping: unknown = MAPPING, config: Record<string, unknown> = {}): Promise<{ server: TestServer; envoy: EnvoyGrpc }> {
  const dir = scratchDir(t);
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_url: issuer.jwksUrl }] }));
  writeFileSync(join(dir, 'mapping.json'), JSON.stringify(mapping));
  const server = await startServer({ tokens: join(dir, 'tokens.json'), extAuthz: join(dir, 'mapping.json'), extAuthzGrpc: '0', ...config });
  t.teardown(server.close);
  await ready(server);
  for (const policy of POLICIES) t.equal((await server.call('POST', '/admin/policies', policy)).status, 200, 'policy written');
  for (const [uri, owner] of [['document:1', 'alice'], ['document:red/7', 'bob']]) {
    t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri, type: 'resource', attributes: { owner } })).status, 200);
  }
  const envoy = new EnvoyGrpc(server.extAuthzGrpc()!);
  t.teardown(() => envoy.close());
  return { server, envoy };
}

/** The HTTP flavour's answer to the same request: Envoy's HTTP filter appends the peer to X-Forwarded-For. */
async function overHttp(server: TestServer, method: string, path: string, headers: Record<string, string>, peer: string) {
  const response = await request(`${server.url}/ext-authz${path}`, { method: method as 'GET', headers: { ...headers, 'x-forwarded-for': peer } });
  const body = await response.body.text();
  return { httpStatus: response.statusCode, body, principal: response.headers['x-verdict-principal'], challenge: response.headers['www-authenticate'] };
}

t.test('random routes, methods, tokens and peers: every gRPC answer equals the HTTP flavour’s', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const { server, envoy } = await meshServer(t, issuer);
  const forger = await signingKey('k1');
  const tokens = { alice: await tokenFor(key, 'alice'), bob: await tokenFor(key, 'bob'), forged: await tokenFor(forger, 'alice'), expired: await tokenFor(key, 'alice', { expiresIn: -3600 }) };
  const cases = fc.sample(
    fc.record({
      method: fc.constantFrom('GET', 'PUT', 'DELETE', 'PATCH'),
      path: fc.constantFrom('/documents/1', '/documents/2?x=1', '/teams/red/documents/7', '/public/9', '/elsewhere', '/documents/%2e%2e/admin', '/documents/1/'),
      token: fc.constantFrom(undefined, 'alice', 'bob', 'forged', 'expired'),
      peer: fc.constantFrom('198.51.100.7', '203.0.113.9'),
    }),
    { numRuns: 120, seed: 11 },
  );
  const seen = new Set<number>();
  for (const { method, path, token, peer } of cases) {
    const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${tokens[token as keyof typeof tokens]}` };
    const [grpcAnswer, httpAnswer] = await Promise.all([envoy.check({ method, path, headers, sourceAddress: peer }), overHttp(server, method, path, headers, peer)]);
    const what = `${method} ${path} token ${token} from ${peer}`;
    t.equal(grpcAnswer.httpStatus, httpAnswer.httpStatus, what);
    t.equal(grpcAnswer.body, httpAnswer.body, `${what}: the body`);
    if (httpAnswer.httpStatus === 200) t.equal(grpcAnswer.headers['x-verdict-principal'], httpAnswer.principal, `${what}: the principal header`);
    if (httpAnswer.httpStatus === 401) t.equal(grpcAnswer.headers['www-authenticate'], httpAnswer.challenge, `${what}: the challenge`);
    t.equal(grpcAnswer.code, { 200: 0, 401: 16, 403: 7 }[httpAnswer.httpStatus], `${what}: the gRPC status`);
    seen.add(httpAnswer.httpStatus);
  }
  t.same([...seen].sort(), [200, 401, 403], 'allowed, refused and denied cases were all drawn');
});

t.test('what Envoy cannot have meant is denied, never allowed, and the server goes on: no HTTP part, garbage, an oversized message', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const { envoy } = await meshServer(t, issuer);
  const network = await envoy.checkRaw({ attributes: { source: { address: { socket_address: { address: '198.51.100.7' } } } } });
  t.equal(network.status.code, 7, 'a network-filter CheckRequest (no HTTP part) is denied');
  t.match(network.status.message, /no HTTP request/);
  t.equal((await envoy.check({ method: '', path: '/public/1' })).code, 7, 'no method: denied');
  await t.rejects(envoy.sendBytes(Buffer.from([0xff, 0xff, 0xff, 0x0f, 0x01])), { code: 13 }, 'bytes that are no CheckRequest: an error, which Envoy (failure_mode_allow: false) denies');
  await t.rejects(envoy.check({ method: 'GET', path: '/public/1', headers: { 'x-padding': 'x'.repeat(2 * 1024 * 1024) } }), { code: 8 }, 'an oversized message: RESOURCE_EXHAUSTED');
  t.equal((await envoy.check({ method: 'GET', path: '/public/1', sourceAddress: '198.51.100.7' })).httpStatus, 200, 'and the next request is answered');
});

t.test("each answer names what decided in dynamic_metadata, for Envoy's access log: the policy and rule, or the default", async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const { envoy } = await meshServer(t, issuer);
  const request = (path: string) => ({ attributes: { source: { address: { socket_address: { address: '198.51.100.7' } } } , request: { http: { method: 'GET', path, headers: {} } } } });
  const strings = (response: Record<string, any>) => Object.fromEntries(Object.entries(response.dynamic_metadata?.fields ?? {}).map(([name, value]) => [name, (value as { stringValue: string }).stringValue]));
  t.same(strings(await envoy.checkRaw(request('/public/1'))), { verdict_decided_by: 'rule', verdict_policy: 'owners', verdict_rule: 'public-reads' }, 'an allow by rule');
  t.same(strings(await envoy.checkRaw(request('/documents/1'))), { verdict_decided_by: 'default', verdict_default_effect: 'deny' }, 'a deny by default');
  t.same(strings(await envoy.checkRaw(request('/elsewhere'))), {}, 'no route: nothing decided, nothing named');
});

t.test("a route's context_extensions reach the check's context as `extensions`: a policy reads per-route settings; too many or too long is a denial", async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const { server, envoy } = await meshServer(t, issuer);
  const frozen = { name: 'frozen-routes', rules: [{ name: 'no-reads-when-frozen', effect: 'deny', context_conditions: [{ path: 'attributes.extensions.stage', operator: '==', value: 'frozen' }], actions: ['read'] }] };
  t.equal((await server.call('POST', '/admin/policies', frozen)).status, 200);
  const asked = (extensions?: Record<string, string>) =>
    envoy.checkRaw({ attributes: { source: { address: { socket_address: { address: '198.51.100.7' } } }, request: { http: { method: 'GET', path: '/public/1', headers: {} } }, ...(extensions && { context_extensions: extensions }) } });
  t.equal((await asked()).status.code, 0, 'no extensions: the public read is allowed');
  t.equal((await asked({ stage: 'live' })).status.code, 0, 'another stage: allowed');
  const denied = await asked({ stage: 'frozen' });
  t.equal(denied.status.code, 7, 'a frozen route: denied');
  t.equal(denied.dynamic_metadata?.fields?.verdict_rule?.stringValue, 'no-reads-when-frozen', 'by the rule reading the extension');
  const many = await asked(Object.fromEntries(Array.from({ length: 33 }, (_, index) => [`k${index}`, 'v'])));
  t.equal(many.status.code, 7, '33 extensions: denied');
  t.match(many.status.message, /carries 33 context_extensions; at most 32/);
  const long = await asked({ stage: 'x'.repeat(1025) });
  t.equal(long.status.code, 7, 'a value over 1,024 characters: denied');
  t.match(long.status.message, /context_extension 'stage' is longer/);
});

t.test("Envoy's network filter: a connection's check from the mapping's network section, its principal the peer certificate's, registered attributes read; what it lacks is denied", async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const network = { principal_uri: 'workload:{source_principal}', resource_uri: 'service:{destination_port}' };
  const { server, envoy } = await meshServer(t, issuer, { ...MAPPING, network });
  const frontend = 'spiffe://cluster.local/ns/shop/sa/frontend';
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: `workload:${frontend}`, attributes: { team: 'shop' } })).status, 200);
  const policy = {
    name: 'connections',
    rules: [{ name: 'shop-to-db', effect: 'allow', principal_conditions: [{ path: 'attributes.team', operator: '==', value: 'shop' }], resource_conditions: [{ path: 'uri', operator: '==', value: 'service:5432' }], actions: ['connect'] }],
  };
  t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
  const peer = (address: string, port: number, principal?: string) => ({ address: { socket_address: { address, port_value: port } }, ...(principal !== undefined && { principal }) });
  const connect = (principal: string | undefined, port: number) => envoy.checkRaw({ attributes: { source: peer('10.0.0.5', 41_000, principal), destination: peer('10.0.0.9', port) } });
  const allowed = await connect(frontend, 5432);
  t.equal(allowed.status.code, 0, 'the shop frontend reaches its database');
  t.equal(allowed.dynamic_metadata?.fields?.verdict_rule?.stringValue, 'shop-to-db', 'by the rule reading its registered team');
  t.equal((await connect(frontend, 6379)).status.code, 7, 'another port: denied');
  t.equal((await connect('spiffe://cluster.local/ns/ads/sa/tracker', 5432)).status.code, 7, 'another workload: denied');
  // The same checks through /check: the same answers.
  for (const [principal, port, allowed] of [[frontend, 5432, true], [frontend, 6379, false], ['spiffe://cluster.local/ns/ads/sa/tracker', 5432, false]] as const) {
    const asked = { principal: { uri: `workload:${principal}` }, resource: { uri: `service:${port}` }, action: 'connect', context: { client_address: '10.0.0.5', destination_address: '10.0.0.9', destination_port: port } };
    t.equal((await server.call('POST', '/check', asked)).body.allowed, allowed, `/check answers ${principal} → ${port} alike`);
  }
  const anonymous = await connect(undefined, 5432);
  t.equal(anonymous.status.code, 7, 'no peer certificate: denied');
  t.match(anonymous.status.message, /carries no source_principal/);
  t.throws(() => ExtAuthzMapping.of({ network: { principal_uri: 'workload:{sub}', resource_uri: 'service:{destination_port}' } }, 'mapping', undefined), /network.principal_uri reads '\{sub\}': a connection gives only/, 'a template reading what no connection carries stops the start');
});

t.test('each gRPC call is timed in /metrics by method and status code, as HTTP requests are by route and status', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const { server, envoy } = await meshServer(t, issuer);
  for (let index = 0; index < 3; index++) t.equal((await envoy.check({ method: 'GET', path: '/public/1', sourceAddress: '198.51.100.7' })).code, 0);
  t.equal((await envoy.check({ method: 'GET', path: '/elsewhere', sourceAddress: '198.51.100.7' })).code, 7);
  const metrics = (await server.call('GET', '/metrics')).body as string;
  const count = (code: number) => Number(new RegExp(`^verdict_grpc_call_duration_seconds_count\\{[^}]*code="${code}"[^}]*\\} (\\d+)$`, 'm').exec(metrics)?.[1]);
  t.equal(count(0), 3, 'three allowed (OK), in one series');
  t.equal(count(7), 1, 'one denied (PERMISSION_DENIED)');
  t.match(metrics, /verdict_grpc_call_duration_seconds_bucket\{[^}]*method="envoy\.service\.auth\.v3\.Authorization\/Check"/, 'named by its method');
});

t.test("the decision log names a gRPC call by the x-request-id Envoy forwards, as the HTTP doors do: a hostile one is replaced by the server's own", async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const log = join(scratchDir(t), 'decisions.ndjson');
  const { envoy } = await meshServer(t, issuer, MAPPING, { decisionLog: log });
  await envoy.check({ method: 'GET', path: '/public/1', headers: { 'x-request-id': 'envoy-7' }, sourceAddress: '198.51.100.7' });
  await envoy.check({ method: 'GET', path: '/public/2', headers: { 'x-request-id': 'x'.repeat(5000) }, sourceAddress: '198.51.100.7' });
  await envoy.check({ method: 'GET', path: '/public/3', headers: { 'x-request-id': 'two words' }, sourceAddress: '198.51.100.7' });
  await until(() => existsSync(log) && readFileSync(log, 'utf8').trim().split('\n').length >= 3, 'three decisions logged');
  const ids = readFileSync(log, 'utf8').trim().split('\n').map((line) => (JSON.parse(line) as { request_id: string }).request_id);
  t.equal(ids[0], 'envoy-7');
  for (const id of ids.slice(1)) t.match(id, /^[0-9a-f-]{36}$/, `an unusable id replaced by the server's own: ${id.slice(0, 40)}`);
});

t.test('grpc.health.v1 says SERVING only while the server is ready; a drain answers the calls in flight', async (t) => {
  const key = await signingKey('k1');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const { server, envoy } = await meshServer(t, issuer);
  t.equal(await envoy.healthStatus(), 'SERVING');
  const inFlight = Array.from({ length: 50 }, () => envoy.check({ method: 'GET', path: '/public/1', sourceAddress: '198.51.100.7' }));
  await Promise.race(inFlight);
  const closing = server.close();
  const answers = await Promise.allSettled(inFlight);
  await closing;
  const answered = answers.filter((answer) => answer.status === 'fulfilled' && answer.value.httpStatus === 200).length;
  const refused = answers.filter((answer) => answer.status === 'rejected').length;
  t.equal(answered + refused, 50, `every call was answered or refused (not started): ${answered} answered, ${refused} refused`);
  t.ok(answered > 0, 'those already sent were answered');
  t.ok(answers.every((answer) => answer.status === 'fulfilled' || (answer.reason as { code: number }).code === 14), 'the others refused as UNAVAILABLE, which Envoy retries elsewhere or denies');
});

t.test('--ext-authz-grpc without --ext-authz stops the start, saying what to add', async (t) => {
  t.throws(() => loadConfig(['--ext-authz-grpc', '9191'], {}), /--ext-authz-grpc .* give --ext-authz <file> too/);
  t.throws(() => loadConfig(['--ext-authz-grpc', 'nine'], {}), /--ext-authz-grpc/, 'a port or a socket path');
});
