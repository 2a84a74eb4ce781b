import t from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';

// A field Verdict does not know in its own check, bulk, plan and registry bodies is a typo more often
// than not ("acton" makes the action fall back to `access`): 422 naming the field, never ignored.

const ENTITIES = '/admin/fetchers/registry/entities';
const EXTRA = { msg: 'Extra inputs are not permitted', type: 'extra_forbidden' };

async function fresh(t: { teardown(fn: () => unknown): void }, overrides = {}): Promise<TestServer> {
  const server = await startServer(overrides);
  t.teardown(server.close);
  return server;
}

const check = { principal: { attributes: { role: 'reader' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' };

/** Bodies that hold one unknown field each, and where it is, with `at` the place of the body's item. */
const checkTypos = (at: (string | number)[]): [unknown, (string | number)[]][] => [
  [{ ...check, acton: 'write' }, [...at, 'acton']],
  [{ ...check, principal: { ...check.principal, atributes: { role: 'admin' } } }, [...at, 'principal', 'atributes']],
  [{ ...check, resource: { ...check.resource, uri: 'doc:1', kind: 'doc' } }, [...at, 'resource', 'kind']],
  [{ principal_uri: 'user:1', principal_atributes: { role: 'admin' }, resource_attributes: { kind: 'doc' } }, [...at, 'principal_atributes']],
  [{ ...check, principal: { attributes: [{ key: 'role', value: 'reader', vaule: 'admin' }] } }, [...at, 'principal', 'attributes', 0, 'vaule']],
];

t.test('/check and /check-access: an unknown field, nested or flat, is 422 naming it', async (t) => {
  const server = await fresh(t);
  for (const route of ['/check', '/check-access']) {
    for (const [body, loc] of checkTypos(['body'])) {
      const answer = await server.call('POST', route, body);
      t.equal(answer.status, 422, `${route} ${loc.join('.')}`);
      t.same(answer.body.detail, [{ loc, ...EXTRA }]);
    }
  }
});

t.test('/check/bulk: an unknown field in any item is 422 naming it, on the front and in the workers', async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await fresh(t, { evaluation, workers: 1 });
    for (const [item, loc] of checkTypos(['body', 2])) {
      const answer = await server.call('POST', '/check/bulk', [check, check, item, check]);
      t.equal(answer.status, 422, `${evaluation} ${loc.join('.')}`);
      t.same(answer.body.detail, [{ loc, ...EXTRA }]);
    }
    t.equal((await server.call('POST', '/check/bulk', [check, check])).status, 200, 'the same items without the typos are decided');
  }
});

t.test('/plan and /plan/bulk: an unknown field of the principal is 422 naming it', async (t) => {
  const server = await fresh(t);
  const plan = { principal: { attributes: { role: 'reader' }, atributes: { role: 'admin' } }, action: 'read' };
  const single = await server.call('POST', '/plan', plan);
  t.equal(single.status, 422);
  t.same(single.body.detail, [{ loc: ['body', 'principal', 'atributes'], ...EXTRA }]);
  const bulk = await server.call('POST', '/plan/bulk', [{ principal: { attributes: { role: 'reader' } } }, plan]);
  t.equal(bulk.status, 422);
  t.same(bulk.body.detail, [{ loc: ['body', 1, 'principal', 'atributes'], ...EXTRA }]);
  const acton = await server.call('POST', '/plan', { principal: { attributes: { role: 'reader' } }, acton: 'read' });
  t.same(acton.body.detail, [{ loc: ['body', 'acton'], ...EXTRA }], 'as the top level already was');
});

t.test('registry writes: an unknown field is 422 naming it, and nothing is written', async (t) => {
  const server = await fresh(t);
  const entity = { uri: 'user:ann', type: 'principal', attributes: { role: 'reader' } };
  const writes: [string, string, unknown, (string | number)[]][] = [
    ['POST', ENTITIES, { ...entity, atributes: { role: 'admin' } }, ['body', 'atributes']],
    ['POST', ENTITIES, { ...entity, attributes: [{ key: 'role', value: 'reader', registered_at: '2024-01-01T00:00:00Z' }] }, ['body', 'attributes', 0, 'registered_at']],
    ['POST', `${ENTITIES}/$bulk`, [entity, { ...entity, uri: 'user:bob', typ: 'principal' }], ['body', 1, 'typ']],
    ['POST', '/register-entity', { ...entity, atributes: { role: 'admin' } }, ['body', 'atributes']],
  ];
  for (const [method, path, body, loc] of writes) {
    const answer = await server.call(method, path, body);
    t.equal(answer.status, 422, `${method} ${path} ${loc.join('.')}`);
    t.same(answer.body.detail, [{ loc, ...EXTRA }]);
  }
  t.equal((await server.call('GET', `${ENTITIES}/$count`)).body, 0, 'nothing registered');

  t.equal((await server.call('POST', ENTITIES, entity)).status, 200);
  const updates: [string, string, unknown, (string | number)[]][] = [
    ['PUT', `${ENTITIES}/user%3Aann`, { uri: 'user:ann', attributes: { role: 'admin' }, overide: true }, ['body', 'overide']],
    ['POST', '/update-entity', { uri: 'user:ann', attributes: { role: 'admin' }, atributes: {} }, ['body', 'atributes']],
    ['POST', '/delete-entity', { uri: 'user:ann', url: 'user:ann' }, ['body', 'url']],
  ];
  for (const [method, path, body, loc] of updates) {
    const answer = await server.call(method, path, body);
    t.equal(answer.status, 422, `${method} ${path} ${loc.join('.')}`);
    t.same(answer.body.detail, [{ loc, ...EXTRA }]);
  }
  const stored = await server.call('GET', `${ENTITIES}/user%3Aann`);
  t.same(stored.body.attributes.map((attribute: { key: string; value: unknown }) => [attribute.key, attribute.value]), [['role', 'reader']], 'nothing changed');
});
