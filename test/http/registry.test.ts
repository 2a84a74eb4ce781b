import t, { type Test } from 'tap';
import http from 'node:http';
import { clockPast, startServer, type TestServer } from '../helpers/server.js';
import { MAX_ENTITY_URI_LENGTH } from '../../src/schemas/entity.js';
import { MAX_STORED_VALUE_DEPTH } from '../../src/engine/value-limits.js';
import { codeSpans, readDocument } from '../helpers/markdown.js';

const BASE = '/admin/fetchers/registry/entities';
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

const path = (uri: string) => `${BASE}/${encodeURIComponent(uri)}`;

type Tap = Test;

async function server(t: Tap, overrides = {}): Promise<TestServer> {
  const s = await startServer(overrides);
  t.teardown(s.close);
  return s;
}

/** Asserts the registry entity shape exactly and returns attributes as a key → value object. */
function assertEntityShape(t: Tap, entity: any): Record<string, unknown> {
  t.same(Object.keys(entity).sort(), ['attributes', 'registered_at', 'type', 'uri'], 'entity has exactly its four fields');
  t.type(entity.uri, 'string');
  t.ok(entity.type === null || entity.type === 'principal' || entity.type === 'resource', 'type is principal/resource/null');
  t.match(entity.registered_at, ISO_UTC, 'registered_at is ISO-8601 UTC');
  t.ok(Array.isArray(entity.attributes) && entity.attributes.length > 0, 'attributes is a list, never empty');
  const values: Record<string, unknown> = {};
  for (const attribute of entity.attributes) {
    t.same(Object.keys(attribute).sort(), ['key', 'registered_at', 'updated_at', 'value'], 'attribute has exactly its four fields');
    t.type(attribute.key, 'string');
    t.match(attribute.updated_at, ISO_UTC, 'updated_at is ISO-8601 UTC');
    t.match(attribute.registered_at, ISO_UTC, 'attribute registered_at is ISO-8601 UTC');
    t.notOk(Number.isNaN(Date.parse(attribute.updated_at)));
    values[attribute.key] = attribute.value;
  }
  return values;
}

/** GET with the path sent exactly as given (no URL normalization of dot segments). */
function rawGet(s: TestServer, rawPath: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(s.url, { path: rawPath }, (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

async function register(s: TestServer, body: unknown) {
  const response = await s.call('POST', BASE, body);
  if (response.status !== 200) throw new Error(`registration failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

t.test('register with uri and type principal, attributes as object', async (t) => {
  const s = await server(t);
  const before = Date.now();
  const response = await s.call('POST', BASE, { uri: 'user:alice', type: 'principal', attributes: { department: 'it', level: 3 } });
  const after = Date.now();
  t.equal(response.status, 200);
  t.match(String(response.headers['content-type']), /^application\/json/);
  const values = assertEntityShape(t, response.body);
  t.equal(response.body.uri, 'user:alice');
  t.equal(response.body.type, 'principal');
  t.same(values, { department: 'it', level: 3 });
  t.same(response.body.attributes.map((a: any) => a.key), ['department', 'level'], 'attributes in the order sent');
  const registered = Date.parse(response.body.registered_at);
  t.ok(registered >= before - 1000 && registered <= after + 1000, 'registered_at is now');
  t.equal(response.body.attributes.length, 2);
  for (const attribute of response.body.attributes) {
    t.equal(attribute.registered_at, response.body.registered_at, 'a new attribute is registered with the entity');
    t.equal(attribute.updated_at, response.body.registered_at, 'a new attribute was updated when registered');
  }
  const fetched = await s.call('GET', path('user:alice'));
  t.equal(fetched.status, 200);
  t.same(fetched.body, response.body, 'GET returns what POST returned');
});

t.test('register without uri generates a UUID; type resource; attributes as a list', async (t) => {
  const s = await server(t);
  const response = await s.call('POST', BASE, {
    type: 'resource',
    attributes: [
      { key: 'kind', value: 'laptop' },
      { key: 'serial', value: 42 },
    ],
  });
  t.equal(response.status, 200);
  const values = assertEntityShape(t, response.body);
  t.match(response.body.uri, UUID, 'uri is a UUID');
  t.equal(response.body.type, 'resource');
  t.same(values, { kind: 'laptop', serial: 42 });

  const second = await s.call('POST', BASE, { attributes: { a: 1 } });
  t.equal(second.status, 200);
  t.match(second.body.uri, UUID);
  t.not(second.body.uri, response.body.uri, 'each generated uri is new');

  const nullUri = await s.call('POST', BASE, { uri: null, type: 'principal', attributes: { a: 1 } });
  t.equal(nullUri.status, 200, 'explicit null uri counts as absent');
  t.match(nullUri.body.uri, UUID);

  const fetched = await s.call('GET', path(response.body.uri));
  t.equal(fetched.status, 200);
  t.same(fetched.body, response.body);
});

t.test('registration validation', async (t) => {
  const s = await server(t);
  for (const [label, body] of [
    ['empty attribute object', { uri: 'e1', type: 'principal', attributes: {} }],
    ['empty attribute list', { uri: 'e2', type: 'principal', attributes: [] }],
    ['missing attributes', { uri: 'e3', type: 'principal' }],
    ['null attributes', { uri: 'e4', type: 'principal', attributes: null }],
    ['attributes a string', { uri: 'e5', attributes: 'department=it' }],
    ['list item without value', { uri: 'e6', attributes: [{ key: 'a' }] }],
    ['list item without key', { uri: 'e7', attributes: [{ value: 1 }] }],
    ['unknown type', { uri: 'e8', type: 'group', attributes: { a: 1 } }],
    ['uri a number', { uri: 42, attributes: { a: 1 } }],
    ['body a list', [{ uri: 'e9', attributes: { a: 1 } }]],
  ] as const) {
    const response = await s.call('POST', BASE, body);
    t.equal(response.status, 422, `${label} → 422`);
    t.ok(Array.isArray(response.body?.detail) && response.body.detail.length > 0, `${label}: detail is a list of issues`);
    for (const issue of response.body?.detail ?? []) {
      t.ok(Array.isArray(issue.loc) && typeof issue.msg === 'string' && typeof issue.type === 'string', `${label}: issue shape`);
    }
  }
  const emptyObject = await s.call('POST', BASE, { uri: 'e1', attributes: {} });
  t.equal(emptyObject.body.detail[0].loc[0], 'body');
  t.ok(emptyObject.body.detail[0].loc.includes('attributes'), 'loc names attributes');

  const malformed = await s.send('POST', BASE, '{"uri": "x", "attributes": {', { 'content-type': 'application/json' });
  t.equal(malformed.status, 400, 'malformed JSON → 400');
  t.type(malformed.body.detail, 'string');

  const count = await s.call('GET', `${BASE}/$count`);
  t.equal(count.body, 0, 'nothing was registered by the refused calls');
});

t.test('duplicate uri → 409, first entity kept', async (t) => {
  const s = await server(t);
  const first = await register(s, { uri: 'dup', type: 'principal', attributes: { a: 1 } });
  const second = await s.call('POST', BASE, { uri: 'dup', type: 'resource', attributes: { b: 2 } });
  t.equal(second.status, 409);
  t.type(second.body.detail, 'string');
  const fetched = await s.call('GET', path('dup'));
  t.same(fetched.body, first, 'the first registration is untouched');
  t.equal((await s.call('GET', `${BASE}/$count`)).body, 1);
});

t.test('values keep their JSON types', async (t) => {
  const s = await server(t);
  const attributes = {
    string: 'hello',
    numericString: '123',
    jsonLookingString: '{"a":1}',
    trueString: 'true',
    integer: 123,
    negative: -7,
    float: 1.5,
    zero: 0,
    boolTrue: true,
    boolFalse: false,
    nothing: null,
    list: [1, 'two', false, null, { three: 3 }],
    emptyList: [],
    nested: { city: 'Oslo', geo: { lat: 59.9, lon: 10.7 }, tags: ['a', 'b'] },
    emptyObject: {},
    emptyString: '',
    unicode: 'Zürich ☃ 東京',
  };
  const created = await register(s, { uri: 'typed', type: 'resource', attributes });
  t.same(assertEntityShape(t, created), attributes);
  t.strictSame(assertEntityShape(t, created), attributes);
  const fetched = await s.call('GET', path('typed'));
  t.strictSame(assertEntityShape(t, fetched.body), attributes);
  t.equal(JSON.stringify(fetched.body), JSON.stringify(created), 'GET is the same JSON, key order included');
  const values = assertEntityShape(t, fetched.body);
  t.equal(typeof values.numericString, 'string', '"123" stays a string');
  t.equal(typeof values.integer, 'number');
  t.equal(values.nothing, null);
  t.equal(typeof values.jsonLookingString, 'string', 'a JSON-looking string is not parsed');

  const listed = await s.call('GET', BASE);
  t.strictSame(listed.body, [created]);

  // List form keeps types too
  const fromList = await register(s, { uri: 'typed-list', attributes: Object.entries(attributes).map(([key, value]) => ({ key, value })) });
  t.strictSame(assertEntityShape(t, fromList), attributes);
});

t.test('GET by uri with percent-encoded characters', async (t) => {
  const s = await server(t);
  const uris = [
    'a/b',
    'http://example.com/users/42',
    'urn:org:dept:it',
    'has space',
    'question?mark=1&x=2',
    'hash#fragment',
    'percent%20literal',
    'plus+sign',
    'ünïcödé/東京/☃',
    'semi;colon,comma',
    'trailing/',
    '/leading',
    "quote'\"`",
    'brackets[]{}<>|\\^',
    'tab\tnewline',
    '$count-like',
    '$count',
    '*',
    'a'.repeat(500),
  ];
  for (const uri of uris) {
    const created = await s.call('POST', BASE, { uri, type: 'resource', attributes: { which: uri } });
    t.equal(created.status, 200, `register ${JSON.stringify(uri)}`);
    t.equal(created.body.uri, uri);
  }
  for (const uri of uris) {
    const fetched = await s.call('GET', path(uri));
    t.equal(fetched.status, 200, `GET ${JSON.stringify(uri)} → 200`);
    t.equal(fetched.body?.uri, uri, `GET ${JSON.stringify(uri)} → the right entity`);
    t.same(fetched.body?.attributes?.map((a: any) => a.value), [uri]);
  }
  // "." and ".." are dot segments to URL-normalizing clients (even as %2E); over a raw request path they work
  for (const uri of ['.', '..']) {
    t.equal((await s.call('POST', BASE, { uri, attributes: { which: uri } })).status, 200);
    for (const encoded of [uri, uri.replace(/\./g, '%2E')]) {
      const { status, body } = await rawGet(s, `${BASE}/${encoded}`);
      t.equal(status, 200, `raw GET ${encoded}`);
      t.equal(JSON.parse(body).uri, uri);
    }
  }
  // a "/" not percent-encoded is a different path: not this entity
  const raw = await s.call('GET', `${BASE}/a/b`);
  t.equal(raw.status, 404);

  // update and delete by encoded uri too
  const updated = await s.call('PUT', path('a/b'), { uri: 'a/b', attributes: { extra: true } });
  t.equal(updated.status, 200, 'PUT with %2F');
  t.same(assertEntityShape(t, updated.body), { which: 'a/b', extra: true });
  const deleted = await s.call('DELETE', path('hash#fragment'));
  t.equal(deleted.status, 200, 'DELETE with %23');
  t.equal(deleted.body, true);
  t.equal((await s.call('GET', path('hash#fragment'))).status, 404);

  // checks can name them
  await s.call('POST', '/admin/policies', {
    name: 'p',
    rules: [
      {
        name: 'r',
        effect: 'allow',
        principal_conditions: [],
        resource_conditions: [{ path: 'attributes.which', operator: '==', value: 'ünïcödé/東京/☃' }],
        actions: ['read'],
      },
    ],
  });
  const check = await s.call('POST', '/check', { principal: { attributes: { a: 1 } }, resource: { uri: 'ünïcödé/東京/☃' }, action: 'read' });
  t.same(check.body, { allowed: true, reason: 'Rule r allowed the action in policy p' });
});

t.test('GET, PUT and DELETE of an unknown uri → 404 Entity not found', async (t) => {
  const s = await server(t);
  await register(s, { uri: 'known', attributes: { a: 1 } });
  const get = await s.call('GET', path('unknown'));
  t.equal(get.status, 404);
  t.same(get.body, { detail: 'Entity not found' });
  const put = await s.call('PUT', path('unknown'), { uri: 'unknown', attributes: { a: 1 } });
  t.equal(put.status, 404);
  t.same(put.body, { detail: 'Entity not found' });
  const del = await s.call('DELETE', path('unknown'));
  t.equal(del.status, 404);
  t.same(del.body, { detail: 'Entity not found' });
  t.equal((await s.call('GET', `${BASE}/$count`)).body, 1, 'PUT of an unknown uri created nothing');
  const encodedSlash = await s.call('GET', path('known/extra'));
  t.equal(encodedSlash.status, 404);
  t.same(encodedSlash.body, { detail: 'Entity not found' });
});

t.test('PUT override=false upserts keys; others kept; registered_at kept', async (t) => {
  const s = await server(t);
  const created = await register(s, { uri: 'u1', type: 'principal', attributes: { department: 'it', level: 1, city: 'Oslo' } });
  await clockPast(created.registered_at);
  let firstRole: any;
  for (const query of ['', '?override=false']) {
    const response = await s.call('PUT', path('u1') + query, { uri: 'u1', attributes: { level: 2, role: 'admin' } });
    t.equal(response.status, 200, `PUT${query}`);
    const values = assertEntityShape(t, response.body);
    t.strictSame(values, { department: 'it', level: 2, city: 'Oslo', role: 'admin' });
    t.equal(response.body.uri, 'u1');
    t.equal(response.body.type, 'principal', 'type kept');
    t.equal(response.body.registered_at, created.registered_at, 'entity registered_at kept');
    const byKey = Object.fromEntries(response.body.attributes.map((a: any) => [a.key, a]));
    const createdByKey = Object.fromEntries(created.attributes.map((a: any) => [a.key, a]));
    t.same(byKey.department, createdByKey.department, 'an untouched attribute is unchanged, timestamps included');
    t.same(byKey.city, createdByKey.city);
    t.equal(byKey.level.registered_at, createdByKey.level.registered_at, 'an upserted key keeps registered_at');
    t.ok(Date.parse(byKey.level.updated_at) > Date.parse(createdByKey.level.updated_at), 'an upserted key gets a new updated_at');
    t.ok(Date.parse(byKey.role.registered_at) > Date.parse(created.registered_at), 'a new key is registered after the entity');
    if (query === '') {
      t.equal(byKey.role.updated_at, byKey.role.registered_at, 'a new key: updated_at = registered_at');
      firstRole = byKey.role;
    } else {
      t.equal(byKey.role.registered_at, firstRole.registered_at, 'upserting the same key again keeps its registered_at');
      t.ok(Date.parse(byKey.role.updated_at) > Date.parse(firstRole.updated_at), 'and advances updated_at');
    }
    const fetched = await s.call('GET', path('u1'));
    t.same(fetched.body, response.body, 'GET sees the update');
    await clockPast(byKey.role.updated_at);
  }
  // list form in a PUT
  const listForm = await s.call('PUT', path('u1'), { uri: 'u1', attributes: [{ key: 'city', value: 'Bergen' }] });
  t.equal(listForm.status, 200);
  t.strictSame(assertEntityShape(t, listForm.body), { department: 'it', level: 2, city: 'Bergen', role: 'admin' });
});

t.test('PUT override=true replaces every attribute', async (t) => {
  const s = await server(t);
  const created = await register(s, { uri: 'u2', type: 'resource', attributes: { a: 1, b: 2, c: 3 } });
  await clockPast(created.registered_at);
  const response = await s.call('PUT', path('u2') + '?override=true', { uri: 'u2', attributes: { b: 20, d: [4] } });
  t.equal(response.status, 200);
  t.strictSame(assertEntityShape(t, response.body), { b: 20, d: [4] });
  t.equal(response.body.registered_at, created.registered_at, 'the entity keeps registered_at');
  t.equal(response.body.type, 'resource');
  t.same((await s.call('GET', path('u2'))).body, response.body);
});

t.test('PUT validation: URI mismatch, empty attributes, bad override', async (t) => {
  const s = await server(t);
  const created = await register(s, { uri: 'u3', attributes: { a: 1 } });
  const mismatch = await s.call('PUT', path('u3'), { uri: 'other', attributes: { a: 2 } });
  t.equal(mismatch.status, 400);
  t.same(mismatch.body, { detail: 'URI mismatch' });
  const mismatchUnknown = await s.call('PUT', path('unknown'), { uri: 'u3', attributes: { a: 2 } });
  t.equal(mismatchUnknown.status, 400, 'mismatch is reported even when the path names no entity');
  t.same(mismatchUnknown.body, { detail: 'URI mismatch' });
  const empty = await s.call('PUT', path('u3'), { uri: 'u3', attributes: {} });
  t.equal(empty.status, 422);
  const noUri = await s.call('PUT', path('u3'), { attributes: { a: 2 } });
  t.equal(noUri.status, 422, 'PUT body without uri → 422');
  const badOverride = await s.call('PUT', path('u3') + '?override=maybe', { uri: 'u3', attributes: { a: 2 } });
  t.equal(badOverride.status, 422, 'override must be a boolean');
  t.same((await s.call('GET', path('u3'))).body, created, 'refused PUTs change nothing');
});

t.test('DELETE returns true, then 404', async (t) => {
  const s = await server(t);
  await register(s, { uri: 'gone', attributes: { a: 1 } });
  await register(s, { uri: 'stays', attributes: { a: 1 } });
  const first = await s.call('DELETE', path('gone'));
  t.equal(first.status, 200);
  t.equal(first.body, true);
  const again = await s.call('DELETE', path('gone'));
  t.equal(again.status, 404);
  t.same(again.body, { detail: 'Entity not found' });
  t.equal((await s.call('GET', path('gone'))).status, 404);
  t.equal((await s.call('GET', path('stays'))).status, 200);
  t.equal((await s.call('GET', `${BASE}/$count`)).body, 1);
  // a DELETE that carries a JSON content type and no body (some clients do) still works
  const withHeader = await s.send('DELETE', path('stays'), '', { 'content-type': 'application/json' });
  t.equal(withHeader.status, 200);
  t.equal(withHeader.body, true);
  // re-registering a deleted uri works
  t.equal((await s.call('POST', BASE, { uri: 'gone', attributes: { b: 2 } })).status, 200);
});

t.test('list: pagination, defaults, bounds, registration order; $count', async (t) => {
  const s = await server(t);
  const empty = await s.call('GET', BASE);
  t.equal(empty.status, 200);
  t.same(empty.body, []);
  const emptyCount = await s.send('GET', `${BASE}/$count`, '');
  t.equal(emptyCount.status, 200);
  t.equal(emptyCount.body, 0);

  // registration order differs from alphabetical order on purpose
  const uris = Array.from({ length: 25 }, (_, i) => `e-${String((i * 7) % 25).padStart(2, '0')}`);
  for (const uri of uris) await register(s, { uri, type: 'resource', attributes: { n: uri } });

  const count = await s.call('GET', `${BASE}/$count`);
  t.equal(count.status, 200);
  t.equal(count.body, 25);
  t.match(String(count.headers['content-type']), /^application\/json/);
  // a bare integer: raw body "25"
  const { request } = await import('undici');
  const raw = await request(`${s.url}${BASE}/$count`);
  t.equal(await raw.body.text(), '25', '$count is a bare integer');

  const defaults = await s.call('GET', BASE);
  t.equal(defaults.status, 200);
  t.same(defaults.body.map((e: any) => e.uri), uris.slice(0, 10), 'default page: offset 0, limit 10, in registration order');
  for (const entity of defaults.body) assertEntityShape(t, entity);

  const page = await s.call('GET', `${BASE}?offset=5&limit=7`);
  t.same(page.body.map((e: any) => e.uri), uris.slice(5, 12));
  const onlyOffset = await s.call('GET', `${BASE}?offset=20`);
  t.same(onlyOffset.body.map((e: any) => e.uri), uris.slice(20, 25));
  const onlyLimit = await s.call('GET', `${BASE}?limit=3`);
  t.same(onlyLimit.body.map((e: any) => e.uri), uris.slice(0, 3));
  const all = await s.call('GET', `${BASE}?limit=1000`);
  t.equal(all.status, 200);
  t.same(all.body.map((e: any) => e.uri), uris);
  const beyond = await s.call('GET', `${BASE}?offset=25`);
  t.equal(beyond.status, 200);
  t.same(beyond.body, []);
  const farBeyond = await s.call('GET', `${BASE}?offset=100000`);
  t.same(farBeyond.body, []);
  const zero = await s.call('GET', `${BASE}?limit=0`);
  t.equal(zero.status, 200, 'limit=0 is allowed');
  t.same(zero.body, []);

  for (const query of ['limit=1001', 'limit=-1', 'offset=-1', 'limit=1.5', 'offset=2.5', 'limit=abc', 'offset=abc', 'limit=', 'limit=1e9']) {
    const response = await s.call('GET', `${BASE}?${query}`);
    t.equal(response.status, 422, `${query} → 422`);
    t.ok(Array.isArray(response.body?.detail), `${query}: detail is a list`);
    t.equal(response.body?.detail?.[0]?.loc?.[0], 'query', `${query}: loc starts with query`);
  }

  // deleting one keeps the others' order
  await s.call('DELETE', path(uris[3]!));
  const afterDelete = await s.call('GET', `${BASE}?limit=5`);
  t.same(afterDelete.body.map((e: any) => e.uri), [uris[0], uris[1], uris[2], uris[4], uris[5]]);
  // updating one keeps its place
  await s.call('PUT', path(uris[0]!), { uri: uris[0], attributes: { extra: 1 } });
  const afterUpdate = await s.call('GET', `${BASE}?limit=2`);
  t.same(afterUpdate.body.map((e: any) => e.uri), [uris[0], uris[1]]);
  t.equal((await s.call('GET', `${BASE}/$count`)).body, 24);
});

t.test('registered attributes are used by /check; updates and deletes are seen by the next check', async (t) => {
  const s = await server(t);
  const policy = await s.call('POST', '/admin/policies', {
    name: 'it',
    rules: [
      {
        name: 'admins',
        effect: 'allow',
        principal_conditions: [
          { path: 'attributes.department', operator: '==', value: 'it' },
          { path: 'attributes.clearance', operator: '>=', value: 3 },
        ],
        resource_conditions: [{ path: 'attributes.kind', operator: '==', value: 'laptop' }],
        actions: ['administer'],
      },
    ],
    default_effect: 'deny',
  });
  t.equal(policy.status, 200);
  await register(s, { uri: 'user:bob', type: 'principal', attributes: { department: 'it', clearance: 5 } });
  await register(s, { uri: 'asset:1', type: 'resource', attributes: [{ key: 'kind', value: 'laptop' }] });

  const allowed = { allowed: true, reason: 'Rule admins allowed the action in policy it' };
  const denied = { allowed: false, reason: 'Action denied by default effect' };
  const nested = { principal: { uri: 'user:bob' }, resource: { uri: 'asset:1' }, action: 'administer' };
  const flat = { principal_uri: 'user:bob', resource_uri: 'asset:1', action: 'administer' };

  t.same((await s.call('POST', '/check', nested)).body, allowed, 'uri-only nested check uses registered attributes');
  t.same((await s.call('POST', '/check', flat)).body, allowed, 'uri-only flat check uses registered attributes');
  t.equal((await s.call('POST', '/check-access', nested)).body, true);

  // an upsert lowering the clearance is seen by the next check
  t.equal((await s.call('PUT', path('user:bob'), { uri: 'user:bob', attributes: { clearance: 2 } })).status, 200);
  t.same((await s.call('POST', '/check', nested)).body, denied, 'update is seen');
  t.equal((await s.call('PUT', path('user:bob'), { uri: 'user:bob', attributes: { clearance: 3 } })).status, 200);
  t.same((await s.call('POST', '/check', nested)).body, allowed, 'second update is seen');

  // override removes department
  t.equal((await s.call('PUT', path('user:bob') + '?override=true', { uri: 'user:bob', attributes: { clearance: 9 } })).status, 200);
  t.same((await s.call('POST', '/check', nested)).body, denied, 'override dropped department');
  t.same(
    (await s.call('POST', '/check', { principal: { uri: 'user:bob', attributes: { department: 'it' } }, resource: { uri: 'asset:1' }, action: 'administer' })).body,
    allowed,
    'supplied attributes merge with registered ones',
  );

  // resource deleted: its attributes are gone, an unknown uri is not an error
  t.equal((await s.call('DELETE', path('asset:1'))).body, true);
  const afterDelete = await s.call('POST', '/check', { principal: { uri: 'user:bob', attributes: { department: 'it' } }, resource: { uri: 'asset:1' }, action: 'administer' });
  t.equal(afterDelete.status, 200);
  t.same(afterDelete.body, denied, 'delete is seen');
  // re-registering brings it back
  await register(s, { uri: 'asset:1', type: 'resource', attributes: { kind: 'laptop' } });
  t.same(
    (await s.call('POST', '/check', { principal: { uri: 'user:bob', attributes: { department: 'it' } }, resource: { uri: 'asset:1' }, action: 'administer' })).body,
    allowed,
  );

  // conflict between registered and supplied value
  const conflict = await s.call('POST', '/check', { principal: { uri: 'user:bob', attributes: { clearance: 1 } }, resource: { uri: 'asset:1' }, action: 'administer' });
  t.equal(conflict.status, 400);
  t.same(conflict.body, { detail: "For entity 'user:bob', attribute 'clearance' has more than one value" });
  // "9" (a string) is not 9 (the registered number)
  const stringVsNumber = await s.call('POST', '/check', { principal: { uri: 'user:bob', attributes: { clearance: '9' } }, resource: { uri: 'asset:1' }, action: 'administer' });
  t.equal(stringVsNumber.status, 400, 'a string does not equal the registered number');
});

t.test('registry switched off: routes 404; checks by uri get no attributes', async (t) => {
  const s = await server(t, { registryEnabled: false });
  for (const [method, p, body] of [
    ['GET', BASE, undefined],
    ['GET', `${BASE}/$count`, undefined],
    ['POST', BASE, { uri: 'x', attributes: { a: 1 } }],
    ['GET', path('x'), undefined],
    ['PUT', path('x'), { uri: 'x', attributes: { a: 1 } }],
    ['DELETE', path('x'), undefined],
  ] as const) {
    const response = await s.call(method, p, body);
    t.equal(response.status, 404, `${method} ${p} → 404`);
    t.type(response.body?.detail, 'string');
  }
  await s.call('POST', '/admin/policies', {
    name: 'p',
    rules: [{ name: 'r', effect: 'allow', principal_conditions: [], resource_conditions: [], actions: ['read'] }],
    default_effect: 'deny',
  });
  // a uri-only check still decides (no attributes, no error)
  const check = await s.call('POST', '/check', { principal: { uri: 'user:alice' }, resource: { uri: 'doc:1' }, action: 'read' });
  t.equal(check.status, 200);
  t.same(check.body, { allowed: true, reason: 'Rule r allowed the action in policy p' });

  // the same data dir with the registry on: still works, and entities registered there are ignored when off
  const on = await startServer({ dataDir: s.dataDir, registryEnabled: true });
  await on.call('POST', BASE, { uri: 'user:alice', attributes: { department: 'hr' } });
  await on.call('POST', '/admin/policies', {
    name: 'q',
    rules: [{ name: 'deny-hr', effect: 'deny', principal_conditions: [{ path: 'attributes.department', operator: '==', value: 'hr' }], resource_conditions: [], actions: ['read'] }],
  });
  t.same((await on.call('POST', '/check', { principal: { uri: 'user:alice' }, resource: { uri: 'doc:1' }, action: 'read' })).body, {
    allowed: false,
    reason: 'Rule deny-hr denied the action in policy q',
  });
  await on.close();
  const offAgain = await startServer({ dataDir: s.dataDir, registryEnabled: false });
  t.teardown(offAgain.close);
  t.same((await offAgain.call('POST', '/check', { principal: { uri: 'user:alice' }, resource: { uri: 'doc:1' }, action: 'read' })).body, {
    allowed: true,
    reason: 'Rule r allowed the action in policy p',
  }, 'registered attributes are not used while the registry is off');
});

t.test('extreme inputs get client errors, never a 5xx', async (t) => {
  const s = await server(t);
  await register(s, { uri: 'one', attributes: { a: 1 } });
  for (const offset of ['1e20', '99999999999999999999999', '9007199254740993']) {
    const response = await s.call('GET', `${BASE}?offset=${offset}`);
    t.equal(response.status, 200, `offset=${offset} → 200`);
    t.same(response.body, [], `offset=${offset}: past the end`);
  }

  const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
  const json = { 'content-type': 'application/json' };
  const ok = await s.send('POST', BASE, `{"uri":"deep-ok","attributes":{"a":${nested(MAX_STORED_VALUE_DEPTH)}}}`, json);
  t.equal(ok.status, 200, `${MAX_STORED_VALUE_DEPTH} levels of nesting are stored`);
  const fetched = await s.send('GET', path('deep-ok'), '');
  t.equal(JSON.stringify(fetched.body.attributes[0].value), nested(MAX_STORED_VALUE_DEPTH), 'and read back');
  for (const depth of [MAX_STORED_VALUE_DEPTH + 1, 5000, 100000]) {
    const text = `{"uri":"deep-${depth}","attributes":{"a":${nested(depth)}}}`;
    for (const [method, p, body] of [
      ['POST', BASE, text],
      ['POST', '/register-entity', text],
      ['PUT', path('one'), `{"uri":"one","attributes":{"a":${nested(depth)}}}`],
      ['POST', '/update-entity', `{"uri":"one","attributes":[{"key":"a","value":${nested(depth)}}]}`],
    ] as const) {
      const response = await s.send(method, p, body, json);
      t.ok(response.status >= 400 && response.status < 500, `${method} ${p} with ${depth} levels → 4xx (${response.status})`);
      t.ok(response.body?.detail !== undefined, 'an error body');
    }
  }
  t.same((await s.call('GET', path('one'))).body.attributes.map((a: any) => a.value), [1], 'nothing changed');
  t.equal((await s.call('GET', `${BASE}/$count`)).body, 2);
});

t.test('badly percent-encoded uri paths → 400 {detail}', async (t) => {
  const s = await server(t);
  for (const bad of ['%E0%A4%A', '%ZZ', '%']) {
    const { status, body } = await rawGet(s, `${BASE}/${bad}`);
    t.equal(status, 400, `${bad} → 400`);
    t.same(Object.keys(JSON.parse(body)), ['detail'], `${bad}: body is {detail}`);
  }
});

t.test('uris up to the length limit round-trip through the path, longer ones are refused at registration', async (t) => {
  const s = await server(t);
  // A three-byte character percent-encodes to nine characters: the worst case for the path.
  const longest = '\u20ac'.repeat(MAX_ENTITY_URI_LENGTH);
  t.equal(longest.length, MAX_ENTITY_URI_LENGTH);
  t.equal((await s.call('POST', BASE, { uri: longest, attributes: { a: 1 } })).status, 200);
  const fetched = await s.call('GET', path(longest));
  t.equal(fetched.status, 200);
  t.equal(fetched.body.uri, longest);
  const tooLong = await s.call('POST', BASE, { uri: 'x'.repeat(MAX_ENTITY_URI_LENGTH + 1), attributes: { a: 1 } });
  t.equal(tooLong.status, 422);
  t.same(tooLong.body.detail[0].loc, ['body', 'uri']);
});

t.test('wrong methods on registry paths → 405 with Allow', async (t) => {
  const s = await server(t);
  for (const [method, p, allows] of [
    ['PATCH', path('x'), ['GET', 'PUT', 'DELETE']],
    ['POST', path('x'), ['GET', 'PUT', 'DELETE']],
    ['DELETE', BASE, ['GET', 'POST']],
    ['PUT', BASE, ['GET', 'POST']],
    ['POST', `${BASE}/$count`, ['GET']],
  ] as const) {
    const response = await s.call(method, p, method === 'DELETE' ? undefined : { uri: 'x', attributes: { a: 1 } });
    t.equal(response.status, 405, `${method} ${p} → 405`);
    t.type(response.body?.detail, 'string');
    const allow = String(response.headers.allow ?? '').split(/,\s*/);
    for (const m of allows) t.ok(allow.includes(m), `${method} ${p}: Allow includes ${m}`);
  }
});

t.test("the README's uri with '/': found percent-encoded as it says, 404 as it is", async (t) => {
  const readme = readDocument('README.md');
  const paragraph = readme.slice(readme.indexOf('A uri in a registry path is one path segment')).split('\n\n')[0]!;
  const [, , , uri, encoded, raw] = codeSpans(paragraph);
  const s = await server(t);
  t.equal((await s.call('POST', BASE, { uri, type: 'resource', attributes: { kind: 'report' } })).status, 200);
  t.equal(encoded, path(uri!), 'the example is the uri percent-encoded');
  const found = await s.call('GET', encoded!);
  t.same([found.status, found.body.uri], [200, uri]);
  t.equal((await s.call('GET', raw!.replace('...', '/admin/fetchers/registry'))).status, 404);
});
