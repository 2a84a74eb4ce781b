import t from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';

const NO_POLICIES = 'Action denied by default because there are no policies';
const DEFAULT_DENY = 'Action denied by default effect';
const conflict = (uri: string, key: string) => `For entity '${uri}', attribute '${key}' has more than one value`;

async function createPolicy(server: TestServer, policy: unknown) {
  const response = await server.call('POST', '/admin/policies', policy);
  if (response.status !== 200) throw new Error(`policy not created: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

async function register(server: TestServer, uri: string, type: string, attributes: unknown) {
  const response = await server.call('POST', '/admin/fetchers/registry/entities', { uri, type, attributes });
  if (response.status !== 200) throw new Error(`entity not registered: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

const eq = (key: string, value: unknown) => ({ path: `attributes.${key}`, operator: '==', value });

/** IT staff administer laptops; admins in IT with role admin may `wipe` laptops. */
const IT_DESK = {
  name: 'IT desk',
  rules: [
    {
      name: 'IT admins',
      effect: 'allow',
      principal_conditions: [eq('department', 'it')],
      resource_conditions: [eq('kind', 'laptop')],
      actions: ['administer'],
    },
    {
      name: 'wipers',
      effect: 'allow',
      principal_conditions: [eq('department', 'it'), eq('role', 'admin')],
      resource_conditions: [eq('kind', 'laptop')],
      actions: ['wipe'],
    },
  ],
};
const ALLOWED_ADMIN = { allowed: true, reason: 'Rule it-admins allowed the action in policy it-desk' };
const ALLOWED_WIPE = { allowed: true, reason: 'Rule wipers allowed the action in policy it-desk' };
const DENIED = { allowed: false, reason: DEFAULT_DENY };

/** A server with IT_DESK, alice (it) and laptop-1 (laptop) registered, and bob (sales). */
async function itServer(t: { teardown(fn: () => unknown): void }, overrides = {}) {
  const server = await startServer(overrides);
  t.teardown(server.close);
  await createPolicy(server, IT_DESK);
  await register(server, 'user:alice', 'principal', { department: 'it' });
  await register(server, 'user:bob', 'principal', { department: 'sales' });
  await register(server, 'laptop-1', 'resource', { kind: 'laptop' });
  await register(server, 'desk-1', 'resource', { kind: 'desk' });
  return server;
}

t.test('nested and flat forms, attributes only', async (t) => {
  const server = await itServer(t);
  const nested = await server.call('POST', '/check', {
    principal: { attributes: { department: 'it' } },
    resource: { attributes: { kind: 'laptop' } },
    action: 'administer',
  });
  t.equal(nested.status, 200);
  t.same(nested.body, ALLOWED_ADMIN);
  t.match(nested.headers['content-type'], /^application\/json/);

  const flat = await server.call('POST', '/check', {
    principal_attributes: { department: 'it' },
    resource_attributes: { kind: 'laptop' },
    action: 'administer',
  });
  t.equal(flat.status, 200);
  t.same(flat.body, ALLOWED_ADMIN);

  const flatDenied = await server.call('POST', '/check', {
    principal_attributes: { department: 'hr' },
    resource_attributes: { kind: 'laptop' },
    action: 'administer',
  });
  t.equal(flatDenied.status, 200);
  t.same(flatDenied.body, DENIED);
});

t.test('uri only: attributes come from the registry (nested and flat)', async (t) => {
  const server = await itServer(t);
  const nested = await server.call('POST', '/check', {
    principal: { uri: 'user:alice' },
    resource: { uri: 'laptop-1' },
    action: 'administer',
  });
  t.equal(nested.status, 200);
  t.same(nested.body, ALLOWED_ADMIN);

  const flat = await server.call('POST', '/check', { principal_uri: 'user:alice', resource_uri: 'laptop-1', action: 'administer' });
  t.equal(flat.status, 200);
  t.same(flat.body, ALLOWED_ADMIN);

  const bob = await server.call('POST', '/check', { principal_uri: 'user:bob', resource_uri: 'laptop-1', action: 'administer' });
  t.equal(bob.status, 200);
  t.same(bob.body, DENIED);

  const desk = await server.call('POST', '/check', { principal_uri: 'user:alice', resource_uri: 'desk-1', action: 'administer' });
  t.same(desk.body, DENIED);
});

t.test('uri and attributes: registered and supplied attributes are merged', async (t) => {
  const server = await itServer(t);
  // wipe needs department (registered) and role (supplied): only the merge satisfies it.
  const merged = await server.call('POST', '/check', {
    principal: { uri: 'user:alice', attributes: { role: 'admin' } },
    resource: { uri: 'laptop-1' },
    action: 'wipe',
  });
  t.equal(merged.status, 200);
  t.same(merged.body, ALLOWED_WIPE);

  const flatMerged = await server.call('POST', '/check', {
    principal_uri: 'user:alice',
    principal_attributes: { role: 'admin' },
    resource_uri: 'laptop-1',
    resource_attributes: { colour: 'grey' },
    action: 'wipe',
  });
  t.equal(flatMerged.status, 200);
  t.same(flatMerged.body, ALLOWED_WIPE);

  const registeredOnly = await server.call('POST', '/check', {
    principal: { uri: 'user:alice' },
    resource: { uri: 'laptop-1' },
    action: 'wipe',
  });
  t.same(registeredOnly.body, DENIED);

  const suppliedOnly = await server.call('POST', '/check', {
    principal: { attributes: { role: 'admin' } },
    resource: { uri: 'laptop-1' },
    action: 'wipe',
  });
  t.same(suppliedOnly.body, DENIED);
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
  for (const body of cases) {
    const response = await server.call('POST', '/check', body);
    t.equal(response.status, 200, JSON.stringify(body));
    t.same(response.body, ALLOWED_ADMIN, JSON.stringify(body));
  }
});

/** A check for `action` administer with the principal described by `fields` (both forms mixed). */
const administer = (fields: Record<string, unknown>) => ({ resource_uri: 'laptop-1', action: 'administer', ...fields });

t.test('a side sent in both forms: fields given in both must agree, else 400 naming them', async (t) => {
  const server = await itServer(t);

  const uris = await server.call('POST', '/check', administer({ principal: { uri: 'user:bob' }, principal_uri: 'user:alice' }));
  t.equal(uris.status, 400, 'disagreeing uris are refused');
  t.same(uris.body, {
    detail: "principal.uri ('user:bob') and principal_uri ('user:alice') disagree; send one of them, or the same value in both",
  });

  const attributes = await server.call('POST', '/check', {
    principal: { attributes: { department: 'it' } },
    principal_attributes: { department: 'hr' },
    resource: { attributes: { kind: 'laptop' } },
    action: 'administer',
  });
  t.equal(attributes.status, 400, 'disagreeing attributes are refused');
  t.same(attributes.body, {
    detail: "principal.attributes and principal_attributes disagree on 'department'; send one of them, or the same attributes in both",
  });

  const extraKey = await server.call('POST', '/check', {
    principal: { attributes: { department: 'it' } },
    principal_attributes: { department: 'it', role: 'admin' },
    resource: { attributes: { kind: 'laptop' } },
    resource_attributes: { kind: 'laptop' },
    action: 'administer',
  });
  t.equal(extraKey.status, 400, 'a key in one form only is a disagreement');
  t.match(extraKey.body.detail, "principal.attributes and principal_attributes disagree on 'role'");

  const resource = await server.call('POST', '/check', {
    principal_uri: 'user:alice',
    resource: { uri: 'laptop-1' },
    resource_uri: 'desk-1',
    action: 'administer',
  });
  t.equal(resource.status, 400, 'the resource side too');
  t.match(resource.body.detail, "resource.uri ('laptop-1') and resource_uri ('desk-1') disagree");

  // Equal values are fine, whatever the shape: an object and a list of {key, value} items agree.
  const same = await server.call('POST', '/check', {
    principal: { uri: 'user:alice', attributes: { department: 'it' } },
    principal_uri: 'user:alice',
    principal_attributes: [{ key: 'department', value: 'it' }],
    resource: { uri: 'laptop-1' },
    resource_uri: 'laptop-1',
    action: 'administer',
  });
  t.equal(same.status, 200, 'agreeing forms are decided');
  t.same(same.body, ALLOWED_ADMIN);

  // A field given in one form only is used: nothing sent is ignored. Here the flat attributes join
  // the nested uri, and contradict the registry.
  const joined = await server.call('POST', '/check', administer({ principal: { uri: 'user:alice' }, principal_attributes: { department: 'hr' } }));
  t.equal(joined.status, 400);
  t.same(joined.body, { detail: conflict('user:alice', 'department') });
  const joinedAllows = await server.call('POST', '/check', administer({ principal: { attributes: { department: 'it' } }, principal_uri: 'user:bob' }));
  t.equal(joinedAllows.status, 400, "bob's registered department contradicts the nested attributes");
  t.same(joinedAllows.body, { detail: conflict('user:bob', 'department') });

  // null and '' mean "not given", as everywhere else.
  const nulls = await server.call('POST', '/check', administer({ principal: { uri: 'user:alice', attributes: null }, principal_uri: null, principal_attributes: null }));
  t.equal(nulls.status, 200);
  t.same(nulls.body, ALLOWED_ADMIN);
  const empty = await server.call('POST', '/check', administer({ principal: { uri: '' }, principal_uri: 'user:alice' }));
  t.equal(empty.status, 200);
  t.same(empty.body, ALLOWED_ADMIN);

  const access = await server.call('POST', '/check-access', administer({ principal: { uri: 'user:bob' }, principal_uri: 'user:alice' }));
  t.equal(access.status, 400, '/check-access refuses it too');
  t.match(access.body.detail, "principal.uri ('user:bob') and principal_uri ('user:alice') disagree");
});

t.test('a bulk item with disagreeing forms refuses the whole bulk, on the front and in the worker pool', async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await itServer(t, { evaluation, workers: 1 });
    const agreeing = administer({ principal: { attributes: { department: 'it' } }, principal_attributes: { department: 'it' }, resource_uri: null, resource_attributes: { kind: 'laptop' } });
    const disagreeing = { ...agreeing, principal_attributes: { department: 'hr' } };
    const refused = await server.call('POST', '/check/bulk', [agreeing, agreeing, disagreeing]);
    t.equal(refused.status, 400, `${evaluation}: 400`);
    t.same(refused.body, {
      detail: "Item 2: principal.attributes and principal_attributes disagree on 'department'; send one of them, or the same attributes in both",
    }, `${evaluation}: the detail names the item and the fields`);
    const decided = await server.call('POST', '/check/bulk', [agreeing, agreeing]);
    t.equal(decided.status, 200, `${evaluation}: agreeing items are decided`);
    t.same(decided.body, [ALLOWED_ADMIN, ALLOWED_ADMIN]);
  }
});

t.test('`type` must match its side; explicit nulls are accepted', async (t) => {
  const server = await itServer(t);
  const typed = await server.call('POST', '/check', {
    principal: { uri: 'user:alice', type: 'principal' },
    resource: { uri: 'laptop-1', type: 'resource' },
    action: 'administer',
  });
  t.equal(typed.status, 200);
  t.same(typed.body, ALLOWED_ADMIN);

  const wrongPrincipal = await server.call('POST', '/check', {
    principal: { uri: 'user:alice', type: 'resource' },
    resource: { uri: 'laptop-1' },
    action: 'administer',
  });
  t.equal(wrongPrincipal.status, 422);
  t.ok(Array.isArray(wrongPrincipal.body.detail));
  t.same(wrongPrincipal.body.detail[0].loc.slice(0, 3), ['body', 'principal', 'type']);

  const wrongResource = await server.call('POST', '/check', {
    principal: { uri: 'user:alice' },
    resource: { uri: 'laptop-1', type: 'principal' },
    action: 'administer',
  });
  t.equal(wrongResource.status, 422);
  t.same(wrongResource.body.detail[0].loc.slice(0, 3), ['body', 'resource', 'type']);

  const bogusType = await server.call('POST', '/check', {
    principal: { uri: 'user:alice', type: 'user' },
    resource: { uri: 'laptop-1' },
  });
  t.equal(bogusType.status, 422);

  // What real SDKs send: every optional field present, null when unused.
  const nulls = await server.call('POST', '/check', {
    principal: { uri: 'user:alice', attributes: null, type: null },
    resource: { uri: null, attributes: { kind: 'laptop' }, type: null },
    action: 'administer',
    principal_uri: null,
    principal_attributes: null,
    resource_uri: null,
    resource_attributes: null,
  });
  t.equal(nulls.status, 200);
  t.same(nulls.body, ALLOWED_ADMIN);

  const flatNulls = await server.call('POST', '/check', {
    principal_uri: 'user:alice',
    principal_attributes: null,
    resource_uri: null,
    resource_attributes: { kind: 'laptop' },
    action: 'administer',
  });
  t.equal(flatNulls.status, 200);
  t.same(flatNulls.body, ALLOWED_ADMIN);
});

t.test('attributes as an object or as a list of {key, value}', async (t) => {
  const server = await itServer(t);
  const list = await server.call('POST', '/check', {
    principal: { attributes: [{ key: 'department', value: 'it' }, { key: 'role', value: 'admin' }] },
    resource: { attributes: [{ key: 'kind', value: 'laptop' }] },
    action: 'wipe',
  });
  t.equal(list.status, 200);
  t.same(list.body, ALLOWED_WIPE);

  const flatList = await server.call('POST', '/check', {
    principal_attributes: [{ key: 'department', value: 'it' }],
    resource_attributes: [{ key: 'kind', value: 'laptop' }],
    action: 'administer',
  });
  t.equal(flatList.status, 200);
  t.same(flatList.body, ALLOWED_ADMIN);

  const merged = await server.call('POST', '/check', {
    principal: { uri: 'user:alice', attributes: [{ key: 'role', value: 'admin' }] },
    resource: { uri: 'laptop-1' },
    action: 'wipe',
  });
  t.same(merged.body, ALLOWED_WIPE);

  const duplicate = await server.call('POST', '/check', {
    principal: { attributes: [{ key: 'department', value: 'it' }, { key: 'department', value: 'hr' }] },
    resource: { attributes: { kind: 'laptop' } },
    action: 'administer',
  });
  t.equal(duplicate.status, 422);
  t.equal(duplicate.body.detail.length, 1);
  t.same(duplicate.body.detail[0].loc, ['body', 'principal', 'attributes', 1, 'key']);
  t.type(duplicate.body.detail[0].msg, 'string');
  t.type(duplicate.body.detail[0].type, 'string');

  // Even two equal items for one key are refused: the list is ambiguous as sent.
  const duplicateSame = await server.call('POST', '/check', {
    principal: { attributes: { department: 'it' } },
    resource_attributes: [{ key: 'kind', value: 'laptop' }, { key: 'kind', value: 'laptop' }],
    action: 'administer',
  });
  t.equal(duplicateSame.status, 422);
  t.same(duplicateSame.body.detail[0].loc, ['body', 'resource_attributes', 1, 'key'], 'located in the field sent');

  const missingValue = await server.call('POST', '/check', {
    principal: { attributes: [{ key: 'department' }] },
    resource: { attributes: { kind: 'laptop' } },
  });
  t.equal(missingValue.status, 422);
  t.same(missingValue.body.detail[0].loc, ['body', 'principal', 'attributes', 0, 'value']);

  const notAttributes = await server.call('POST', '/check', {
    principal: { attributes: 'department=it' },
    resource: { attributes: { kind: 'laptop' } },
  });
  t.equal(notAttributes.status, 422);
  t.same(notAttributes.body.detail[0].loc, ['body', 'principal', 'attributes']);
});

t.test('each side needs a non-empty uri or non-empty attributes', async (t) => {
  const server = await itServer(t);
  const cases: { body: unknown; loc: unknown[] }[] = [
    { body: { principal: {}, resource: { uri: 'laptop-1' } }, loc: ['body', 'principal'] },
    { body: { principal: { attributes: {} }, resource: { uri: 'laptop-1' } }, loc: ['body', 'principal'] },
    { body: { principal: { attributes: [] }, resource: { uri: 'laptop-1' } }, loc: ['body', 'principal'] },
    { body: { principal: { uri: '' }, resource: { uri: 'laptop-1' } }, loc: ['body', 'principal'] },
    { body: { principal: { uri: null, attributes: null }, resource: { uri: 'laptop-1' } }, loc: ['body', 'principal'] },
    { body: { principal: { uri: 'user:alice' } }, loc: ['body', 'resource'] },
    { body: { principal: { uri: 'user:alice' }, resource: { attributes: {} } }, loc: ['body', 'resource'] },
    { body: { principal_uri: 'user:alice', resource_uri: '' }, loc: ['body', 'resource'] },
    { body: { principal_attributes: {}, resource_uri: 'laptop-1' }, loc: ['body', 'principal'] },
    { body: { action: 'read' }, loc: ['body', 'principal'] },
    { body: {}, loc: ['body', 'principal'] },
  ];
  for (const { body, loc } of cases) {
    const response = await server.call('POST', '/check', body);
    t.equal(response.status, 422, JSON.stringify(body));
    t.ok(Array.isArray(response.body.detail), JSON.stringify(body));
    t.same(response.body.detail[0].loc, loc, JSON.stringify(body));
    t.type(response.body.detail[0].msg, 'string');
    t.type(response.body.detail[0].type, 'string');
  }
  // Both sides empty: both are named.
  const both = await server.call('POST', '/check', { principal: {}, resource: {} });
  t.equal(both.status, 422);
  t.same(
    both.body.detail.map((issue: { loc: unknown[] }) => issue.loc),
    [['body', 'principal'], ['body', 'resource']],
  );
});

t.test('action defaults to "access"', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  await createPolicy(server, {
    name: 'doors',
    rules: [{ name: 'staff', effect: 'allow', principal_conditions: [eq('staff', true)], actions: ['access'] }],
  });
  const allowed = { allowed: true, reason: 'Rule staff allowed the action in policy doors' };
  const omitted = await server.call('POST', '/check', { principal: { attributes: { staff: true } }, resource: { uri: 'door:1' } });
  t.equal(omitted.status, 200);
  t.same(omitted.body, allowed);
  const nullAction = await server.call('POST', '/check', {
    principal: { attributes: { staff: true } },
    resource: { uri: 'door:1' },
    action: null,
  });
  t.equal(nullAction.status, 200);
  t.same(nullAction.body, allowed);
  const explicit = await server.call('POST', '/check', {
    principal: { attributes: { staff: true } },
    resource: { uri: 'door:1' },
    action: 'access',
  });
  t.same(explicit.body, allowed);
  const other = await server.call('POST', '/check', {
    principal: { attributes: { staff: true } },
    resource: { uri: 'door:1' },
    action: 'open',
  });
  t.equal(other.status, 200);
  t.same(other.body, DENIED);
  const flat = await server.call('POST', '/check', { principal_attributes: { staff: true }, resource_uri: 'door:1' });
  t.same(flat.body, allowed);
});

t.test('an unregistered uri contributes nothing and is not an error', async (t) => {
  const server = await itServer(t);
  const withAttributes = await server.call('POST', '/check', {
    principal: { uri: 'user:nobody', attributes: { department: 'it' } },
    resource: { uri: 'laptop:unknown', attributes: { kind: 'laptop' } },
    action: 'administer',
  });
  t.equal(withAttributes.status, 200);
  t.same(withAttributes.body, ALLOWED_ADMIN);

  const uriOnly = await server.call('POST', '/check', {
    principal: { uri: 'user:nobody' },
    resource: { uri: 'laptop:unknown' },
    action: 'administer',
  });
  t.equal(uriOnly.status, 200);
  t.same(uriOnly.body, DENIED);

  const empty = await startServer();
  t.teardown(empty.close);
  const none = await empty.call('POST', '/check', { principal_uri: 'a', resource_uri: 'b' });
  t.equal(none.status, 200);
  t.same(none.body, { allowed: false, reason: NO_POLICIES });
});

t.test('a supplied value that contradicts the registry is a conflict; equal values are fine', async (t) => {
  const server = await itServer(t);
  const contradicting = await server.call('POST', '/check', {
    principal: { uri: 'user:bob', attributes: { department: 'it' } },
    resource: { uri: 'laptop-1' },
    action: 'administer',
  });
  t.equal(contradicting.status, 400);
  t.same(contradicting.body, { detail: conflict('user:bob', 'department') });

  const resourceSide = await server.call('POST', '/check', {
    principal_uri: 'user:alice',
    resource_uri: 'desk-1',
    resource_attributes: { kind: 'laptop' },
    action: 'administer',
  });
  t.equal(resourceSide.status, 400);
  t.same(resourceSide.body, { detail: conflict('desk-1', 'kind') });

  const listForm = await server.call('POST', '/check', {
    principal: { uri: 'user:bob', attributes: [{ key: 'department', value: 'it' }] },
    resource: { uri: 'laptop-1' },
    action: 'administer',
  });
  t.equal(listForm.status, 400);
  t.same(listForm.body, { detail: conflict('user:bob', 'department') });

  const equal = await server.call('POST', '/check', {
    principal: { uri: 'user:alice', attributes: { department: 'it', role: 'admin' } },
    resource: { uri: 'laptop-1', attributes: { kind: 'laptop' } },
    action: 'wipe',
  });
  t.equal(equal.status, 200);
  t.same(equal.body, ALLOWED_WIPE);

  // The /check-access endpoint reports the conflict the same way.
  const access = await server.call('POST', '/check-access', {
    principal: { uri: 'user:bob', attributes: { department: 'it' } },
    resource: { uri: 'laptop-1' },
    action: 'administer',
  });
  t.equal(access.status, 400);
  t.same(access.body, { detail: conflict('user:bob', 'department') });
});

t.test('conflicts compare JSON values, structured values included', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  await register(server, 'svc:1', 'principal', { level: 3, tags: ['a', 'b'], address: { city: 'Oslo', zip: '0150' } });
  const same = await server.call('POST', '/check', {
    principal: { uri: 'svc:1', attributes: { level: 3, tags: ['a', 'b'], address: { zip: '0150', city: 'Oslo' } } },
    resource: { uri: 'r' },
  });
  t.equal(same.status, 200);
  t.same(same.body, { allowed: false, reason: NO_POLICIES });

  const typeDiffers = await server.call('POST', '/check', {
    principal: { uri: 'svc:1', attributes: { level: '3' } },
    resource: { uri: 'r' },
  });
  t.equal(typeDiffers.status, 400);
  t.same(typeDiffers.body, { detail: conflict('svc:1', 'level') });

  const orderDiffers = await server.call('POST', '/check', {
    principal: { uri: 'svc:1', attributes: { tags: ['b', 'a'] } },
    resource: { uri: 'r' },
  });
  t.equal(orderDiffers.status, 400);
  t.same(orderDiffers.body, { detail: conflict('svc:1', 'tags') });

  const nullDiffers = await server.call('POST', '/check', {
    principal: { uri: 'svc:1', attributes: { level: null } },
    resource: { uri: 'r' },
  });
  t.equal(nullDiffers.status, 400);
  t.same(nullDiffers.body, { detail: conflict('svc:1', 'level') });
});

t.test('rule 8: supplied attributes do not make up for insufficient registered ones', async (t) => {
  const server = await itServer(t);
  // bob (sales) fails the IT desk policy; adding attributes that do not qualify changes nothing.
  for (const attributes of [{ role: 'admin' }, { title: 'boss', clearance: 'top' }, [{ key: 'role', value: 'admin' }]]) {
    const response = await server.call('POST', '/check', {
      principal: { uri: 'user:bob', attributes },
      resource: { uri: 'laptop-1' },
      action: 'wipe',
    });
    t.equal(response.status, 200);
    t.same(response.body, DENIED);
    const administer = await server.call('POST', '/check', {
      principal: { uri: 'user:bob', attributes },
      resource: { uri: 'laptop-1' },
      action: 'administer',
    });
    t.same(administer.body, DENIED);
  }
  // And the one attribute that would qualify cannot be supplied: it contradicts the registry.
  const override = await server.call('POST', '/check', {
    principal: { uri: 'user:bob', attributes: { department: 'it' } },
    resource: { uri: 'laptop-1' },
    action: 'administer',
  });
  t.equal(override.status, 400);
  t.same(override.body, { detail: conflict('user:bob', 'department') });
});

t.test('values keep their JSON types (1 is not "1")', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  await createPolicy(server, {
    name: 'typed',
    rules: [
      { name: 'number', effect: 'allow', principal_conditions: [eq('level', 1)], actions: ['n'] },
      { name: 'string', effect: 'allow', principal_conditions: [eq('level', '1')], actions: ['s'] },
      { name: 'boolean', effect: 'allow', principal_conditions: [eq('flag', true)], actions: ['b'] },
      { name: 'null', effect: 'allow', principal_conditions: [eq('flag', null)], actions: ['z'] },
      { name: 'json-text', effect: 'allow', principal_conditions: [eq('doc', { a: 1 })], actions: ['o'] },
    ],
  });
  const check = async (attributes: unknown, action: string) =>
    (await server.call('POST', '/check', { principal: { attributes }, resource: { uri: 'r' }, action })).body;
  const allows = (rule: string) => ({ allowed: true, reason: `Rule ${rule} allowed the action in policy typed` });

  t.same(await check({ level: 1 }, 'n'), allows('number'));
  t.same(await check({ level: '1' }, 'n'), DENIED);
  t.same(await check({ level: 1.0 }, 'n'), allows('number'));
  t.same(await check({ level: '1' }, 's'), allows('string'));
  t.same(await check({ level: 1 }, 's'), DENIED);
  t.same(await check({ flag: true }, 'b'), allows('boolean'));
  t.same(await check({ flag: 'true' }, 'b'), DENIED);
  t.same(await check({ flag: 1 }, 'b'), DENIED);
  t.same(await check({ flag: null }, 'z'), allows('null'));
  t.same(await check({ flag: 'null' }, 'z'), DENIED);
  t.same(await check({ doc: { a: 1 } }, 'o'), allows('json-text'));
  // A string holding JSON is not re-parsed.
  t.same(await check({ doc: '{"a":1}' }, 'o'), DENIED);
  t.same(await check({ doc: { a: '1' } }, 'o'), DENIED);

  // Registered values keep their types too.
  await register(server, 'n:1', 'principal', { level: 1 });
  await register(server, 's:1', 'principal', { level: '1' });
  const byNumber = await server.call('POST', '/check', { principal_uri: 'n:1', resource_uri: 'r', action: 'n' });
  t.same(byNumber.body, allows('number'));
  const byString = await server.call('POST', '/check', { principal_uri: 's:1', resource_uri: 'r', action: 'n' });
  t.same(byString.body, DENIED);
  const stringRule = await server.call('POST', '/check', { principal_uri: 's:1', resource_uri: 'r', action: 's' });
  t.same(stringRule.body, allows('string'));
});

t.test('__proto__, constructor and toString are ordinary attribute keys and never pollute', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  t.teardown(() => {
    delete (Object.prototype as Record<string, unknown>).polluted;
  });
  await createPolicy(server, {
    name: 'odd keys',
    rules: [
      {
        name: 'proto',
        effect: 'allow',
        principal_conditions: [{ path: 'attributes.__proto__.polluted', operator: '==', value: true }],
        actions: ['proto'],
      },
      {
        name: 'ctor',
        effect: 'allow',
        principal_conditions: [eq('constructor', 'x'), eq('toString', 'y')],
        actions: ['ctor'],
      },
      // Reading through a prototype would find Object.prototype.toString and satisfy `!=`.
      {
        name: 'inherited',
        effect: 'allow',
        principal_conditions: [{ path: 'attributes.toString', operator: '!=', value: 'zzz' }],
        actions: ['inherited'],
      },
      {
        name: 'nested-inherited',
        effect: 'allow',
        principal_conditions: [{ path: 'attributes.doc.constructor', operator: '!=', value: 'zzz' }],
        actions: ['nested-inherited'],
      },
    ],
  });
  const allows = (rule: string) => ({ allowed: true, reason: `Rule ${rule} allowed the action in policy odd-keys` });
  const raw = (text: string) => server.send('POST', '/check', text, { 'content-type': 'application/json' });

  const proto = await raw('{"principal":{"attributes":{"__proto__":{"polluted":true}}},"resource":{"uri":"r"},"action":"proto"}');
  t.equal(proto.status, 200);
  t.same(proto.body, allows('proto'));
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype untouched');
  t.notOk(Object.hasOwn(Object.prototype, 'polluted'));

  // `__proto__` alone is a non-empty attributes object.
  const protoFlat = await raw('{"principal_attributes":{"__proto__":{"polluted":true}},"resource_uri":"r","action":"proto"}');
  t.equal(protoFlat.status, 200);
  t.same(protoFlat.body, allows('proto'));

  const protoValueFalse = await raw('{"principal":{"attributes":{"__proto__":{"polluted":false}}},"resource":{"uri":"r"},"action":"proto"}');
  t.same(protoValueFalse.body, DENIED);

  // A top-level __proto__ in the body is not a way in either: a field the check does not know.
  const topLevel = await raw('{"__proto__":{"polluted":true,"principal_uri":"p"},"principal":{"attributes":{"a":1}},"resource":{"uri":"r"}}');
  t.equal(topLevel.status, 422);
  t.same(topLevel.body.detail, [{ loc: ['body', '__proto__'], msg: 'Extra inputs are not permitted', type: 'extra_forbidden' }]);

  const ctor = await raw('{"principal":{"attributes":{"constructor":"x","toString":"y"}},"resource":{"uri":"r"},"action":"ctor"}');
  t.equal(ctor.status, 200);
  t.same(ctor.body, allows('ctor'));

  const ctorList = await server.call('POST', '/check', {
    principal: { attributes: [{ key: 'constructor', value: 'x' }, { key: 'toString', value: 'y' }] },
    resource: { uri: 'r' },
    action: 'ctor',
  });
  t.same(ctorList.body, allows('ctor'));

  // Without the keys, nothing inherited counts as an attribute.
  const inherited = await server.call('POST', '/check', { principal: { attributes: { a: 1 } }, resource: { uri: 'r' }, action: 'inherited' });
  t.equal(inherited.status, 200);
  t.same(inherited.body, DENIED);
  const nestedInherited = await server.call('POST', '/check', {
    principal: { attributes: { doc: { a: 1 } } },
    resource: { uri: 'r' },
    action: 'nested-inherited',
  });
  t.same(nestedInherited.body, DENIED);
  const ownToString = await raw('{"principal":{"attributes":{"toString":"abc"}},"resource":{"uri":"r"},"action":"inherited"}');
  t.same(ownToString.body, allows('inherited'));

  // Registered under those keys, then checked by uri, and merged without a false conflict.
  const registered = await server.send(
    'POST',
    '/admin/fetchers/registry/entities',
    '{"uri":"odd:1","type":"principal","attributes":{"__proto__":{"polluted":true},"constructor":"x"}}',
    { 'content-type': 'application/json' },
  );
  t.equal(registered.status, 200);
  t.same(
    registered.body.attributes.map((attribute: { key: string; value: unknown }) => [attribute.key, attribute.value]),
    [['__proto__', { polluted: true }], ['constructor', 'x']],
  );
  const byUri = await server.call('POST', '/check', { principal_uri: 'odd:1', resource_uri: 'r', action: 'proto' });
  t.same(byUri.body, allows('proto'));
  const merged = await raw('{"principal":{"uri":"odd:1","attributes":{"toString":"y","constructor":"x"}},"resource":{"uri":"r"},"action":"ctor"}');
  t.equal(merged.status, 200);
  t.same(merged.body, allows('ctor'));
  const conflicting = await raw('{"principal":{"uri":"odd:1","attributes":{"__proto__":{"polluted":false}}},"resource":{"uri":"r"},"action":"proto"}');
  t.equal(conflicting.status, 400);
  t.same(conflicting.body, { detail: conflict('odd:1', '__proto__') });

  const bulk = await server.send(
    'POST',
    '/check/bulk',
    '[{"principal":{"attributes":{"__proto__":{"polluted":true}}},"resource":{"uri":"r"},"action":"proto"},{"__proto__":{"polluted":true}}]',
    { 'content-type': 'application/json' },
  );
  // The second item's own __proto__ key is a field the check does not know.
  t.equal(bulk.status, 422);
  t.same(bulk.body.detail[0].loc, ['body', 1, '__proto__']);

  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype still untouched');
  t.notOk(Object.hasOwn(Object.prototype, 'polluted'));
  t.equal(typeof ({} as { toString: unknown }).toString, 'function');
});

t.test('POST /check/bulk', async (t) => {
  const server = await itServer(t, { bulkCheckMaxRequests: 3 });

  const ordered = await server.call('POST', '/check/bulk', [
    { principal: { uri: 'user:alice' }, resource: { uri: 'laptop-1' }, action: 'administer' },
    { principal_uri: 'user:bob', resource_uri: 'laptop-1', action: 'administer' },
    { principal_attributes: { department: 'it', role: 'admin' }, resource: { attributes: { kind: 'laptop' } }, action: 'wipe' },
  ]);
  t.equal(ordered.status, 200);
  t.same(ordered.body, [ALLOWED_ADMIN, DENIED, ALLOWED_WIPE]);

  const single = await server.call('POST', '/check/bulk', [{ principal_uri: 'user:bob', resource_uri: 'laptop-1' }]);
  t.equal(single.status, 200);
  t.same(single.body, [DENIED]);

  const empty = await server.call('POST', '/check/bulk', []);
  t.equal(empty.status, 400);
  t.same(empty.body, { detail: 'Empty request list' });

  const item = { principal_uri: 'user:alice', resource_uri: 'laptop-1', action: 'administer' };
  const tooMany = await server.call('POST', '/check/bulk', [item, item, item, item]);
  t.equal(tooMany.status, 400);
  t.same(tooMany.body, { detail: 'Too many requests. Maximum allowed: 3' });
  const atLimit = await server.call('POST', '/check/bulk', [item, item, item]);
  t.equal(atLimit.status, 200);
  t.same(atLimit.body, [ALLOWED_ADMIN, ALLOWED_ADMIN, ALLOWED_ADMIN]);

  // A semantic schema error (empty side) in item 1 rejects the whole call.
  const emptySide = await server.call('POST', '/check/bulk', [item, { principal: {}, resource_uri: 'laptop-1' }, item]);
  t.equal(emptySide.status, 422);
  t.equal(emptySide.body.detail.length, 1);
  t.same(emptySide.body.detail[0].loc, ['body', 1, 'principal']);

  // A JSON-Schema type error in item 2.
  const typeError = await server.call('POST', '/check/bulk', [item, item, { principal: { attributes: 5 }, resource_uri: 'x' }]);
  t.equal(typeError.status, 422);
  t.same(typeError.body.detail[0].loc.slice(0, 4), ['body', 2, 'principal', 'attributes']);

  const duplicateKey = await server.call('POST', '/check/bulk', [
    { principal: { attributes: [{ key: 'a', value: 1 }, { key: 'a', value: 2 }] }, resource_uri: 'x' },
  ]);
  t.equal(duplicateKey.status, 422);
  t.same(duplicateKey.body.detail[0].loc, ['body', 0, 'principal', 'attributes', 1, 'key']);

  const wrongType = await server.call('POST', '/check/bulk', [item, { principal: { uri: 'user:alice', type: 'resource' }, resource_uri: 'x' }]);
  t.equal(wrongType.status, 422);
  t.same(wrongType.body.detail[0].loc.slice(0, 4), ['body', 1, 'principal', 'type']);

  const notArray = await server.call('POST', '/check/bulk', item);
  t.equal(notArray.status, 422);
  t.ok(Array.isArray(notArray.body.detail));

  const notObjectItem = await server.call('POST', '/check/bulk', [item, 'check please']);
  t.equal(notObjectItem.status, 422);
  t.same(notObjectItem.body.detail[0].loc, ['body', 1]);

  // A conflict in one item denies only that item.
  const withConflict = await server.call('POST', '/check/bulk', [
    item,
    { principal: { uri: 'user:bob', attributes: { department: 'it' } }, resource: { uri: 'laptop-1' }, action: 'administer' },
    { principal: { uri: 'user:alice', attributes: { role: 'admin' } }, resource: { uri: 'laptop-1' }, action: 'wipe' },
  ]);
  t.equal(withConflict.status, 200);
  t.same(withConflict.body, [ALLOWED_ADMIN, { allowed: false, reason: conflict('user:bob', 'department') }, ALLOWED_WIPE]);
});

t.test('on the front and in the worker pool, a bulk over --bulk-check-max-requests is 400 and one with two unusable items names both; /plan/bulk too', async (t) => {
  // Attributes only: in pool mode a worker reads and decides these bulks.
  const usable = { principal_attributes: { department: 'it' }, resource_attributes: { kind: 'laptop' }, action: 'administer' };
  const noPrincipal = { principal: {}, resource_attributes: { kind: 'laptop' } };
  const noResource = { principal_attributes: { department: 'it' }, resource: { attributes: {} } };
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await startServer({ evaluation, workers: 1, bulkCheckMaxRequests: 4 });
    t.teardown(server.close);
    t.same((await server.call('POST', '/check/bulk', [usable, usable, usable, usable])).body, Array(4).fill({ allowed: false, reason: NO_POLICIES }), `${evaluation}: at the limit`);
    const over = await server.call('POST', '/check/bulk', [usable, usable, usable, usable, usable]);
    t.same([over.status, over.body], [400, { detail: 'Too many requests. Maximum allowed: 4' }], `${evaluation}: over it`);
    const refused = await server.call('POST', '/check/bulk', [usable, noPrincipal, usable, noResource]);
    t.equal(refused.status, 422, `${evaluation}: 422`);
    t.same(refused.body.detail.map((issue: { loc: unknown[] }) => issue.loc), [['body', 1, 'principal'], ['body', 3, 'resource']], `${evaluation}: both items, in order`);
    const planOf = (principal: unknown) => ({ principal, action: 'administer' });
    const plans = await server.call('POST', '/plan/bulk', [planOf({}), planOf({ attributes: { department: 'it' } }), planOf({ attributes: {} })]);
    t.equal(plans.status, 422, `${evaluation}: /plan/bulk 422`);
    t.same(plans.body.detail.map((issue: { loc: unknown[] }) => issue.loc), [['body', 0, 'principal'], ['body', 2, 'principal']], `${evaluation}: /plan/bulk names both items, in order`);
  }
});

t.test('bulk limit defaults to 1000', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const item = { principal_attributes: { a: 1 }, resource_uri: 'r' };
  const thousand = await server.call('POST', '/check/bulk', Array.from({ length: 1000 }, () => item));
  t.equal(thousand.status, 200);
  t.equal(thousand.body.length, 1000);
  t.same(thousand.body[999], { allowed: false, reason: NO_POLICIES });
  const over = await server.call('POST', '/check/bulk', Array.from({ length: 1001 }, () => item));
  t.equal(over.status, 400);
  t.same(over.body, { detail: 'Too many requests. Maximum allowed: 1000' });
});

t.test('POST /check-access answers a bare boolean', async (t) => {
  const server = await itServer(t);
  const allowed = await server.call('POST', '/check-access', {
    principal: { uri: 'user:alice' },
    resource: { attributes: { kind: 'laptop' } },
    action: 'administer',
  });
  t.equal(allowed.status, 200);
  t.equal(allowed.body, true);
  t.match(allowed.headers['content-type'], /^application\/json/);

  const denied = await server.call('POST', '/check-access', {
    principal: { uri: 'user:bob' },
    resource: { uri: 'laptop-1' },
    action: 'administer',
  });
  t.equal(denied.status, 200);
  t.equal(denied.body, false);

  const merged = await server.call('POST', '/check-access', {
    principal: { uri: 'user:alice', attributes: { role: 'admin' } },
    resource: { uri: 'laptop-1' },
    action: 'wipe',
  });
  t.equal(merged.body, true);

  const flat = await server.call('POST', '/check-access', { principal_uri: 'user:alice', resource_uri: 'laptop-1', action: 'administer' });
  t.equal(flat.status, 200);
  t.equal(flat.body, true);

  const invalid = await server.call('POST', '/check-access', { principal: {}, resource: { uri: 'x' } });
  t.equal(invalid.status, 422);
  t.same(invalid.body.detail[0].loc, ['body', 'principal']);
});
