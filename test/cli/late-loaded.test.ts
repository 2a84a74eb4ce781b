import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ask, freePort, runVerdict, waitFor } from '../helpers/child.js';
import { scratchDir } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import { AUDIENCE, ISSUER, signingKey, tokenFor } from '../helpers/token-issuer.js';
import { EnvoyGrpc } from '../helpers/envoy-grpc.js';
import { receiver } from '../helpers/otlp-receiver.js';
import { MESH_MAPPING, MESH_POLICIES } from '../helpers/mesh-example.js';

// A start loads some parts only when its configuration or a request first needs them (test/cli/start-up.test.ts),
// and the tests of each part build the server in process. Here each part loaded late is used once through
// `verdict` itself, each against a real peer: what loads it at run time is what a deployment runs.

const READERS = { name: 'readers', rules: [{ name: 'readers-read', effect: 'allow', principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'reader' }], actions: ['read'] }] };

t.test('verdict, as built, serves gRPC external authorization, tracing, the worker pool, the dashboard and the docs', async (t) => {
  const dir = scratchDir(t);
  const key = await signingKey('k1');
  writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [key.publicJwk] }));
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_file: join(dir, 'jwks.json') }] }));
  writeFileSync(join(dir, 'mapping.json'), JSON.stringify(MESH_MAPPING));
  const collector = await receiver(t);
  const [port, grpcPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${port}`;
  const server = runVerdict(t, [
    'start', '--store', 'embedded', '--data-dir', join(dir, 'data'), '--port', String(port), '--log-level', 'warn',
    '--tokens', join(dir, 'tokens.json'), '--ext-authz', join(dir, 'mapping.json'), '--ext-authz-grpc', String(grpcPort),
    '--otlp-endpoint', collector.url, '--trace-sample-ratio', '1', '--evaluation', 'pool', '--workers', '1',
  ], { ADMIN_AUTHN_REQUIRED: 'false' });
  await waitFor(url, '/ready', 200, server);
  for (const policy of MESH_POLICIES) t.equal((await ask(url, 'POST', '/admin/policies', policy)).status, 200, 'policy written');

  const envoy = new EnvoyGrpc(`127.0.0.1:${grpcPort}`);
  t.teardown(() => envoy.close());
  const alice = { authorization: `Bearer ${await tokenFor(key, 'alice')}` };
  for (const [path, headers, allowed] of [['/public/9', alice, true], ['/documents/1', {}, false]] as const) {
    const overGrpc = await envoy.check({ method: 'GET', path, headers, sourceAddress: '198.51.100.7' });
    const overHttp = await ask(url, 'GET', `/ext-authz${path}`, undefined, { ...headers, 'x-forwarded-for': '198.51.100.7' });
    t.equal(overGrpc.httpStatus === 200, allowed, `GET ${path} over gRPC external authorization (gRPC, its protos, the token verifier)`);
    t.equal(overGrpc.httpStatus, overHttp.status, 'answered as over HTTP');
  }

  t.equal((await ask(url, 'POST', '/admin/policies', READERS)).status, 200);
  const check = { principal: { attributes: { role: 'reader' } }, resource: { attributes: { id: '1' } }, action: 'read' };
  t.same((await ask(url, 'POST', '/check', check)).body.allowed, true, 'a check is decided');
  await until(() => collector.spans.some((span) => span.attributes['http.route'] === '/check'), 'a span of the check');
  t.pass('and traced: its span reached the collector');

  const bulk = await ask(url, 'POST', '/check/bulk', [check, check]);
  t.same(bulk.body.map((decision: { allowed: boolean }) => decision.allowed), [true, true], 'a bulk is decided');
  t.match((await ask(url, 'GET', '/metrics')).body, /^verdict_worker_pool_threads 1$/m, 'by the worker thread started for it');

  t.equal((await ask(url, 'GET', '/dashboard/')).status, 200, 'the dashboard');
  t.equal((await ask(url, 'GET', '/docs/static/logo.svg')).status, 200, "the docs' pages, from swagger-ui's own directory");
  t.equal((await ask(url, 'GET', '/openapi.json')).status, 200, 'the OpenAPI document');
});
