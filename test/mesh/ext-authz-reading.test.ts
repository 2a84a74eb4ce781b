import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import { scratchDir, startServer, type TestServer } from '../helpers/server.js';
import { throughEnvoy, type ClientRequest, type EnvoyFilter } from '../helpers/envoy-ext-authz.js';

// What external authorization reads of a request decides on what the proxy vouches for: the client
// address Envoy appended (past a configured count of trusted hops), never one the client wrote; the
// path as the route matched it; the method's action from the route's table, then the file's, then
// the defaults. Each case is a request a client could send to slip past a rule.

const OPEN = { name: 'open', rules: [{ name: 'anyone', effect: 'allow', principal_conditions: [], actions: ['read', 'update', 'peek'] }] };

/** A server with `mapping` and the policies, and an Envoy in front of it as the mesh example configures it. */
async function envoyAndVerdict(t: Test, mapping: unknown, policies: unknown[]): Promise<{ server: TestServer; send: (request: Partial<ClientRequest>) => ReturnType<typeof throughEnvoy> }> {
  const dir = scratchDir(t);
  writeFileSync(join(dir, 'mapping.json'), JSON.stringify(mapping));
  const server = await startServer({ extAuthz: join(dir, 'mapping.json') });
  t.teardown(server.close);
  for (const policy of policies) t.equal((await server.call('POST', '/admin/policies', policy)).status, 200, 'policy written');
  const filter: EnvoyFilter = { serverUri: server.url, pathPrefix: '/ext-authz', allowedHeaders: ['x-forwarded-for'], useRemoteAddress: true };
  return { server, send: (request) => throughEnvoy(filter, { method: 'GET', host: 'h', path: '/documents/1', peerAddress: '198.51.100.7', ...request }) };
}

const OUTSIDE_OFFICE = {
  name: 'office',
  rules: [
    { name: 'outside', effect: 'deny', context_conditions: [{ path: 'attributes.client_address', operator: 'not_in_cidr', value: '10.0.0.0/8' }], actions: ['read'] },
    { name: 'inside', effect: 'allow', principal_conditions: [], actions: ['read'] },
  ],
};

t.test('the client address is the hop Envoy appended, never what the client wrote: a spoofed header, a direct client, a chain behind a trusted load balancer', async (t) => {
  const { send } = await envoyAndVerdict(t, { client_address: { trusted_hops: 0 }, routes: [{ path: '/documents/{id}', resource_type: 'document' }] }, [OUTSIDE_OFFICE]);
  t.match(await send({ peerAddress: '10.1.2.3' }), { passed: true }, 'a direct client inside the office');
  t.match(await send({ peerAddress: '203.0.113.9' }), { passed: false, status: 403 }, 'a direct client outside it');
  t.match(await send({ peerAddress: '203.0.113.9', headers: { 'x-forwarded-for': '10.1.2.3' } }), { passed: false, status: 403 }, 'a client outside that writes an office address is still outside');
  t.match(await send({ peerAddress: '203.0.113.9', headers: { 'x-forwarded-for': '10.1.2.3, 10.4.5.6' } }), { passed: false, status: 403 }, 'however long the chain it writes');

  const behindBalancer = await envoyAndVerdict(t, { client_address: { trusted_hops: 1 }, routes: [{ path: '/documents/{id}', resource_type: 'document' }] }, [OUTSIDE_OFFICE]);
  // The balancer (10.0.0.2) appends the address it saw; Envoy appends the balancer's.
  t.match(await behindBalancer.send({ peerAddress: '10.0.0.2', headers: { 'x-forwarded-for': '10.1.2.3' } }), { passed: true }, 'the client the trusted balancer saw, inside');
  t.match(await behindBalancer.send({ peerAddress: '10.0.0.2', headers: { 'x-forwarded-for': '10.9.9.9, 203.0.113.9' } }), { passed: false, status: 403 }, 'a spoofed first hop behind the balancer is not read');
  t.match(await behindBalancer.send({ peerAddress: '10.0.0.2' }), { passed: false, status: 403 }, 'fewer hops than the trusted ones: no address the proxies vouch for, denied');
});

t.test('a mapping may not read x-forwarded-for as an attribute: it is what the client wrote, in part', async (t) => {
  const dir = scratchDir(t);
  for (const mapping of [{ context: { headers: { 'x-forwarded-for': 'client_address' } } }, { principal: { headers: { 'x-forwarded-for': 'address' } } }]) {
    writeFileSync(join(dir, 'mapping.json'), JSON.stringify({ ...mapping, routes: [{ path: '/documents/{id}', resource_type: 'document' }] }));
    const refused = await startServer({ extAuthz: join(dir, 'mapping.json') }).then(
      async (server) => {
        await server.close();
        return 'started';
      },
      (error: Error) => error.message,
    );
    t.match(refused, /x-forwarded-for is written by the client, in part: read the address Envoy vouches for with client_address/);
  }
});

const NO_EXPORTS = {
  name: 'reports',
  rules: [
    { name: 'no-exports', effect: 'deny', context_conditions: [{ path: 'attributes.path', operator: 'endswith', value: '/export' }], actions: ['read'] },
    { name: 'readers', effect: 'allow', principal_conditions: [], actions: ['read'] },
  ],
};

t.test('context.path is the path the route matched: decoded, without the query', async (t) => {
  const { send } = await envoyAndVerdict(t, { routes: [{ path: '/reports/{id}/{view}', resource_type: 'report' }] }, [NO_EXPORTS]);
  t.match(await send({ path: '/reports/7/summary' }), { passed: true });
  for (const path of ['/reports/7/export', '/reports/7/export?x=1', '/reports/7/%65xport', '/reports/7/%65xport?access_token=secret']) {
    t.match(await send({ path }), { passed: false, status: 403 }, `${path} is /reports/7/export to a policy`);
  }
});

/** The status Verdict answers an authorization request for `path` sent as it is written (as an Envoy without normalize_path forwards it; undici would resolve its dot segments first). */
function rawStatus(url: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const sent = httpRequest(`${url}/ext-authz${path}`, { method: 'GET', path: `/ext-authz${path}` }, (response) => {
      response.resume();
      resolve(response.statusCode!);
    });
    sent.on('error', reject);
    sent.end();
  });
}

t.test('a path no route may name is refused before any policy is asked: dot segments and encoded slashes, even where a route would allow anything', async (t) => {
  const { server, send } = await envoyAndVerdict(t, { routes: [{ path: '/files/{name}', resource_type: 'file' }, { path: '/files/{name}/{part}', resource_type: 'file' }] }, [OPEN]);
  t.match(await send({ path: '/files/report' }), { passed: true }, 'the open route lets a plain name through');
  t.equal(await rawStatus(server.url, '/files/report'), 200, 'sent as written too');
  for (const path of ['/files/%2e%2e', '/files/..', '/files/.', '/files/%2E', '/files/a%2Fb', '/files/a%2fb', '/files/a%2F..%2Fb/x', '/files/x/..', '/files/x/%2e%2e']) {
    t.equal(await rawStatus(server.url, path), 403, `${path} names no file`);
  }
});

t.test("a method's action: the route's own table first, then the file's, then the defaults (PATCH is update)", async (t) => {
  const mapping = {
    actions: { POST: 'submit' },
    routes: [
      { path: '/inbox/{id}', resource_type: 'message', actions: { GET: 'peek' } },
      { path: '/documents/{id}', resource_type: 'document' },
    ],
  };
  const onlyPeek = { name: 'peekers', rules: [{ name: 'peek', effect: 'allow', principal_conditions: [], actions: ['peek'] }] };
  const { send } = await envoyAndVerdict(t, mapping, [onlyPeek]);
  t.match(await send({ path: '/inbox/1' }), { passed: true }, "the route's GET is peek, which is allowed");
  t.match(await send({ path: '/documents/1' }), { passed: false, status: 403 }, 'elsewhere GET is read, which is not');
  const updates = await envoyAndVerdict(t, mapping, [{ name: 'updaters', rules: [{ name: 'update', effect: 'allow', principal_conditions: [], actions: ['update'] }] }]);
  t.match(await updates.send({ path: '/documents/1', method: 'PATCH' }), { passed: true }, 'PATCH is update');
  t.match(await updates.send({ path: '/documents/1', method: 'PUT' }), { passed: true }, 'PUT is update');
  t.match(await updates.send({ path: '/documents/1', method: 'POST' }), { passed: false, status: 403 }, "the file's POST is submit");
});
