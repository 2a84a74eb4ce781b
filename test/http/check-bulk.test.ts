import t from 'tap';
import { ALLOWED_ADMIN, ALLOWED_WIPE, DENIED, NO_POLICIES, conflict, decides, emptyServer, itServer, refuses, refusesAt } from '../helpers/it-desk.js';

// POST /check/bulk (answers in request order, within its limit, refused whole when an item is
// unusable) and POST /check-access (a bare boolean).

t.test('POST /check/bulk', async (t) => {
  const server = await itServer(t, { bulkCheckMaxRequests: 3 });
  const bulk = '/check/bulk';
  await decides(
    t,
    server,
    [
      { principal: { uri: 'user:alice' }, resource: { uri: 'laptop-1' }, action: 'administer' },
      { principal_uri: 'user:bob', resource_uri: 'laptop-1', action: 'administer' },
      { principal_attributes: { department: 'it', role: 'admin' }, resource: { attributes: { kind: 'laptop' } }, action: 'wipe' },
    ],
    [ALLOWED_ADMIN, DENIED, ALLOWED_WIPE],
    bulk,
    'answers in request order',
  );
  await decides(t, server, [{ principal_uri: 'user:bob', resource_uri: 'laptop-1' }], [DENIED], bulk, 'one item');
  await refuses(t, server, [], 'Empty request list', bulk);

  const item = { principal_uri: 'user:alice', resource_uri: 'laptop-1', action: 'administer' };
  await refuses(t, server, [item, item, item, item], 'Too many requests. Maximum allowed: 3', bulk, 'over the limit');
  await decides(t, server, [item, item, item], [ALLOWED_ADMIN, ALLOWED_ADMIN, ALLOWED_ADMIN], bulk, 'at the limit');

  // An unusable item refuses the whole call, located by its index.
  await refusesAt(t, server, [item, { principal: {}, resource_uri: 'laptop-1' }, item], [['body', 1, 'principal']], bulk, 'an empty side');
  await refusesAt(t, server, [item, item, { principal: { attributes: 5 }, resource_uri: 'x' }], [['body', 2, 'principal', 'attributes']], bulk, 'a type error');
  await refusesAt(t, server, [{ principal: { attributes: [{ key: 'a', value: 1 }, { key: 'a', value: 2 }] }, resource_uri: 'x' }], [['body', 0, 'principal', 'attributes', 1, 'key']], bulk, 'a key twice');
  await refusesAt(t, server, [item, { principal: { uri: 'user:alice', type: 'resource' }, resource_uri: 'x' }], [['body', 1, 'principal', 'type']], bulk, 'a side of the wrong type');
  await refusesAt(t, server, item, [['body']], bulk, 'not a list');
  await refusesAt(t, server, [item, 'check please'], [['body', 1]], bulk, 'an item that is not an object');

  // A conflict in one item denies only that item.
  await decides(
    t,
    server,
    [
      item,
      { principal: { uri: 'user:bob', attributes: { department: 'it' } }, resource: { uri: 'laptop-1' }, action: 'administer' },
      { principal: { uri: 'user:alice', attributes: { role: 'admin' } }, resource: { uri: 'laptop-1' }, action: 'wipe' },
    ],
    [ALLOWED_ADMIN, { allowed: false, reason: conflict('user:bob', 'department') }, ALLOWED_WIPE],
    bulk,
    'a conflicting item',
  );
  // Asked to refuse them, the call is refused naming each conflicting item, as /check refuses it alone.
  const bob = { principal: { uri: 'user:bob', attributes: { department: 'it' } }, resource: { uri: 'laptop-1' }, action: 'administer' };
  const refused = await server.call('POST', `${bulk}?conflicts=refuse`, [bob, item, bob]);
  t.equal(refused.status, 422);
  t.same(refused.body.detail, [0, 2].map((index) => ({ loc: ['body', index], msg: conflict('user:bob', 'department'), type: 'attribute_conflict' })));
  t.same((await server.call('POST', '/check', bob)).body, { detail: conflict('user:bob', 'department') }, "each message is /check's detail");
  await decides(t, server, [item, item], [ALLOWED_ADMIN, ALLOWED_ADMIN], `${bulk}?conflicts=refuse`, 'without a conflict, answered as ever');
  t.equal((await server.call('POST', `${bulk}?conflicts=maybe`, [item])).status, 422, 'an unknown way to treat conflicts is refused');
});

t.test('on the front and in the worker pool, a bulk over --bulk-check-max-requests is 400 and one with two unusable items names both; /plan/bulk too', async (t) => {
  // Attributes only: in pool mode a worker reads and decides these bulks.
  const usable = { principal_attributes: { department: 'it' }, resource_attributes: { kind: 'laptop' }, action: 'administer' };
  const noPrincipal = { principal: {}, resource_attributes: { kind: 'laptop' } };
  const noResource = { principal_attributes: { department: 'it' }, resource: { attributes: {} } };
  const planOf = (principal: unknown) => ({ principal, action: 'administer' });
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await emptyServer(t, { evaluation, workers: 1, bulkCheckMaxRequests: 4 });
    await decides(t, server, [usable, usable, usable, usable], Array(4).fill({ allowed: false, reason: NO_POLICIES }), '/check/bulk', `${evaluation}: at the limit`);
    await refuses(t, server, [usable, usable, usable, usable, usable], 'Too many requests. Maximum allowed: 4', '/check/bulk', `${evaluation}: over it`);
    await refusesAt(t, server, [usable, noPrincipal, usable, noResource], [['body', 1, 'principal'], ['body', 3, 'resource']], '/check/bulk', `${evaluation}: both items, in order`);
    await refusesAt(
      t,
      server,
      [planOf({}), planOf({ attributes: { department: 'it' } }), planOf({ attributes: {} })],
      [['body', 0, 'principal'], ['body', 2, 'principal']],
      '/plan/bulk',
      `${evaluation}: /plan/bulk names both items, in order`,
    );
  }
});

t.test('bulk limit defaults to 1000', async (t) => {
  const server = await emptyServer(t);
  const item = { principal_attributes: { a: 1 }, resource_uri: 'r' };
  await decides(t, server, Array.from({ length: 1000 }, () => item), Array(1000).fill({ allowed: false, reason: NO_POLICIES }), '/check/bulk', '1,000 items');
  await refuses(t, server, Array.from({ length: 1001 }, () => item), 'Too many requests. Maximum allowed: 1000', '/check/bulk', '1,001 items');
});

t.test('POST /check-access answers a bare boolean', async (t) => {
  const server = await itServer(t);
  const access = '/check-access';
  const allowed = await server.call('POST', access, { principal: { uri: 'user:alice' }, resource: { attributes: { kind: 'laptop' } }, action: 'administer' });
  t.same([allowed.status, allowed.body], [200, true]);
  t.match(allowed.headers['content-type'], /^application\/json/);
  await decides(t, server, { principal: { uri: 'user:bob' }, resource: { uri: 'laptop-1' }, action: 'administer' }, false, access);
  await decides(t, server, { principal: { uri: 'user:alice', attributes: { role: 'admin' } }, resource: { uri: 'laptop-1' }, action: 'wipe' }, true, access);
  await decides(t, server, { principal_uri: 'user:alice', resource_uri: 'laptop-1', action: 'administer' }, true, access);
  await refusesAt(t, server, { principal: {}, resource: { uri: 'x' } }, [['body', 'principal']], access);
});
