import t, { type Test } from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';

// Attribute keys are covered in check.test.ts; here: query strings, path parameters and policy fields.

const NAMES = ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString', 'valueOf'];
const JSON_TYPE = { 'content-type': 'application/json' };
const REGISTRY = '/admin/fetchers/registry/entities';
const prototypeKeys = () => Object.getOwnPropertyNames(Object.prototype).sort();

async function fresh(t: Test): Promise<TestServer> {
  const server = await startServer();
  t.teardown(server.close);
  return server;
}

t.test('prototype names in query strings are ordinary (or refused) parameters', async (t) => {
  const server = await fresh(t);
  const before = prototypeKeys();
  // More entities than the default page (10), so that a smuggled limit would show.
  const uris = Array.from({ length: 12 }, (_, index) => `e${String(index).padStart(2, '0')}`);
  for (const uri of uris) t.equal((await server.call('POST', REGISTRY, { uri, attributes: { a: 1 } })).status, 200, `${uri} registered`);
  const defaultPage = uris.slice(0, 10);
  const repeated = (parameter: string) => ({ detail: [{ loc: ['query', parameter], msg: 'must be of type integer', type: 'type_error' }] });
  for (const [query, status, expected] of [
    ['__proto__[limit]=5000', 200, defaultPage],
    ['__proto__.limit=5000', 200, defaultPage],
    ['constructor[prototype][limit]=5000', 200, defaultPage],
    ['limit=2&__proto__=x', 200, uris.slice(0, 2)],
    ['hasOwnProperty=1&limit=1', 200, uris.slice(0, 1)],
    ['offset=0&offset=1', 422, repeated('offset')],
    ['limit=2&limit=3', 422, repeated('limit')],
  ] as const) {
    const response = await server.call('GET', `${REGISTRY}?${query}`);
    t.equal(response.status, status, `${query}: ${status}`);
    t.same(status === 200 ? response.body.map((entity: { uri: string }) => entity.uri) : response.body, expected, `${query}: no limit smuggled in`);
  }
  for (const name of NAMES) {
    const simple = await server.call('POST', `/admin/policies/simple?name=${encodeURIComponent(name)}`, {
      principal: { attributes: { role: name } },
      resource: { attributes: { kind: 'doc' } },
      action: 'read',
    });
    t.equal(simple.status, 200, `simple policy named ${name}`);
    const deleted = await server.call('POST', `/delete-entity?uri=${encodeURIComponent(name)}`);
    t.same(deleted, { ...deleted, status: 404, body: { detail: 'Entity not found' } }, `delete-entity ${name} is not found`);
    const overridden = await server.call('POST', `/update-entity?override=${name}`, { uri: 'x', attributes: { a: 1 } });
    t.equal(overridden.status, 422, `override=${name} is not a boolean`);
  }
  const allowed = await server.call('POST', '/check', {
    principal: { attributes: { role: 'constructor' } },
    resource: { attributes: { kind: 'doc' } },
    action: 'read',
  });
  t.same(allowed.body, { allowed: true, reason: 'Rule constructor allowed the action in policy constructor' });
  t.strictSame(prototypeKeys(), before, 'Object.prototype is untouched');
});

t.test('prototype names as path parameters name nothing until they are created', async (t) => {
  const server = await fresh(t);
  for (const name of NAMES) {
    t.same((await server.call('GET', `/admin/policies/${name}`)).body, { detail: 'Policy not found' }, `policy ${name}`);
    t.same((await server.call('DELETE', `/admin/policies/${name}`)).body, { detail: 'Policy not found' });
    t.same((await server.call('GET', `${REGISTRY}/${name}`)).body, { detail: 'Entity not found' }, `entity ${name}`);
    t.same((await server.call('PUT', `${REGISTRY}/${name}`, { uri: name, attributes: { a: 1 } })).body, { detail: 'Entity not found' });
    t.equal((await server.call('POST', REGISTRY, { uri: name, attributes: { a: 1 } })).status, 200);
    t.same((await server.call('GET', `${REGISTRY}/${name}`)).body.uri, name);
    t.equal((await server.call('POST', '/admin/policies', { name, rules: [] })).status, 200);
    const slug = name.toLowerCase();
    t.same((await server.call('GET', `/admin/policies/${slug}`)).body.name, slug, `policy ${name}, stored as ${slug}`);
  }
  t.equal((await server.call('GET', `${REGISTRY}/$count`)).body, NAMES.length);
});

t.test('prototype names as policy fields are refused as extra fields; as paths they read own attributes only', async (t) => {
  const server = await fresh(t);
  const before = prototypeKeys();
  const rule = '{"name":"r","effect":"allow","actions":["a"]}';
  for (const text of [
    `{"name":"p","rules":[${rule}],"__proto__":{"default_effect":"allow"}}`,
    `{"name":"p","rules":[${rule}],"constructor":{"prototype":{"default_effect":"allow"}}}`,
    `{"name":"p","rules":[{"name":"r","effect":"allow","actions":["a"],"__proto__":{"principal_conditions":[]}}]}`,
    `{"name":"p","rules":[{"name":"r","effect":"allow","actions":["a"],"principal_conditions":[{"path":"uri","operator":"==","value":1,"__proto__":{}}]}]}`,
  ]) {
    const response = await server.send('POST', '/admin/policies', text, JSON_TYPE);
    t.equal(response.status, 422, text);
    t.equal(response.body.detail[0].type, 'extra_forbidden');
  }
  t.same((await server.call('GET', '/admin/policies')).body, [], 'nothing stored');

  for (const [index, name] of NAMES.entries()) {
    const policy = {
      name: `p${index}`,
      rules: [{ name: 'r', effect: 'allow', actions: [`act-${index}`], principal_conditions: [{ path: `attributes.${name}`, operator: '!=', value: 'no' }] }],
    };
    t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
    const check = (attributes: unknown) =>
      server.send('POST', '/check', `{"principal":{"attributes":${attributes}},"resource":{"attributes":{"k":1}},"action":"act-${index}"}`, JSON_TYPE);
    // An inherited member (e.g. Object.prototype.toString) is no attribute: `!=` is not satisfied.
    t.same((await check('{"other":1}')).body, { allowed: false, reason: 'Action denied by default effect' }, `${name} not inherited`);
    t.same((await check(`{"${name}":"yes"}`)).body, { allowed: true, reason: `Rule r allowed the action in policy p${index}` }, `own ${name}`);
  }
  const nested = {
    name: 'nested',
    rules: [{ name: 'r', effect: 'allow', actions: ['n'], principal_conditions: [{ path: 'attributes.a.constructor.name', operator: '==', value: 'Object' }] }],
  };
  t.equal((await server.call('POST', '/admin/policies', nested)).status, 200);
  const objectValue = await server.call('POST', '/check', { principal: { attributes: { a: {} } }, resource: { attributes: { k: 1 } }, action: 'n' });
  t.equal(objectValue.body.allowed, false, 'a path never walks into a prototype');
  t.strictSame(prototypeKeys(), before, 'Object.prototype is untouched');
});
