import t, { type Test } from 'tap';
import { clockPast, startServer, type TestServer } from '../helpers/server.js';

const REGISTRY = '/admin/fetchers/registry/entities';
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const entityPath = (uri: string) => `${REGISTRY}/${encodeURIComponent(uri)}`;

async function server(t: Test, overrides = {}): Promise<TestServer> {
  const s = await startServer(overrides);
  t.teardown(s.close);
  return s;
}

/** Entity without its timestamps, for comparing two registrations made at different times. */
function withoutTimes(entity: any) {
  return {
    uri: entity.uri,
    type: entity.type,
    attributes: entity.attributes.map((a: any) => ({ key: a.key, value: a.value })),
  };
}

function valuesOf(entity: any): Record<string, unknown> {
  return Object.fromEntries(entity.attributes.map((a: any) => [a.key, a.value]));
}

const POLICY = {
  name: 'Docs Policy',
  description: 'readers read',
  rules: [
    {
      name: 'Readers',
      effect: 'allow',
      principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'reader' }],
      resource_conditions: [{ path: 'attributes.kind', operator: 'equals', value: 'doc' }],
      actions: ['read'],
    },
  ],
  default_effect: 'deny',
};

t.test('POST /register-entity behaves as the registry POST', async (t) => {
  const s = await server(t);
  const body = { uri: 'user:carol', type: 'principal', attributes: { role: 'reader', level: 2, flags: [true, null] } };
  const legacy = await s.call('POST', '/register-entity', body);
  t.equal(legacy.status, 200);
  t.same(Object.keys(legacy.body).sort(), ['attributes', 'registered_at', 'type', 'uri']);
  t.equal(legacy.body.uri, 'user:carol');
  t.equal(legacy.body.type, 'principal');
  t.match(legacy.body.registered_at, ISO_UTC);
  for (const attribute of legacy.body.attributes) {
    t.same(Object.keys(attribute).sort(), ['key', 'registered_at', 'updated_at', 'value']);
    t.match(attribute.updated_at, ISO_UTC);
    t.match(attribute.registered_at, ISO_UTC);
  }
  t.strictSame(valuesOf(legacy.body), body.attributes);
  const modern = await s.call('POST', REGISTRY, { ...body, uri: 'user:dave' });
  t.same(withoutTimes(legacy.body), { ...withoutTimes(modern.body), uri: 'user:carol' }, 'same shape as the registry POST');

  const fetched = await s.call('GET', entityPath('user:carol'));
  t.same(fetched.body, legacy.body, 'registered in the same registry');

  const duplicate = await s.call('POST', '/register-entity', body);
  t.equal(duplicate.status, 409, 'duplicate → 409');
  const duplicateOfModern = await s.call('POST', '/register-entity', { ...body, uri: 'user:dave' });
  t.equal(duplicateOfModern.status, 409);

  const noUri = await s.call('POST', '/register-entity', { type: 'resource', attributes: [{ key: 'kind', value: 'doc' }] });
  t.equal(noUri.status, 200);
  t.match(noUri.body.uri, UUID, 'absent uri → UUID');
  t.equal(noUri.body.type, 'resource');
  t.strictSame(valuesOf(noUri.body), { kind: 'doc' });

  for (const bad of [{ uri: 'x', attributes: {} }, { uri: 'x', attributes: [] }, { uri: 'x' }, { uri: 'x', type: 'thing', attributes: { a: 1 } }]) {
    const response = await s.call('POST', '/register-entity', bad);
    t.equal(response.status, 422, `${JSON.stringify(bad)} → 422`);
    t.ok(Array.isArray(response.body.detail));
  }
  t.equal((await s.call('GET', `${REGISTRY}/$count`)).body, 3);
});

t.test('POST /update-entity behaves as the registry PUT', async (t) => {
  const s = await server(t);
  const created = (await s.call('POST', '/register-entity', { uri: 'a/b c', type: 'resource', attributes: { kind: 'doc', owner: 'ann', size: 1 } })).body;
  await clockPast(created.registered_at);

  const upsert = await s.call('POST', '/update-entity', { uri: 'a/b c', attributes: { size: 2, tags: ['x'] } });
  t.equal(upsert.status, 200);
  t.strictSame(valuesOf(upsert.body), { kind: 'doc', owner: 'ann', size: 2, tags: ['x'] }, 'override defaults to false: upsert');
  t.equal(upsert.body.registered_at, created.registered_at);
  t.equal(upsert.body.type, 'resource');
  const size = upsert.body.attributes.find((a: any) => a.key === 'size');
  const createdSize = created.attributes.find((a: any) => a.key === 'size');
  t.equal(size.registered_at, createdSize.registered_at, 'upserted key keeps registered_at');
  t.ok(Date.parse(size.updated_at) > Date.parse(createdSize.updated_at), 'upserted key gets a new updated_at');
  t.same(
    upsert.body.attributes.find((a: any) => a.key === 'kind'),
    created.attributes.find((a: any) => a.key === 'kind'),
    'untouched key unchanged',
  );

  const explicitFalse = await s.call('POST', '/update-entity?override=false', { uri: 'a/b c', attributes: [{ key: 'owner', value: 'bo' }] });
  t.equal(explicitFalse.status, 200);
  t.strictSame(valuesOf(explicitFalse.body), { kind: 'doc', owner: 'bo', size: 2, tags: ['x'] });

  // the same update through the registry PUT gives the same result (timestamps aside)
  const viaPut = await s.call('PUT', entityPath('a/b c'), { uri: 'a/b c', attributes: [{ key: 'owner', value: 'bo' }] });
  t.same(withoutTimes(viaPut.body), withoutTimes(explicitFalse.body));

  const override = await s.call('POST', '/update-entity?override=true', { uri: 'a/b c', attributes: { only: null } });
  t.equal(override.status, 200);
  t.strictSame(valuesOf(override.body), { only: null }, 'override=true replaces all');
  t.same((await s.call('GET', entityPath('a/b c'))).body, override.body);

  const unknown = await s.call('POST', '/update-entity', { uri: 'nobody', attributes: { a: 1 } });
  t.equal(unknown.status, 404);
  t.same(unknown.body, { detail: 'Entity not found' });
  t.equal((await s.call('GET', entityPath('nobody'))).status, 404, 'an update does not create');

  for (const bad of [{ uri: 'a/b c', attributes: {} }, { attributes: { a: 1 } }, { uri: 'a/b c' }, { uri: '', attributes: { a: 1 } }]) {
    const response = await s.call('POST', '/update-entity', bad);
    t.equal(response.status, 422, `${JSON.stringify(bad)} → 422`);
  }
  t.equal((await s.call('POST', '/update-entity?override=perhaps', { uri: 'a/b c', attributes: { a: 1 } })).status, 422);
});

t.test('POST /delete-entity: uri in the query string or in the body', async (t) => {
  const s = await server(t);
  for (const uri of ['q1', 'b1', 'b2', 'we ird/uri?#&=', 'both']) {
    t.equal((await s.call('POST', REGISTRY, { uri, attributes: { a: 1 } })).status, 200);
  }

  const byQuery = await s.call('POST', `/delete-entity?uri=q1`);
  t.equal(byQuery.status, 200);
  t.strictSame(byQuery.body, { uri: 'q1', message: 'Entity deleted successfully' });
  t.equal((await s.call('GET', entityPath('q1'))).status, 404, 'really deleted');

  const byBody = await s.call('POST', '/delete-entity', { uri: 'b1' });
  t.equal(byBody.status, 200);
  t.strictSame(byBody.body, { uri: 'b1', message: 'Entity deleted successfully' });
  t.equal((await s.call('GET', entityPath('b1'))).status, 404);

  const encoded = await s.call('POST', `/delete-entity?uri=${encodeURIComponent('we ird/uri?#&=')}`);
  t.equal(encoded.status, 200);
  t.strictSame(encoded.body, { uri: 'we ird/uri?#&=', message: 'Entity deleted successfully' });

  const queryWithEmptyJsonBody = await s.send('POST', '/delete-entity?uri=b2', '', { 'content-type': 'application/json' });
  t.equal(queryWithEmptyJsonBody.status, 200, 'query uri with an empty JSON-typed body');
  t.strictSame(queryWithEmptyJsonBody.body, { uri: 'b2', message: 'Entity deleted successfully' });

  const same = await s.call('POST', '/delete-entity?uri=both', { uri: 'both' });
  t.equal(same.status, 200, 'the same uri in both places');
  t.strictSame(same.body, { uri: 'both', message: 'Entity deleted successfully' });

  const unknownQuery = await s.call('POST', '/delete-entity?uri=q1');
  t.equal(unknownQuery.status, 404);
  t.same(unknownQuery.body, { detail: 'Entity not found' });
  const unknownBody = await s.call('POST', '/delete-entity', { uri: 'never' });
  t.equal(unknownBody.status, 404);
  t.same(unknownBody.body, { detail: 'Entity not found' });

  for (const [label, response] of [
    ['no body, no query', await s.call('POST', '/delete-entity')],
    ['empty object body', await s.call('POST', '/delete-entity', {})],
    ['empty JSON body', await s.send('POST', '/delete-entity', '', { 'content-type': 'application/json' })],
    ['null body', await s.send('POST', '/delete-entity', 'null', { 'content-type': 'application/json' })],
    ['empty uri in body', await s.call('POST', '/delete-entity', { uri: '' })],
    ['uri a number', await s.call('POST', '/delete-entity', { uri: 5 })],
  ] as const) {
    t.equal(response.status, 422, `${label} → 422`);
    t.ok(Array.isArray(response.body?.detail), `${label}: detail lists issues`);
  }
  t.equal((await s.send('POST', '/delete-entity', '{"uri":', { 'content-type': 'application/json' })).status, 400, 'malformed JSON → 400');
  t.equal((await s.call('GET', `${REGISTRY}/$count`)).body, 0);
});

t.test('POST /create-policy behaves as POST /admin/policies', async (t) => {
  const s = await server(t);
  const legacy = await s.call('POST', '/create-policy', POLICY);
  t.equal(legacy.status, 200);
  const modern = await s.call('POST', '/admin/policies', { ...POLICY, name: 'Docs Policy 2' });
  t.equal(modern.status, 200);
  t.same({ ...legacy.body, name: 'x' }, { ...modern.body, name: 'x' }, 'same stored policy as the admin endpoint');
  t.equal(JSON.stringify({ ...legacy.body, name: 'x' }), JSON.stringify({ ...modern.body, name: 'x' }), 'same JSON, field order included');
  t.equal(legacy.body.name, 'docs-policy', 'name slugified');
  t.equal(legacy.body.rules[0].name, 'readers', 'rule name slugified');
  t.equal(legacy.body.rules[0].resource_conditions[0].operator, 'equals', 'operator stored as sent');

  const fetched = await s.call('GET', '/admin/policies/docs-policy');
  t.equal(fetched.status, 200);
  t.same(fetched.body, legacy.body);
  const listed = await s.call('GET', '/admin/policies');
  t.same(listed.body.map((p: any) => p.name), ['docs-policy', 'docs-policy-2']);

  const duplicate = await s.call('POST', '/create-policy', { ...POLICY, name: 'docs policy' });
  t.equal(duplicate.status, 409, 'duplicate (after slugifying) → 409');
  const duplicateModern = await s.call('POST', '/admin/policies', POLICY);
  t.equal(duplicateModern.status, 409);

  for (const bad of [{}, { name: 'x' }, { ...POLICY, name: '***' }, { ...POLICY, rules: 'none' }]) {
    const legacyBad = await s.call('POST', '/create-policy', bad);
    const modernBad = await s.call('POST', '/admin/policies', bad);
    t.equal(legacyBad.status, 422, `${JSON.stringify(bad).slice(0, 40)} → 422`);
    t.equal(modernBad.status, legacyBad.status);
    t.same(legacyBad.body, modernBad.body, 'same error body as the admin endpoint');
  }

  // the policy created here decides checks
  const check = await s.call('POST', '/check', { principal: { attributes: { role: 'reader' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' });
  t.same(check.body, { allowed: true, reason: 'Rule readers allowed the action in policy docs-policy' });
});

t.test('POST /check-access returns a bare true/false', async (t) => {
  const s = await server(t);
  const { request } = await import('undici');
  const raw = async (body: unknown) => {
    const response = await request(`${s.url}/check-access`, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    });
    return { status: response.statusCode, type: String(response.headers['content-type']), text: await response.body.text() };
  };

  const noPolicies = await raw({ principal: { attributes: { role: 'reader' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' });
  t.same(noPolicies, { status: 200, type: noPolicies.type, text: 'false' });
  t.match(noPolicies.type, /^application\/json/);

  await s.call('POST', '/create-policy', POLICY);
  await s.call('POST', '/register-entity', { uri: 'user:rita', type: 'principal', attributes: { role: 'reader' } });
  await s.call('POST', '/register-entity', { uri: 'doc:1', type: 'resource', attributes: { kind: 'doc' } });

  const cases: [string, unknown, string][] = [
    ['attributes only, allowed', { principal: { attributes: { role: 'reader' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' }, 'true'],
    ['attributes only, wrong action', { principal: { attributes: { role: 'reader' } }, resource: { attributes: { kind: 'doc' } }, action: 'write' }, 'false'],
    ['attributes only, default action', { principal: { attributes: { role: 'reader' } }, resource: { attributes: { kind: 'doc' } } }, 'false'],
    ['uris only', { principal: { uri: 'user:rita' }, resource: { uri: 'doc:1' }, action: 'read' }, 'true'],
    ['mixed', { principal: { uri: 'user:rita' }, resource: { attributes: { kind: 'doc' } }, action: 'read' }, 'true'],
    ['merge', { principal: { uri: 'user:rita', attributes: { extra: 1 } }, resource: { uri: 'doc:1', attributes: { kind: 'doc' } }, action: 'read' }, 'true'],
    ['unknown uri', { principal: { uri: 'user:nobody' }, resource: { uri: 'doc:1' }, action: 'read' }, 'false'],
    ['flat form', { principal_uri: 'user:rita', resource_attributes: { kind: 'doc' }, action: 'read' }, 'true'],
    ['list attributes', { principal: { attributes: [{ key: 'role', value: 'reader' }] }, resource: { uri: 'doc:1' }, action: 'read' }, 'true'],
  ];
  for (const [label, body, expected] of cases) {
    const response = await raw(body);
    t.equal(response.status, 200, `${label}: 200`);
    t.equal(response.text, expected, `${label}: bare ${expected}`);
  }
  const viaCall = await s.call('POST', '/check-access', cases[0]![1]);
  t.equal(viaCall.body, true);

  const invalid = await s.call('POST', '/check-access', { principal: {}, resource: { attributes: { kind: 'doc' } } });
  t.equal(invalid.status, 422, 'a side with neither uri nor attributes → 422');
  const conflict = await s.call('POST', '/check-access', { principal: { uri: 'user:rita', attributes: { role: 'admin' } }, resource: { uri: 'doc:1' }, action: 'read' });
  t.equal(conflict.status, 400);
  t.same(conflict.body, { detail: "For entity 'user:rita', attribute 'role' has more than one value" });
});

t.test('with admin authentication on, the legacy writes need the key; /check-access does not', async (t) => {
  const key = 'legacy-secret';
  const s = await server(t, { adminAuthRequired: true, adminApiKey: key });
  const invalid = { detail: 'Invalid API key. Please provide a valid API key.' };
  const writes: [string, unknown][] = [
    ['/create-policy', POLICY],
    ['/register-entity', { uri: 'user:z', attributes: { role: 'reader' } }],
    ['/update-entity', { uri: 'user:z', attributes: { role: 'writer' } }],
    ['/delete-entity?uri=user:z', undefined],
  ];
  for (const [p, body] of writes) {
    for (const headers of [{}, { 'way-api-key': 'wrong' }] as Record<string, string>[]) {
      const response = await s.call('POST', p, body, headers);
      t.equal(response.status, 401, `${p} without the right key → 401`);
      t.same(response.body, invalid);
    }
  }
  t.equal((await s.call('GET', '/admin/policies', undefined, { 'WAY-API-KEY': key })).body.length, 0, 'nothing was written');
  for (const [p, body] of writes) {
    const response = await s.call('POST', p, body, { 'WAY-API-KEY': key });
    t.equal(response.status, 200, `${p} with the key → 200`);
  }
  const check = await s.call('POST', '/check-access', { principal: { attributes: { role: 'reader' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' });
  t.equal(check.status, 200, '/check-access needs no key');
  t.equal(check.body, true);
});

t.test('registry switched off: the legacy entity endpoints are unavailable, /create-policy and /check-access work', async (t) => {
  const s = await server(t, { registryEnabled: false });
  for (const [p, body] of [
    ['/register-entity', { uri: 'x', attributes: { a: 1 } }],
    ['/update-entity', { uri: 'x', attributes: { a: 1 } }],
    ['/delete-entity?uri=x', undefined],
  ] as const) {
    const response = await s.call('POST', p, body);
    t.equal(response.status, 404, `${p} → 404`);
  }
  t.equal((await s.call('POST', '/create-policy', POLICY)).status, 200);
  t.equal((await s.call('POST', '/check-access', { principal: { uri: 'u' }, resource: { uri: 'r' }, action: 'read' })).body, false);
});
