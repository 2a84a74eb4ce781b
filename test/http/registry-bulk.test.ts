import t from 'tap';
import { startServer } from '../helpers/server.js';

// POST /admin/fetchers/registry/entities/$bulk against a real server on its real embedded store.

const BASE = '/admin/fetchers/registry/entities';
const BULK = `${BASE}/$bulk`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

const user = (index: number, extra: Record<string, unknown> = {}) => ({
  uri: `user:${index}`,
  type: 'principal',
  attributes: { department: index % 2 === 0 ? 'it' : 'hr', index, ...extra },
});

t.test('registers every entity of the list, in order, and answers them as single registration does', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const sent = [user(0), { attributes: [{ key: 'kind', value: 'laptop' }] }, user(2, { tags: ['a', 'b'] })];
  const response = await server.call('POST', BULK, sent);
  t.equal(response.status, 200);
  t.equal(response.body.length, 3, 'one entity per item, in order');
  t.equal(response.body[0].uri, 'user:0');
  t.match(response.body[1].uri, UUID, 'a missing uri is generated');
  t.equal(response.body[1].type, null);
  t.same(response.body[2].attributes.map((a: { key: string; value: unknown }) => [a.key, a.value]), [['department', 'it'], ['index', 2], ['tags', ['a', 'b']]]);
  t.ok(response.body.every((entity: { registered_at: string }) => entity.registered_at === response.body[0].registered_at), 'one registration time for the call');
  const single = await server.call('GET', `${BASE}/user%3A2`);
  t.same(single.body, response.body[2], 'stored exactly as answered');
  t.equal((await server.call('GET', `${BASE}/$count`)).body, 3);
  const page = await server.call('GET', `${BASE}?offset=0&limit=10`);
  t.same(page.body.map((entity: { uri: string }) => entity.uri), response.body.map((entity: { uri: string }) => entity.uri), 'registration order is the order of the list');
});

t.test('all or nothing: a taken uri, a uri given twice, or an invalid item registers nothing', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  t.equal((await server.call('POST', BASE, user(5))).status, 200);
  const count = async () => (await server.call('GET', `${BASE}/$count`)).body;

  const taken = await server.call('POST', BULK, [user(3), user(4), user(5), user(6)]);
  t.equal(taken.status, 409, 'a uri already registered: 409');
  t.same(taken.body, { detail: "Item 2: Entity 'user:5' already exists" });
  t.equal(await count(), 1, 'nothing of that call was registered');
  t.equal((await server.call('GET', `${BASE}/user%3A3`)).status, 404, 'not even the items before it');

  const twice = await server.call('POST', BULK, [user(7), user(8), user(7)]);
  t.equal(twice.status, 409, 'a uri given twice in the call: 409');
  t.same(twice.body, { detail: "Item 2: entity 'user:7' is also item 0 of this call" });
  t.equal(await count(), 1);

  const invalid = await server.call('POST', BULK, [user(9), user(10), { uri: 'user:11', attributes: {} }]);
  t.equal(invalid.status, 422, 'the validation of single registration, per item');
  t.same(invalid.body.detail[0].loc, ['body', 2, 'attributes'], 'the offending item and field named');
  const repeatedKey = await server.call('POST', BULK, [user(9), { uri: 'user:11', attributes: [{ key: 'a', value: 1 }, { key: 'a', value: 2 }] }]);
  t.equal(repeatedKey.status, 422, 'a key given twice in a list of attributes');
  t.same(repeatedKey.body.detail[0].loc, ['body', 1, 'attributes', 1, 'key']);
  t.equal(await count(), 1);

  const empty = await server.call('POST', BULK, []);
  t.equal(empty.status, 400);
  t.same(empty.body, { detail: 'Empty entity list' });
  const notList = await server.call('POST', BULK, user(12));
  t.equal(notList.status, 422);
  t.equal(await count(), 1);

  // The uri `$bulk` is an ordinary entity uri: registered one by one and read back as ever.
  t.equal((await server.call('POST', BASE, { uri: '$bulk', attributes: { a: 1 } })).status, 200);
  t.equal((await server.call('GET', `${BASE}/%24bulk`)).body.uri, '$bulk');
  t.equal((await server.call('DELETE', `${BASE}/$bulk`)).body, true);
});

t.test('at most --bulk-register-max-entities per call', async (t) => {
  const server = await startServer({ bulkRegisterMaxEntities: 3 });
  t.teardown(server.close);
  const tooMany = await server.call('POST', BULK, [user(0), user(1), user(2), user(3)]);
  t.equal(tooMany.status, 400);
  t.same(tooMany.body, { detail: 'Too many entities. Maximum allowed: 3' });
  t.equal((await server.call('POST', BULK, [user(0), user(1), user(2)])).status, 200, 'the limit itself is accepted');
});

t.test('checks see a bulk registration at once: the entity cache forgets what it held for those uris', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  await server.call('POST', '/admin/policies', {
    name: 'it',
    rules: [{ name: 'it', effect: 'allow', principal_conditions: [{ path: 'attributes.department', operator: '==', value: 'it' }], actions: ['read'] }],
  });
  const check = () => server.call('POST', '/check', { principal: { uri: 'user:0' }, resource: { attributes: { kind: 'doc' } }, action: 'read' });
  t.same((await check()).body, { allowed: false, reason: 'Action denied by default effect' }, 'unregistered: denied (and cached as unregistered)');
  t.equal((await server.call('POST', BULK, [user(0), user(1)])).status, 200);
  t.same((await check()).body, { allowed: true, reason: 'Rule it allowed the action in policy it' }, 'registered in bulk: decided on the new attributes');
});

t.test('admin authentication applies', async (t) => {
  const server = await startServer({ adminAuthRequired: true, adminApiKey: 'bulk-key', adminAuthFailuresPerMinute: 1000 });
  t.teardown(server.close);
  const refused = await server.call('POST', BULK, [user(0)]);
  t.equal(refused.status, 401);
  const wrong = await server.call('POST', BULK, [user(0)], { 'way-api-key': 'wrong' });
  t.equal(wrong.status, 401);
  const accepted = await server.call('POST', BULK, [user(0)], { 'way-api-key': 'bulk-key' });
  t.equal(accepted.status, 200);
  t.equal((await server.call('GET', `${BASE}/$count`, undefined, { 'way-api-key': 'bulk-key' })).body, 1, 'only the authenticated call registered');
});
