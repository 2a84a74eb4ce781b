import t, { type Test } from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import { examplePath, operationsOf } from '../helpers/openapi.js';

const JSON_TYPE = { 'content-type': 'application/json' };

async function fresh(t: { teardown(fn: () => unknown): void }, overrides = {}): Promise<TestServer> {
  const server = await startServer(overrides);
  t.teardown(server.close);
  return server;
}

/** No stack trace, file path or internal error name leaks into a body. */
function assertNoLeak(t: { notMatch(found: unknown, pattern: RegExp, message: string): boolean }, body: unknown, label: string) {
  const text = typeof body === 'string' ? body : JSON.stringify(body ?? '');
  t.notMatch(text, /\bat [\w.<>]+ \(|node:internal|\/src\/|\.ts:\d+|\.js:\d+|stack/i, `${label}: no stack trace`);
}

function assertStringDetail(
  t: { type(found: unknown, type: string): boolean; strictSame(found: unknown, wanted: unknown): boolean },
  body: any,
) {
  t.type(body, 'object');
  t.strictSame(Object.keys(body), ['detail']);
  t.type(body.detail, 'string');
}

t.test('malformed JSON is 400 with a detail, on every route that takes a body, and on bulks read in a worker', async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await fresh(t, { evaluation });
    const operations = operationsOf((await server.call('GET', '/docs/json')).body).filter((operation) => operation.takesBody);
    t.ok(operations.length > 15, `${operations.length} routes take a body`);
    // The pool reads only /check/bulk: the other routes are tried once, inline.
    for (const operation of evaluation === 'pool' ? operations.filter(({ route }) => route === '/check/bulk') : operations) {
      const path = examplePath(operation);
      for (const text of ['{"principal": ', '{principal: 1}', "{'a': 1}", '[1, 2,]', 'nul', '{"a": 1} trailing']) {
        const response = await server.send(operation.method, path, text, JSON_TYPE);
        t.equal(response.status, 400, `${evaluation}: ${operation.method} ${path} ${text}`);
        assertStringDetail(t, response.body);
        assertNoLeak(t, response.body, `${operation.method} ${path}`);
      }
    }
  }
});

t.test('a number too large for a double is refused where it would be stored, not silently turned into null', async (t) => {
  const server = await fresh(t);
  const overflowing = ['1e400', '-1e400', '1' + '0'.repeat(400), '0.5E+309'];
  for (const literal of overflowing) {
    const policy = `{"name":"big","rules":[{"name":"r","effect":"allow","actions":["a"],"principal_conditions":[{"path":"attributes.x","operator":"gt","value":${literal}}]}]}`;
    const created = await server.send('POST', '/admin/policies', policy, JSON_TYPE);
    t.equal(created.status, 422, literal.slice(0, 20));
    t.same(created.body.detail[0].loc, ['body', 'rules', 0, 'principal_conditions', 0, 'value']);
    const registered = await server.send('POST', '/admin/fetchers/registry/entities', `{"uri":"e","attributes":{"x":[${literal}]}}`, JSON_TYPE);
    t.equal(registered.status, 422);
    t.same(registered.body.detail[0].loc, ['body', 'attributes', 'x']);
    // A check stores nothing: the number is compared as the (infinite) value it denotes.
    const checked = await server.send('POST', '/check', `{"principal":{"attributes":{"x":${literal}}},"resource":{"uri":"r"}}`, JSON_TYPE);
    t.equal(checked.status, 200);
  }
  t.same((await server.call('GET', '/admin/policies')).body, [], 'no policy was stored');
  // A policy `x gt 1e400` would otherwise come back as `x gt null`, and `x: 5` would pass it.
  t.same(
    (await server.call('POST', '/check', { principal: { attributes: { x: 5 } }, resource: { uri: 'r' }, action: 'a' })).body,
    { allowed: false, reason: 'Action denied by default because there are no policies' },
  );

  // Large but representable numbers, tiny ones, and look-alikes in strings are fine.
  const fine = await server.send(
    'POST',
    '/admin/policies',
    '{"name":"fine","description":"1e400 in text","rules":[{"name":"r","effect":"allow","actions":["a"],"principal_conditions":[{"path":"attributes.x","operator":"gt","value":1e300},{"path":"attributes.y","operator":"==","value":1e-400}]}]}',
    JSON_TYPE,
  );
  t.equal(fine.status, 200);
  t.equal(fine.body.description, '1e400 in text');
  t.equal(fine.body.rules[0].principal_conditions[0].value, 1e300);
  t.equal(fine.body.rules[0].principal_conditions[1].value, 0);
});

t.test('a content type other than JSON is 400', async (t) => {
  const server = await fresh(t);
  const body = JSON.stringify({ principal: { attributes: { a: 1 } }, resource: { uri: 'r' } });
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'text/json']) {
    const response = await server.send('POST', '/check', body, { 'content-type': type });
    t.equal(response.status, 400, type);
    assertStringDetail(t, response.body);
  }
  const policy = await server.send('POST', '/admin/policies', JSON.stringify({ name: 'p', rules: [] }), { 'content-type': 'text/plain' });
  t.equal(policy.status, 400);
  assertStringDetail(t, policy.body);
  // Nothing was created by the refused request.
  t.same((await server.call('GET', '/admin/policies')).body, []);

  // application/json with parameters is still JSON.
  const charset = await server.send('POST', '/check', body, { 'content-type': 'application/json; charset=utf-8' });
  t.equal(charset.status, 200);
  t.same(charset.body, { allowed: false, reason: 'Action denied by default because there are no policies' });
});

t.test('a schema violation is 422 with a list of {loc, msg, type}', async (t) => {
  const server = await fresh(t);
  const cases: { method: string; path: string; body: unknown; loc: unknown[] }[] = [
    { method: 'POST', path: '/check', body: { principal: { attributes: 7 }, resource: { uri: 'r' } }, loc: ['body', 'principal', 'attributes'] },
    { method: 'POST', path: '/check', body: { principal: { uri: 5 }, resource: { uri: 'r' } }, loc: ['body', 'principal', 'uri'] },
    { method: 'POST', path: '/check', body: { principal: { uri: 'p' }, resource: { uri: 'r' }, action: 3 }, loc: ['body', 'action'] },
    { method: 'POST', path: '/check', body: [1], loc: ['body'] },
    { method: 'POST', path: '/check', body: 'text', loc: ['body'] },
    { method: 'POST', path: '/admin/policies', body: { name: 'p', rules: 'none' }, loc: ['body', 'rules'] },
    { method: 'POST', path: '/admin/policies', body: { name: 'p', rules: [], extra: 1 }, loc: ['body', 'extra'] },
  ];
  for (const { method, path, body, loc } of cases) {
    const response = await server.call(method, path, body);
    t.equal(response.status, 422, `${path} ${JSON.stringify(body)}`);
    t.strictSame(Object.keys(response.body), ['detail']);
    t.ok(Array.isArray(response.body.detail) && response.body.detail.length > 0);
    for (const issue of response.body.detail) {
      t.strictSame(Object.keys(issue).sort(), ['loc', 'msg', 'type']);
      t.ok(Array.isArray(issue.loc));
      t.type(issue.msg, 'string');
      t.type(issue.type, 'string');
    }
    t.same(response.body.detail[0].loc, loc, `${path} ${JSON.stringify(body)}`);
  }
  // A POST without any body where one is required.
  const noBody = await server.send('POST', '/admin/policies', '', JSON_TYPE);
  t.equal(noBody.status, 422);
  t.ok(Array.isArray(noBody.body.detail));
  const noBodyCheck = await server.send('POST', '/check', '', {});
  t.equal(noBodyCheck.status, 422);
  t.ok(Array.isArray(noBodyCheck.body.detail));
  // Found by test/hostile/fuzz.test.ts: a bulk without any body was a 500.
  const noBodyBulk = await server.send('POST', '/check/bulk', '', {});
  t.same(noBodyBulk, { ...noBodyBulk, status: 422, body: { detail: [{ loc: ['body'], msg: 'must be of type array', type: 'type_error' }] } });
});

t.test('a body over the size limit is 413 with a detail', async (t) => {
  const server = await fresh(t);
  const big = JSON.stringify({
    principal: { attributes: { blob: 'x'.repeat(1_500_000) } },
    resource: { uri: 'r' },
  });
  const response = await server.send('POST', '/check', big, JSON_TYPE);
  t.equal(response.status, 413);
  assertStringDetail(t, response.body);

  const bulk = await server.send('POST', '/check/bulk', `[${big}]`, JSON_TYPE);
  t.equal(bulk.status, 413);
  assertStringDetail(t, bulk.body);

  const policy = JSON.stringify({ name: 'big', rules: [], description: 'd'.repeat(1_500_000) });
  const policyResponse = await server.send('POST', '/admin/policies', policy, JSON_TYPE);
  t.equal(policyResponse.status, 413);
  assertStringDetail(t, policyResponse.body);

  // Just under the limit is fine (each string within the string-length limit).
  const blobs = Object.fromEntries(Array.from({ length: 15 }, (_, index) => [`blob${index}`, 'x'.repeat(60_000)]));
  const fits = JSON.stringify({ principal: { attributes: blobs }, resource: { uri: 'r' } });
  const ok = await server.send('POST', '/check', fits, JSON_TYPE);
  t.equal(ok.status, 200);

  // The server still answers afterwards.
  t.equal((await server.call('GET', '/health')).status, 200);
});

t.test('unknown routes are 404 and wrong methods 405 with Allow', async (t) => {
  const server = await fresh(t);
  for (const [method, path] of [
    ['GET', '/nope'],
    ['POST', '/nope'],
    ['GET', '/admin/nothing'],
    ['GET', '/check/bulk/extra'],
    ['POST', '/admin/policies/a/b'],
  ] as const) {
    const response = await server.call(method, path);
    t.equal(response.status, 404, `${method} ${path}`);
    assertStringDetail(t, response.body);
  }

  const cases: { method: string; path: string; allow: string[] }[] = [
    { method: 'GET', path: '/check', allow: ['POST'] },
    { method: 'PUT', path: '/check', allow: ['POST'] },
    { method: 'DELETE', path: '/check/bulk', allow: ['POST'] },
    { method: 'GET', path: '/check/bulk', allow: ['POST'] },
    { method: 'GET', path: '/check-access', allow: ['POST'] },
    { method: 'POST', path: '/health', allow: ['GET'] },
    { method: 'DELETE', path: '/admin/policies', allow: ['GET', 'POST'] },
    { method: 'POST', path: '/admin/policies/p', allow: ['GET', 'PUT', 'DELETE'] },
  ];
  for (const { method, path, allow } of cases) {
    const response = await server.call(method, path);
    t.equal(response.status, 405, `${method} ${path}`);
    assertStringDetail(t, response.body);
    const header = response.headers.allow;
    t.type(header, 'string', `${method} ${path} has an Allow header`);
    const methods = String(header).split(',').map((value) => value.trim());
    for (const expected of allow) t.ok(methods.includes(expected), `${method} ${path}: Allow lists ${expected} (${header})`);
    t.notOk(methods.includes(method), `${method} ${path}: Allow does not list ${method}`);
  }
  // With a JSON body, the answer is the same.
  const withBody = await server.call('GET', '/check', undefined, JSON_TYPE);
  t.equal(withBody.status, 405);
});

t.test('DELETE with content-type application/json and an empty body works', async (t) => {
  const server = await fresh(t);
  await server.call('POST', '/admin/policies', { name: 'p', rules: [] });
  const deleted = await server.send('DELETE', '/admin/policies/p', '', JSON_TYPE);
  t.equal(deleted.status, 200);
  t.equal(deleted.body, true);
  const missing = await server.send('DELETE', '/admin/policies/p', '', JSON_TYPE);
  t.equal(missing.status, 404);
  t.same(missing.body, { detail: 'Policy not found' });

  await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'e', attributes: { a: 1 } });
  const entity = await server.send('DELETE', '/admin/fetchers/registry/entities/e', '', JSON_TYPE);
  t.equal(entity.status, 200);
  t.equal(entity.body, true);
  // GET with the same header and no body, as some clients send on every request.
  const list = await server.send('GET', '/admin/policies', '', JSON_TYPE);
  t.equal(list.status, 200);
  t.same(list.body, []);
});

t.test('hostile and odd input never yields a 5xx or a stack trace, bulks on the front and in the pool', async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) await t.test(evaluation, (t) => hostileInput(t, evaluation));
});

/** In pool mode only the bulks, which a worker reads. */
async function hostileInput(t: Test, evaluation: 'inline' | 'pool') {
  const server = await fresh(t, { bulkCheckMaxRequests: 5, evaluation });
  const deep = '['.repeat(5000) + ']'.repeat(5000);
  const deepObject = '{"a":'.repeat(3000) + '1' + '}'.repeat(3000);
  // `clientMayRefuse`: a request the client itself may refuse to send as it is; any other failure to get an answer is the server's.
  const requests: { method: string; path: string; text?: string; headers?: Record<string, string>; clientMayRefuse?: true }[] = [
    { method: 'POST', path: '/check', text: deep, headers: JSON_TYPE },
    { method: 'POST', path: '/check', text: `{"principal":{"attributes":{"a":${deepObject}}},"resource":{"uri":"r"}}`, headers: JSON_TYPE },
    { method: 'POST', path: '/admin/policies', text: `{"name":"deep","rules":[{"name":"r","effect":"allow","actions":["a"],"principal_conditions":[{"path":"attributes.a","operator":"==","value":${deepObject}}]}]}`, headers: JSON_TYPE },
    { method: 'POST', path: '/check', text: '\u0000\u0001', headers: JSON_TYPE },
    { method: 'POST', path: '/check', text: '"\\ud800"', headers: JSON_TYPE },
    { method: 'POST', path: '/check', text: '{"principal":{"uri":"\\u0000"},"resource":{"uri":"\\ud800"}}', headers: JSON_TYPE },
    { method: 'POST', path: '/check', text: '1e999999', headers: JSON_TYPE },
    { method: 'POST', path: '/check', text: 'null', headers: JSON_TYPE },
    { method: 'POST', path: '/check/bulk', text: 'null', headers: JSON_TYPE },
    { method: 'POST', path: '/check/bulk', text: '{}', headers: JSON_TYPE },
    { method: 'POST', path: '/check/bulk', text: '[null]', headers: JSON_TYPE },
    { method: 'POST', path: '/check/bulk', text: '[[]]', headers: JSON_TYPE },
    { method: 'POST', path: '/check/bulk', text: JSON.stringify(Array(6).fill('junk')), headers: JSON_TYPE },
    { method: 'POST', path: '/admin/policies', text: 'null', headers: JSON_TYPE },
    { method: 'POST', path: '/admin/policies', text: '{"name":"x","rules":[null]}', headers: JSON_TYPE },
    { method: 'POST', path: '/admin/policies', text: '{"name":"x","rules":[{"name":"r","effect":"allow","actions":[null]}]}', headers: JSON_TYPE },
    { method: 'POST', path: '/admin/policies', text: '{"name":"x","rules":[{"name":"r","effect":"allow","actions":["a"],"principal_conditions":[{"path":"attributes..a","operator":"==","value":1}]}]}', headers: JSON_TYPE },
    { method: 'POST', path: '/admin/policies', text: '{"name":"x","rules":[{"name":"r","effect":"allow","actions":["a"],"principal_conditions":[{"path":"attributes.a","operator":"contains"}]}]}', headers: JSON_TYPE },
    { method: 'POST', path: '/admin/policies', text: `{"name":"${'n'.repeat(300)}","rules":[]}`, headers: JSON_TYPE },
    { method: 'POST', path: '/admin/policies/simple?name=x', text: '{"principal":{"attributes":{"a.b":1}},"resource":{"uri":"r"}}', headers: JSON_TYPE },
    { method: 'POST', path: '/admin/policies/simple?name=x&name=y', text: '{"principal":{"attributes":{"a":1}},"resource":{"uri":"r"}}', headers: JSON_TYPE },
    { method: 'POST', path: '/admin/policies/simple?name=', text: '{"principal":{"attributes":{"a":1}},"resource":{"uri":"r"}}', headers: JSON_TYPE },
    { method: 'GET', path: '/admin/policies/%00' },
    { method: 'PUT', path: '/admin/policies/x', text: '{"name":"x","rules":[]}', headers: { 'content-type': 'application/json; charset=latin1' } },
    { method: 'GET', path: '/admin/fetchers/registry/entities?limit=abc' },
    { method: 'GET', path: '/admin/fetchers/registry/entities?offset=-1' },
    { method: 'GET', path: '/admin/fetchers/registry/entities?limit=1e400' },
    { method: 'POST', path: '/delete-entity', text: '"just a string"', headers: JSON_TYPE },
    {
      method: 'POST',
      path: '/check',
      text: '{"principal":{"attributes":{"a":1}},"resource":{"uri":"r"}}',
      headers: { 'content-type': 'application/json', 'content-length': '3' },
      clientMayRefuse: true,
    },
  ];
  for (const { method, path, text, headers, clientMayRefuse } of evaluation === 'pool' ? requests.filter((request) => request.path === '/check/bulk') : requests) {
    // JSON-quoted, so that the control characters of a body reach the output escaped, never raw.
    const label = `${method} ${path.slice(0, 60)} ${JSON.stringify((text ?? '').slice(0, 60))}`;
    let response;
    try {
      response = text === undefined ? await server.call(method, path, undefined, headers) : await server.send(method, path, text, headers);
    } catch (error) {
      if (!clientMayRefuse) throw error;
      // undici refuses to send a body longer than its content-length: not the server's fault.
      t.equal((error as { code?: string }).code, 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH', `${label}: refused by the client`);
      continue;
    }
    t.ok(response.status >= 200 && response.status < 500, `${label}: ${response.status} ${JSON.stringify(response.body).slice(0, 200)}`);
    if (response.status >= 400) {
      t.type(response.body, 'object', label);
      t.ok(response.body !== null && 'detail' in response.body, `${label} has a detail`);
    }
    assertNoLeak(t, response.body, label);
  }
  t.equal((await server.call('GET', '/health')).status, 200, 'still alive');
}

// Errors the router raises before any route (bad percent-encoding, over-long parameters) keep the {detail} shape.
t.test('router-level errors: bad percent-encoding and over-long path parameters', async (t) => {
  const server = await fresh(t);
  for (const [path, status] of [
    ['/admin/policies/%E0%A4%A', 400],
    ['/nope/%E0%A4%A', 400],
    ['/admin/fetchers/registry/entities/%ZZ', 400],
    ['/admin/policies/' + 'x'.repeat(10_000), 414],
  ] as const) {
    const response = await server.call('GET', path);
    t.equal(response.status, status, path.slice(0, 60));
    assertNoLeak(t, response.body, path.slice(0, 60));
    t.ok(response.body !== null && typeof response.body === 'object', 'a JSON body');
    t.strictSame(Object.keys(response.body ?? {}), ['detail'], `${path.slice(0, 60)}: {detail}`);
  }
  // A percent-encoded URI that decodes fine is an ordinary lookup.
  const encoded = await server.call('GET', '/admin/policies/%E0%A4%A4');
  t.equal(encoded.status, 404);
  t.same(encoded.body, { detail: 'Policy not found' });
});

t.test('GET /health', async (t) => {
  const server = await fresh(t);
  const health = await server.call('GET', '/health');
  t.equal(health.status, 200);
  t.strictSame(health.body, { status: 'ok', revision: 0 });
  t.equal(health.headers['verdict-revision'], '0');
});

t.test('the snapshot revision is visible on checks and admin writes, and moves with every policy write', async (t) => {
  const server = await fresh(t);
  const policy = { name: 'p', rules: [{ name: 'r', effect: 'allow', actions: ['a'] }] };
  const created = await server.call('POST', '/admin/policies', policy);
  t.equal(created.headers['verdict-revision'], '1');
  const checked = await server.call('POST', '/check', { principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } }, action: 'a' });
  t.equal(checked.headers['verdict-revision'], '1');
  t.equal((await server.call('PUT', '/admin/policies/p', policy)).headers['verdict-revision'], '2');
  t.equal((await server.call('DELETE', '/admin/policies/p')).headers['verdict-revision'], '3');
  t.same((await server.call('GET', '/health')).body, { status: 'ok', revision: 3 });
});

t.test('GET /docs serves HTML and /docs/json the OpenAPI document', async (t) => {
  const server = await fresh(t);
  // /docs may redirect to a trailing-slash path; follow at most a few hops.
  let path = '/docs';
  let docs = await server.call('GET', path);
  for (let hop = 0; hop < 3 && docs.status >= 300 && docs.status < 400; hop++) {
    const location = String(docs.headers.location);
    path = location.startsWith('/') ? location : `/docs/${location.replace(/^\.\//, '')}`;
    docs = await server.call('GET', path);
  }
  t.equal(docs.status, 200, `GET ${path}`);
  t.match(docs.headers['content-type'], /^text\/html/);
  t.match(String(docs.body), /<html/i);

  const openapi = await server.call('GET', '/docs/json');
  t.equal(openapi.status, 200);
  t.match(openapi.headers['content-type'], /^application\/json/);
  const document = openapi.body;
  t.match(document.openapi, /^3\./);
  const paths = Object.keys(document.paths);
  for (const expected of [
    '/check',
    '/check/bulk',
    '/check-access',
    '/health',
    '/admin/policies',
    '/admin/policies/simple',
    '/admin/policies/{name}',
    '/admin/fetchers/registry/entities',
    '/admin/fetchers/registry/entities/$count',
    '/admin/fetchers/registry/entities/{uri}',
    '/register-entity',
    '/update-entity',
    '/delete-entity',
    '/create-policy',
  ]) {
    t.ok(paths.includes(expected), `OpenAPI lists ${expected}`);
  }

  const schemes = document.components?.securitySchemes ?? {};
  const schemeNames = Object.entries(schemes)
    .filter(([, scheme]: [string, any]) => scheme.type === 'apiKey' && scheme.in === 'header' && String(scheme.name).toLowerCase() === 'way-api-key')
    .map(([name]) => name);
  t.equal(schemeNames.length, 1, 'one apiKey scheme on the WAY-API-KEY header');
  const scheme = schemeNames[0];
  const requiresKey = (operation: any) =>
    Array.isArray(operation?.security) && operation.security.some((requirement: Record<string, unknown>) => scheme !== undefined && scheme in requirement);

  for (const [path, item] of Object.entries(document.paths) as [string, Record<string, any>][]) {
    const protectedPath = path.startsWith('/admin') || ['/register-entity', '/update-entity', '/delete-entity', '/create-policy'].includes(path);
    for (const method of ['get', 'post', 'put', 'delete', 'patch']) {
      const operation = item[method];
      if (operation === undefined) continue;
      if (protectedPath) t.ok(requiresKey(operation), `${method.toUpperCase()} ${path} declares the WAY-API-KEY security`);
      else t.notOk(requiresKey(operation), `${method.toUpperCase()} ${path} is public`);
    }
  }
});
