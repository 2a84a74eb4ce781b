import t from 'tap';
import { ALLOWED_ADMIN, ALLOWED_WIPE, DENIED, conflict, createPolicy, decides, emptyServer, eq, itServer, refuses, refusesAt } from '../helpers/it-desk.js';

// The shapes a /check request may take: nested and flat sides, uris and attributes, attributes as
// an object or a list, the action's default, and what each form refuses.

t.test('nested and flat forms, attributes only', async (t) => {
  const server = await itServer(t);
  const nested = await server.call('POST', '/check', { principal: { attributes: { department: 'it' } }, resource: { attributes: { kind: 'laptop' } }, action: 'administer' });
  t.same([nested.status, nested.body], [200, ALLOWED_ADMIN]);
  t.match(nested.headers['content-type'], /^application\/json/);
  await decides(t, server, { principal_attributes: { department: 'it' }, resource_attributes: { kind: 'laptop' }, action: 'administer' }, ALLOWED_ADMIN);
  await decides(t, server, { principal_attributes: { department: 'hr' }, resource_attributes: { kind: 'laptop' }, action: 'administer' }, DENIED);
});

t.test('uri only: attributes come from the registry (nested and flat)', async (t) => {
  const server = await itServer(t);
  await decides(t, server, { principal: { uri: 'user:alice' }, resource: { uri: 'laptop-1' }, action: 'administer' }, ALLOWED_ADMIN);
  await decides(t, server, { principal_uri: 'user:alice', resource_uri: 'laptop-1', action: 'administer' }, ALLOWED_ADMIN);
  await decides(t, server, { principal_uri: 'user:bob', resource_uri: 'laptop-1', action: 'administer' }, DENIED);
  await decides(t, server, { principal_uri: 'user:alice', resource_uri: 'desk-1', action: 'administer' }, DENIED);
});

t.test('uri and attributes: registered and supplied attributes are merged', async (t) => {
  const server = await itServer(t);
  // wipe needs department (registered) and role (supplied): only the merge satisfies it.
  await decides(t, server, { principal: { uri: 'user:alice', attributes: { role: 'admin' } }, resource: { uri: 'laptop-1' }, action: 'wipe' }, ALLOWED_WIPE);
  await decides(
    t,
    server,
    { principal_uri: 'user:alice', principal_attributes: { role: 'admin' }, resource_uri: 'laptop-1', resource_attributes: { colour: 'grey' }, action: 'wipe' },
    ALLOWED_WIPE,
  );
  await decides(t, server, { principal: { uri: 'user:alice' }, resource: { uri: 'laptop-1' }, action: 'wipe' }, DENIED, '/check', 'registered only');
  await decides(t, server, { principal: { attributes: { role: 'admin' } }, resource: { uri: 'laptop-1' }, action: 'wipe' }, DENIED, '/check', 'supplied only');
});

t.test('forms may be mixed per side', async (t) => {
  const server = await itServer(t);
  const cases = [
    { principal: { uri: 'user:alice' }, resource: { attributes: { kind: 'laptop' } }, action: 'administer' },
    { principal: { attributes: { department: 'it' } }, resource: { uri: 'laptop-1' }, action: 'administer' },
    // nested principal, flat resource
    { principal: { uri: 'user:alice' }, resource_attributes: { kind: 'laptop' }, action: 'administer' },
    // flat principal, nested resource
    { principal_attributes: { department: 'it' }, resource: { uri: 'laptop-1' }, action: 'administer' },
    { principal_uri: 'user:alice', resource: { attributes: { kind: 'laptop' } }, action: 'administer' },
  ];
  for (const body of cases) await decides(t, server, body, ALLOWED_ADMIN);
});

/** A check for `action` administer with the principal described by `fields` (both forms mixed). */
const administer = (fields: Record<string, unknown>) => ({ resource_uri: 'laptop-1', action: 'administer', ...fields });

t.test('a side sent in both forms: fields given in both must agree, else 400 naming them', async (t) => {
  const server = await itServer(t);
  const disagreeingUris = "principal.uri ('user:bob') and principal_uri ('user:alice') disagree; send one of them, or the same value in both";
  await refuses(t, server, administer({ principal: { uri: 'user:bob' }, principal_uri: 'user:alice' }), disagreeingUris);
  await refuses(
    t,
    server,
    { principal: { attributes: { department: 'it' } }, principal_attributes: { department: 'hr' }, resource: { attributes: { kind: 'laptop' } }, action: 'administer' },
    "principal.attributes and principal_attributes disagree on 'department'; send one of them, or the same attributes in both",
  );
  await refuses(
    t,
    server,
    {
      principal: { attributes: { department: 'it' } },
      principal_attributes: { department: 'it', role: 'admin' },
      resource: { attributes: { kind: 'laptop' } },
      resource_attributes: { kind: 'laptop' },
      action: 'administer',
    },
    "principal.attributes and principal_attributes disagree on 'role'; send one of them, or the same attributes in both",
    '/check',
    'a key in one form only is a disagreement',
  );
  await refuses(
    t,
    server,
    { principal_uri: 'user:alice', resource: { uri: 'laptop-1' }, resource_uri: 'desk-1', action: 'administer' },
    "resource.uri ('laptop-1') and resource_uri ('desk-1') disagree; send one of them, or the same value in both",
    '/check',
    'the resource side too',
  );

  // Equal values are fine, whatever the shape: an object and a list of {key, value} items agree.
  await decides(
    t,
    server,
    {
      principal: { uri: 'user:alice', attributes: { department: 'it' } },
      principal_uri: 'user:alice',
      principal_attributes: [{ key: 'department', value: 'it' }],
      resource: { uri: 'laptop-1' },
      resource_uri: 'laptop-1',
      action: 'administer',
    },
    ALLOWED_ADMIN,
  );

  // A field given in one form only is used: nothing sent is ignored. Here the flat attributes join
  // the nested uri, and contradict the registry.
  await refuses(t, server, administer({ principal: { uri: 'user:alice' }, principal_attributes: { department: 'hr' } }), conflict('user:alice', 'department'));
  await refuses(
    t,
    server,
    administer({ principal: { attributes: { department: 'it' } }, principal_uri: 'user:bob' }),
    conflict('user:bob', 'department'),
    '/check',
    "bob's registered department contradicts the nested attributes",
  );

  // null and '' mean "not given", as everywhere else.
  await decides(t, server, administer({ principal: { uri: 'user:alice', attributes: null }, principal_uri: null, principal_attributes: null }), ALLOWED_ADMIN);
  await decides(t, server, administer({ principal: { uri: '' }, principal_uri: 'user:alice' }), ALLOWED_ADMIN);

  await refuses(t, server, administer({ principal: { uri: 'user:bob' }, principal_uri: 'user:alice' }), disagreeingUris, '/check-access', '/check-access refuses it too');
});

t.test('a bulk item with disagreeing forms refuses the whole bulk, on the front and in the worker pool', async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await itServer(t, { evaluation, workers: 1 });
    const agreeing = administer({ principal: { attributes: { department: 'it' } }, principal_attributes: { department: 'it' }, resource_uri: null, resource_attributes: { kind: 'laptop' } });
    const disagreeing = { ...agreeing, principal_attributes: { department: 'hr' } };
    await refuses(
      t,
      server,
      [agreeing, agreeing, disagreeing],
      "Item 2: principal.attributes and principal_attributes disagree on 'department'; send one of them, or the same attributes in both",
      '/check/bulk',
      `${evaluation}: the detail names the item and the fields`,
    );
    await decides(t, server, [agreeing, agreeing], [ALLOWED_ADMIN, ALLOWED_ADMIN], '/check/bulk', `${evaluation}: agreeing items are decided`);
  }
});

t.test('`type` must match its side; explicit nulls are accepted', async (t) => {
  const server = await itServer(t);
  await decides(t, server, { principal: { uri: 'user:alice', type: 'principal' }, resource: { uri: 'laptop-1', type: 'resource' }, action: 'administer' }, ALLOWED_ADMIN);
  await refusesAt(t, server, { principal: { uri: 'user:alice', type: 'resource' }, resource: { uri: 'laptop-1' }, action: 'administer' }, [['body', 'principal', 'type']]);
  await refusesAt(t, server, { principal: { uri: 'user:alice' }, resource: { uri: 'laptop-1', type: 'principal' }, action: 'administer' }, [['body', 'resource', 'type']]);
  await refusesAt(t, server, { principal: { uri: 'user:alice', type: 'user' }, resource: { uri: 'laptop-1' } }, [['body', 'principal', 'type']]);

  // What real SDKs send: every optional field present, null when unused.
  await decides(
    t,
    server,
    {
      principal: { uri: 'user:alice', attributes: null, type: null },
      resource: { uri: null, attributes: { kind: 'laptop' }, type: null },
      action: 'administer',
      principal_uri: null,
      principal_attributes: null,
      resource_uri: null,
      resource_attributes: null,
    },
    ALLOWED_ADMIN,
  );
  await decides(t, server, { principal_uri: 'user:alice', principal_attributes: null, resource_uri: null, resource_attributes: { kind: 'laptop' }, action: 'administer' }, ALLOWED_ADMIN);
});

t.test('attributes as an object or as a list of {key, value}', async (t) => {
  const server = await itServer(t);
  await decides(
    t,
    server,
    { principal: { attributes: [{ key: 'department', value: 'it' }, { key: 'role', value: 'admin' }] }, resource: { attributes: [{ key: 'kind', value: 'laptop' }] }, action: 'wipe' },
    ALLOWED_WIPE,
  );
  await decides(t, server, { principal_attributes: [{ key: 'department', value: 'it' }], resource_attributes: [{ key: 'kind', value: 'laptop' }], action: 'administer' }, ALLOWED_ADMIN);
  await decides(t, server, { principal: { uri: 'user:alice', attributes: [{ key: 'role', value: 'admin' }] }, resource: { uri: 'laptop-1' }, action: 'wipe' }, ALLOWED_WIPE);

  await refusesAt(
    t,
    server,
    { principal: { attributes: [{ key: 'department', value: 'it' }, { key: 'department', value: 'hr' }] }, resource: { attributes: { kind: 'laptop' } }, action: 'administer' },
    [['body', 'principal', 'attributes', 1, 'key']],
  );
  // Even two equal items for one key are refused: the list is ambiguous as sent. Located in the field sent.
  await refusesAt(
    t,
    server,
    { principal: { attributes: { department: 'it' } }, resource_attributes: [{ key: 'kind', value: 'laptop' }, { key: 'kind', value: 'laptop' }], action: 'administer' },
    [['body', 'resource_attributes', 1, 'key']],
  );
  await refusesAt(t, server, { principal: { attributes: [{ key: 'department' }] }, resource: { attributes: { kind: 'laptop' } } }, [['body', 'principal', 'attributes', 0, 'value']]);
  await refusesAt(t, server, { principal: { attributes: 'department=it' }, resource: { attributes: { kind: 'laptop' } } }, [['body', 'principal', 'attributes']]);
});

t.test('each side needs a non-empty uri or non-empty attributes', async (t) => {
  const server = await itServer(t);
  const cases: { body: unknown; side: string }[] = [
    { body: { principal: {}, resource: { uri: 'laptop-1' } }, side: 'principal' },
    { body: { principal: { attributes: {} }, resource: { uri: 'laptop-1' } }, side: 'principal' },
    { body: { principal: { attributes: [] }, resource: { uri: 'laptop-1' } }, side: 'principal' },
    { body: { principal: { uri: '' }, resource: { uri: 'laptop-1' } }, side: 'principal' },
    { body: { principal: { uri: null, attributes: null }, resource: { uri: 'laptop-1' } }, side: 'principal' },
    { body: { principal: { uri: 'user:alice' } }, side: 'resource' },
    { body: { principal: { uri: 'user:alice' }, resource: { attributes: {} } }, side: 'resource' },
    { body: { principal_uri: 'user:alice', resource_uri: '' }, side: 'resource' },
    { body: { principal_attributes: {}, resource_uri: 'laptop-1' }, side: 'principal' },
  ];
  for (const { body, side } of cases) await refusesAt(t, server, body, [['body', side]]);
  // Both sides missing or empty: both are named.
  for (const body of [{ action: 'read' }, {}, { principal: {}, resource: {} }]) await refusesAt(t, server, body, [['body', 'principal'], ['body', 'resource']]);
});

t.test('action defaults to "access"', async (t) => {
  const server = await emptyServer(t);
  await createPolicy(server, { name: 'doors', rules: [{ name: 'staff', effect: 'allow', principal_conditions: [eq('staff', true)], actions: ['access'] }] });
  const allowed = { allowed: true, reason: 'Rule staff allowed the action in policy doors' };
  const staff = { principal: { attributes: { staff: true } }, resource: { uri: 'door:1' } };
  await decides(t, server, staff, allowed, '/check', 'omitted');
  await decides(t, server, { ...staff, action: null }, allowed, '/check', 'null');
  await decides(t, server, { ...staff, action: 'access' }, allowed, '/check', 'named');
  await decides(t, server, { ...staff, action: 'open' }, DENIED, '/check', 'another action');
  await decides(t, server, { principal_attributes: { staff: true }, resource_uri: 'door:1' }, allowed, '/check', 'flat, omitted');
});
