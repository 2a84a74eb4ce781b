import t, { type Test } from 'tap';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { startServer, temporaryDataDir, type TestServer } from '../helpers/server.js';
import { CLI, startVerdict } from '../helpers/child.js';

const REGISTRY = '/admin/fetchers/registry/entities';


const EVERY_TYPE = {
  string: 'text',
  numericString: '123',
  jsonString: '[1,2]',
  emptyString: '',
  unicode: 'Ærø – 東京 – \u0000 – 😀',
  integer: 42,
  negative: -3,
  float: 3.25,
  small: 1e-7,
  big: 9007199254740991,
  zero: 0,
  yes: true,
  no: false,
  nothing: null,
  list: [1, 'a', true, null, [2], { b: 'c' }],
  emptyList: [],
  object: { city: 'Oslo', geo: { lat: 59.91, lon: 10.75 }, tags: ['x', 'y'], none: null },
  emptyObject: {},
};

const rule = (name: string, effect: 'allow' | 'deny', principal: unknown[], resource: unknown[], actions: string[]) => ({
  name,
  effect,
  principal_conditions: principal,
  resource_conditions: resource,
  actions,
});

/** Checks whose answers depend on policy order, on the replaced policy and on registered values of every type. */
const CHECKS = [
  { principal: { uri: 'user:typed' }, resource: { uri: 'doc:1' }, action: 'read' },
  { principal: { uri: 'user:typed' }, resource: { uri: 'doc:1' }, action: 'write' },
  { principal: { uri: 'user:typed' }, resource: { uri: 'doc:1' }, action: 'delete' },
  { principal: { uri: 'user:other' }, resource: { uri: 'doc:1' }, action: 'read' },
  { principal: { attributes: { yes: true, integer: 42 } }, resource: { attributes: { kind: 'doc' } }, action: 'read' },
  { principal: { attributes: { numericString: 123 } }, resource: { attributes: { kind: 'doc' } }, action: 'audit' },
  { principal: { attributes: { numericString: '123' } }, resource: { attributes: { kind: 'doc' } }, action: 'audit' },
  { principal_uri: 'user:typed', resource_uri: 'doc:1', action: 'audit' },
  { principal: { uri: 'user:typed' }, resource: { uri: 'unregistered' }, action: 'read' },
];

async function populate(s: TestServer, t: Tap) {
  const ok = async (method: string, path: string, body?: unknown) => {
    const response = await s.call(method, path, body);
    t.equal(response.status, 200, `${method} ${path}`);
    return response.body;
  };
  await ok('POST', '/admin/policies', {
    name: 'First',
    description: 'will be replaced',
    rules: [rule('old', 'allow', [], [], ['read'])],
    default_effect: 'deny',
  });
  await ok('POST', '/admin/policies', {
    name: 'Second',
    rules: [
      rule('writers', 'allow', [{ path: 'attributes.integer', operator: 'gt', value: 41 }], [{ path: 'attributes.kind', operator: '==', value: 'doc' }], ['write']),
      rule('typed', 'allow', [{ path: 'attributes.object.geo.lat', operator: '>=', value: 59.91 }, { path: 'attributes.list.5.b', operator: '==', value: 'c' }], [], ['audit']),
      rule('strings', 'allow', [{ path: 'attributes.numericString', operator: '==', value: '123' }], [], ['audit']),
    ],
    default_effect: 'allow',
  });
  await ok('POST', '/admin/policies/simple?name=Third', {
    principal: { attributes: { yes: true, integer: 42 } },
    resource: { attributes: { kind: 'doc' } },
    action: 'read',
  });
  await ok('POST', '/create-policy', {
    name: 'Fourth',
    description: null,
    rules: [rule('no-deletes', 'deny', [{ path: 'attributes.nothing', operator: '==', value: null }], [], ['delete'])],
    default_effect: 'deny',
  });
  // replace the first: it must keep its place (first in order), so its deny rule is named first
  await ok('PUT', '/admin/policies/first', {
    name: 'first',
    description: 'replaced',
    rules: [
      rule('deny-others', 'deny', [{ path: 'uri', operator: '==', value: 'user:other' }], [], ['read']),
      rule('readers', 'allow', [{ path: 'attributes.yes', operator: '==', value: true }], [{ path: 'attributes.kind', operator: 'in', value: ['doc', 'img'] }], ['read']),
    ],
    default_effect: 'deny',
  });
  await ok('DELETE', '/admin/policies/third');
  await ok('POST', '/admin/policies/simple?name=Third', {
    principal: { attributes: { integer: 42 } },
    resource: { attributes: { kind: 'doc' } },
    action: 'read',
  });

  await ok('POST', REGISTRY, { uri: 'user:typed', type: 'principal', attributes: EVERY_TYPE });
  await ok('POST', REGISTRY, { uri: 'doc:1', type: 'resource', attributes: [{ key: 'kind', value: 'doc' }] });
  await ok('POST', REGISTRY, { uri: 'user:other', type: 'principal', attributes: { yes: true, nothing: null } });
  await ok('POST', REGISTRY, { type: 'resource', attributes: { generated: [true] } });
  await ok('POST', '/register-entity', { uri: 'tmp/x y', attributes: { a: 1 } });
  await ok('PUT', `${REGISTRY}/${encodeURIComponent('user:other')}`, { uri: 'user:other', attributes: { level: 1.5 } });
  await ok('POST', '/update-entity?override=true', { uri: 'tmp/x y', attributes: { b: { c: [null] } } });
  await ok('POST', REGISTRY, { uri: 'deleted', attributes: { a: 1 } });
  await ok('DELETE', `${REGISTRY}/deleted`);
}

type Tap = Test;

/** Everything a client can read back, as JSON text (key order included). */
async function snapshot(s: TestServer) {
  const read = async (path: string) => {
    const response = await s.call('GET', path);
    if (response.status !== 200) throw new Error(`GET ${path}: ${response.status}`);
    return response.body;
  };
  const list = await read(`${REGISTRY}?limit=1000`);
  const entities: Record<string, string> = {};
  for (const entity of list) entities[entity.uri] = JSON.stringify(await read(`${REGISTRY}/${encodeURIComponent(entity.uri)}`));
  const policies = await read('/admin/policies');
  const eachPolicy: Record<string, string> = {};
  for (const policy of policies) eachPolicy[policy.name] = JSON.stringify(await read(`/admin/policies/${policy.name}`));
  const checks = [];
  for (const check of CHECKS) {
    const response = await s.call('POST', '/check', check);
    checks.push({ status: response.status, body: response.body });
  }
  const bulk = await s.call('POST', '/check/bulk', CHECKS);
  return {
    policies: JSON.stringify(policies),
    eachPolicy,
    entityList: JSON.stringify(list),
    entities,
    count: await read(`${REGISTRY}/$count`),
    checks,
    bulk: JSON.stringify(bulk.body),
  };
}

t.test('policies, entities and decisions survive a restart on the same data directory', async (t) => {
  const dataDir = temporaryDataDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));

  const first = await startServer({ dataDir });
  let before;
  try {
    await populate(first, t);
    before = await snapshot(first);
  } finally {
    await first.close();
  }

  // sanity of what was written, so that "equal after restart" means something
  const policies = JSON.parse(before.policies);
  t.same(policies.map((p: any) => p.name), ['first', 'second', 'fourth', 'third'], 'creation order; a replace keeps its place');
  t.equal(policies[0].description, 'replaced');
  t.equal(before.count, 5);
  const typed = JSON.parse(before.entities['user:typed']!);
  t.strictSame(Object.fromEntries(typed.attributes.map((a: any) => [a.key, a.value])), EVERY_TYPE, 'values of every JSON type');
  t.same(JSON.parse(before.entityList).map((e: any) => e.uri).filter((u: string) => !/^[0-9a-f-]{36}$/.test(u)), ['user:typed', 'doc:1', 'user:other', 'tmp/x y']);
  t.same(before.checks, [
    { status: 200, body: { allowed: true, reason: 'Rule readers allowed the action in policy first' } },
    { status: 200, body: { allowed: true, reason: 'Rule writers allowed the action in policy second' } },
    { status: 200, body: { allowed: false, reason: 'Rule no-deletes denied the action in policy fourth' } },
    { status: 200, body: { allowed: false, reason: 'Rule deny-others denied the action in policy first' } },
    { status: 200, body: { allowed: true, reason: 'Rule readers allowed the action in policy first' } },
    { status: 200, body: { allowed: false, reason: 'Action denied by default effect' } },
    { status: 200, body: { allowed: true, reason: 'Rule strings allowed the action in policy second' } },
    { status: 200, body: { allowed: true, reason: 'Rule typed allowed the action in policy second' } },
    { status: 200, body: { allowed: false, reason: 'Action denied by default effect' } },
  ]);
  t.same(JSON.parse(before.bulk), before.checks.map((c) => c.body), 'bulk agrees');

  const second = await startServer({ dataDir });
  t.teardown(second.close);
  const after = await snapshot(second);
  t.equal(after.policies, before.policies, 'policy list identical, order included');
  t.same(after.eachPolicy, before.eachPolicy, 'each policy identical');
  t.equal(after.entityList, before.entityList, 'entity list identical, order included');
  t.same(after.entities, before.entities, 'each entity identical, timestamps included');
  t.equal(after.count, before.count);
  t.same(after.checks, before.checks, 'checks decide the same');
  t.equal(after.bulk, before.bulk);

  // writes keep working after the restart and keep the order
  t.equal((await second.call('POST', '/admin/policies', { name: 'fifth', rules: [], default_effect: 'deny' })).status, 200);
  t.same((await second.call('GET', '/admin/policies')).body.map((p: any) => p.name), ['first', 'second', 'fourth', 'third', 'fifth']);
  t.equal((await second.call('POST', REGISTRY, { uri: 'user:typed', attributes: { a: 1 } })).status, 409, 'uniqueness survives');
  t.equal((await second.call('POST', REGISTRY, { uri: 'late', attributes: { a: 1 } })).status, 200);
  const lastPage = (await second.call('GET', `${REGISTRY}?offset=5`)).body;
  t.same(lastPage.map((e: any) => e.uri), ['late'], 'new entity comes last');
});


t.test('the real CLI serves from --data-dir and exits 0 on SIGTERM', async (t) => {
  t.ok(existsSync(CLI), `the compiled CLI is at ${CLI}`);
  const dataDir = mkdtempSync(join(tmpdir(), 'verdict-cli-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const server = await startVerdict(t, ['--store', 'embedded', '--data-dir', dataDir, '--log-level', 'warn'], { cwd: dataDir });
  const url = server.url;
  const post = async (path: string, body: unknown) => {
    const response = await request(url + path, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    return { status: response.statusCode, body: await response.body.json() };
  };
  t.equal((await post('/admin/policies', { name: 'p', rules: [rule('r', 'allow', [{ path: 'attributes.a', operator: '==', value: 1 }], [], ['go'])] })).status, 200);
  t.equal((await post(REGISTRY, { uri: 'u', attributes: { a: 1 } })).status, 200);
  const check = await post('/check', { principal: { uri: 'u' }, resource: { attributes: { b: 2 } }, action: 'go' });
  t.same(check, { status: 200, body: { allowed: true, reason: 'Rule r allowed the action in policy p' } });

  server.process.kill('SIGTERM');
  const { code, signal, stderr } = await server.exited;
  t.equal(code, 0, 'exit code 0 after SIGTERM');
  t.equal(signal, null);
  t.equal(stderr, '', 'nothing on stderr');
  t.ok(existsSync(join(dataDir, 'verdict.db')), 'the store is in --data-dir');

  // the CLI's data is read by a server on the same directory
  const again = await startServer({ dataDir });
  t.teardown(again.close);
  t.same((await again.call('POST', '/check', { principal: { uri: 'u' }, resource: { attributes: { b: 2 } }, action: 'go' })).body, check.body);
});
