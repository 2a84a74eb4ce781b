import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { startServer, type TestServer } from '../helpers/server.js';
import type { Config } from '../../src/config/config.js';

// Relations (`value_from`), action attributes and context over real HTTP, in every form and route
// that takes a check; and policies written before them, stored and answered as they were.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

const OWNER = {
  name: 'documents',
  rules: [
    { name: 'owner edits', effect: 'allow', resource_conditions: [{ path: 'attributes.ownerID', operator: '==', value_from: 'principal.attributes.email' }], actions: ['edit'] },
    { name: 'soft delete', effect: 'allow', action_conditions: [{ path: 'attributes.soft', operator: '==', value: true }], resource_conditions: [{ path: 'attributes.ownerID', operator: '==', value_from: 'principal.attributes.email' }], actions: ['delete'] },
    { name: 'office only', effect: 'allow', context_conditions: [{ path: 'attributes.ip', operator: 'startswith', value: '10.' }], actions: ['print'] },
  ],
};

async function ownerServer(t: Test, overrides: Partial<Config> = {}): Promise<TestServer> {
  const server = await startServer(overrides);
  t.teardown(server.close);
  const created = await server.call('POST', '/admin/policies', OWNER);
  t.equal(created.status, 200, JSON.stringify(created.body));
  return server;
}

const alice = { attributes: { email: 'alice@example.com' } };
const hers = { attributes: { ownerID: 'alice@example.com' } };
const bobs = { attributes: { ownerID: 'bob@example.com' } };

t.test('the owner relation in every check form and route', async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await ownerServer(t, { evaluation });
    const nested = (resource: unknown, action: unknown = 'edit') => ({ principal: alice, resource, action });
    t.equal((await server.call('POST', '/check', nested(hers))).body.allowed, true, `${evaluation}: the owner may edit`);
    t.equal((await server.call('POST', '/check', nested(bobs))).body.allowed, false, `${evaluation}: another's document`);
    t.equal((await server.call('POST', '/check', { principal_attributes: alice.attributes, resource_attributes: hers.attributes, action: 'edit' })).body.allowed, true, 'flat form');
    t.equal((await server.call('POST', '/check', nested({ attributes: { title: 'x' } }))).body.allowed, false, 'a resource without an owner');
    t.equal((await server.call('POST', '/check', { principal: { attributes: { name: 'alice' } }, resource: hers, action: 'edit' })).body.allowed, false, 'a principal without the value referred to: the condition is false');
    t.equal((await server.call('POST', '/check-access', nested(hers))).body, true, '/check-access');
    const bulk = await server.call('POST', '/check/bulk', [nested(hers), nested(bobs), { principal_attributes: alice.attributes, resource_attributes: hers.attributes, action: { name: 'delete', attributes: { soft: true } } }]);
    t.same(bulk.body.map((answer: { allowed: boolean }) => answer.allowed), [true, false, true], `${evaluation}: /check/bulk items`);
  }
});

t.test('a reference reads registered attributes, after the registry merge', async (t) => {
  const server = await ownerServer(t);
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:alice', type: 'principal', attributes: { email: 'alice@example.com' } })).status, 200);
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'doc:1', type: 'resource', attributes: { ownerID: 'alice@example.com' } })).status, 200);
  t.equal((await server.call('POST', '/check', { principal: { uri: 'user:alice' }, resource: { uri: 'doc:1' }, action: 'edit' })).body.allowed, true);
  t.equal((await server.call('POST', '/check', { principal: { uri: 'user:alice' }, resource: bobs, action: 'edit' })).body.allowed, false);
});

t.test('action attributes: nested, flat, a plain string, and forms that disagree', async (t) => {
  const server = await ownerServer(t);
  const check = (fields: object) => server.call('POST', '/check', { principal: alice, resource: hers, ...fields });
  t.equal((await check({ action: { name: 'delete', attributes: { soft: true } } })).body.allowed, true, 'a soft delete');
  t.equal((await check({ action: { name: 'delete', attributes: { soft: false } } })).body.allowed, false, 'a hard delete');
  t.equal((await check({ action: 'delete' })).body.allowed, false, 'a name alone has no attributes');
  t.equal((await check({ action: 'delete', action_attributes: { soft: true } })).body.allowed, true, 'flat form');
  t.equal((await check({ action: { name: 'delete', attributes: [{ key: 'soft', value: true }] } })).body.allowed, true, 'attributes as a list of items');
  t.equal((await check({ action: { name: 'delete', attributes: { soft: true } }, action_attributes: { soft: true } })).body.allowed, true, 'both forms, agreeing');
  const disagree = await check({ action: { name: 'delete', attributes: { soft: true } }, action_attributes: { soft: false } });
  t.equal(disagree.status, 400);
  t.match(disagree.body.detail, /action.attributes and action_attributes disagree on 'soft'/);
  const extra = await check({ action: { name: 'delete', soft: true } });
  t.equal(extra.status, 422, 'an unknown field in the action');
  t.equal((await check({ action: { attributes: { soft: true } } })).status, 422, 'an action object without a name');
  const twice = await check({ action: { name: 'delete', attributes: [{ key: 'soft', value: true }, { key: 'soft', value: false }] } });
  t.equal(twice.status, 422, 'an action attribute given twice');
  t.same(twice.body.detail[0].loc, ['body', 'action', 'attributes', 1, 'key']);
});

t.test('context: a flat object of attributes', async (t) => {
  const server = await ownerServer(t);
  const check = (context: unknown) => server.call('POST', '/check', { principal: alice, resource: hers, action: 'print', context });
  t.equal((await check({ ip: '10.1.2.3' })).body.allowed, true);
  t.equal((await check({ ip: '192.168.1.1' })).body.allowed, false);
  t.equal((await check({})).body.allowed, false, 'no ip: the condition is false');
  t.equal((await check(null)).body.allowed, false, 'null: no context');
  t.equal((await check([{ key: 'ip', value: '10.1.2.3' }])).status, 422, 'a list is not a context');
  t.equal((await check({ '': 1 })).status, 422, 'an empty key');
});

t.test('conditions with value_from are refused where they cannot mean anything (422)', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const write = (condition: object, list = 'resource_conditions') => server.call('POST', '/admin/policies', { name: 'p', rules: [{ name: 'r', effect: 'allow', [list]: [condition], actions: ['read'] }] });
  const refused = async (condition: object, message: RegExp, list?: string) => {
    const answer = await write(condition, list);
    t.equal(answer.status, 422, JSON.stringify(condition));
    t.match(JSON.stringify(answer.body.detail), message, JSON.stringify(condition));
  };
  await refused({ path: 'attributes.a', operator: '==', value: 1, value_from: 'principal.uri' }, /either 'value' or 'value_from', not both/);
  await refused({ path: 'attributes.a', operator: '==' }, /"value"\],"msg":"Field required"/);
  await refused({ path: 'attributes.a', operator: 'exists', value_from: 'principal.uri' }, /takes no value_from/);
  await refused({ path: 'attributes.a', operator: 'exists', value: 1 }, /takes no value/);
  await refused({ path: 'attributes.a', operator: '==', value_from: 'owner.attributes.x' }, /must start with 'principal.', 'resource.', 'action.' or 'context.'/);
  await refused({ path: 'attributes.a', operator: '==', value_from: 'principal' }, /must start with/);
  await refused({ path: 'attributes.a', operator: '==', value_from: 'principal.email' }, /after 'principal.', the path must be 'uri' or 'attributes.<key>'/);
  await refused({ path: 'attributes.a', operator: '==', value_from: 'context.uri' }, /after 'context.', the path must be 'time' or 'attributes.<key>'/);
  await refused({ path: 'attributes.a', operator: '==', value_from: 'principal.attributes..x' }, /empty segment/);
  await refused({ path: 'attributes.a', operator: '==', value_from: 'principal.attributes.a\u0000' }, /control characters/);
  await refused({ path: 'attributes.a', operator: '==', value_from: `principal.attributes.${'a'.repeat(2000)}` }, /more than 1034 characters/);
  await refused({ path: 'uri', operator: '==', value: 'x' }, /path must be 'name' or 'attributes.<key>'/, 'action_conditions');
  await refused({ path: 'name', operator: '==', value: 'x' }, /path must be 'time' or 'attributes.<key>'/, 'context_conditions');
  t.equal((await write({ path: 'name', operator: '==', value_from: 'context.attributes.allowed' }, 'action_conditions')).status, 200, 'the action name compared with the context');
});

t.test('policies written before relations are stored and answered byte for byte as they were, in both operator styles', async (t) => {
  const fixture = JSON.parse(readFileSync(`${ROOT}test/fixtures/policies-before-relations.json`, 'utf8'));
  for (const style of ['spec', 'eunomia'] as const) {
    const server = await startServer({ operatorStyle: style });
    t.teardown(server.close);
    for (const policy of fixture.policies) t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
    const raw = async (path: string) => (await request(server.url + path)).body.text();
    t.equal(await raw('/admin/policies'), fixture.answers[style].list, `${style}: the list`);
    t.equal(await raw('/admin/policies/old-style'), fixture.answers[style].one, `${style}: one policy`);
  }
});

t.test('a policy using relations is answered with them, in both operator styles', async (t) => {
  for (const style of ['spec', 'eunomia'] as const) {
    const server = await startServer({ operatorStyle: style });
    t.teardown(server.close);
    const created = await server.call('POST', '/admin/policies', OWNER);
    const rules = created.body.rules;
    t.same(rules[0].resource_conditions, [{ path: 'attributes.ownerID', operator: style === 'spec' ? '==' : 'equals', value_from: 'principal.attributes.email' }]);
    t.same(rules[1].action_conditions, [{ path: 'attributes.soft', operator: style === 'spec' ? '==' : 'equals', value: true }]);
    t.same(rules[2].context_conditions, [{ path: 'attributes.ip', operator: 'startswith', value: '10.' }]);
    t.notOk('action_conditions' in rules[0], 'a rule without action conditions has no such field');
    t.same((await server.call('GET', '/admin/policies/documents')).body, created.body);
  }
});

t.test('explain: both sides of a relation, the reference and what it resolved to', async (t) => {
  const server = await ownerServer(t);
  const answer = await server.call('POST', '/check?explain=true', { principal: alice, resource: bobs, action: { name: 'edit', attributes: { why: 'typo' } }, context: { ip: '10.0.0.1' } });
  t.equal(answer.status, 200);
  t.same(answer.body.explain.policies[0].rules[0].failed, {
    side: 'resource',
    path: 'attributes.ownerID',
    operator: '==',
    value_from: 'principal.attributes.email',
    expected: 'alice@example.com',
    actual: 'bob@example.com',
  });
  t.same(answer.body.explain.action_attributes, { why: 'typo' });
  t.same(answer.body.explain.context, { ip: '10.0.0.1' });
  const unresolved = await server.call('POST', '/check?explain=true', { principal: { attributes: { name: 'alice' } }, resource: bobs, action: 'edit' });
  t.same(unresolved.body.explain.policies[0].rules[0].failed, { side: 'resource', path: 'attributes.ownerID', operator: '==', value_from: 'principal.attributes.email', actual: 'bob@example.com', value_from_missing: true });
  t.notOk('context' in unresolved.body.explain, 'no context sent, none explained');
  const printing = await server.call('POST', '/check?explain=true', { principal: alice, resource: hers, action: 'print' });
  t.same(printing.body.explain.policies[0].rules[0].failed, { side: 'context', path: 'attributes.ip', operator: 'startswith', expected: '10.', missing: true });
});

t.test('plans: references to the known side become constants; action attributes and context are known', async (t) => {
  const server = await ownerServer(t);
  const planned = await server.call('POST', '/plan', { principal: alice, action: 'edit' });
  t.equal(planned.status, 200);
  t.same(planned.body.condition, { path: 'attributes.ownerID', operator: '==', value: 'alice@example.com' });
  t.same(planned.body.mongodb, { 'attributes.ownerID': { $eq: 'alice@example.com', $not: { $type: 'array' } } });
  t.same((await server.call('POST', '/plan', { principal: { attributes: { name: 'x' } }, action: 'edit' })).body.condition, false, 'nothing to relate to: nothing allowed');
  const soft = await server.call('POST', '/plan', { principal: alice, action: { name: 'delete', attributes: { soft: true } } });
  t.same(soft.body.condition, { path: 'attributes.ownerID', operator: '==', value: 'alice@example.com' });
  t.same((await server.call('POST', '/plan', { principal: alice, action: 'delete', action_attributes: { soft: false } })).body.condition, false);
  t.equal((await server.call('POST', '/plan', { principal: alice, action: 'print', context: { ip: '10.9.9.9' } })).body.kind, 'always_allowed');
  const bulk = await server.call('POST', '/plan/bulk', [
    { principal: alice, action: 'print', context: { ip: '8.8.8.8' } },
    { principal_attributes: alice.attributes, action: 'edit' },
  ]);
  t.same(bulk.body.map((answer: { kind: string }) => answer.kind), ['always_denied', 'conditional']);
});

t.test('a plan that cannot state a relation between a known and an open value of the resource is refused with 400 saying which', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const rule = { name: 'r', effect: 'allow', resource_conditions: [{ path: 'attributes.path', operator: 'startswith', value_from: 'resource.attributes.root' }], actions: ['read'] };
  t.equal((await server.call('POST', '/admin/policies', { name: 'files', rules: [rule] })).status, 200);
  const open = await server.call('POST', '/plan', { principal: alice, action: 'read' });
  t.same(open.body.condition, { path: 'attributes.path', operator: 'startswith', value_from: 'resource.attributes.root' }, 'both values open: the relation as written');
  t.ok(open.body.mongodb.$expr !== undefined, 'stated with $expr');
  const refused = await server.call('POST', '/plan', { principal: alice, action: 'read', resource: { attributes: { path: '/a' } } });
  t.equal(refused.status, 400);
  t.match(refused.body.detail, /^The plan cannot be stated: condition attributes.path startswith resource.attributes.root relates a known attribute to an open one/);
  const bulk = await server.call('POST', '/plan/bulk', [{ principal: alice, action: 'read' }, { principal: alice, action: 'read', resource_attributes: { path: '/a' } }]);
  t.equal(bulk.status, 400);
  t.match(bulk.body.detail, /^Item 1: The plan cannot be stated/);
});

const EXPENSES = {
  name: 'expenses',
  rules: [
    {
      name: 'managers approve their department',
      effect: 'allow',
      principal_conditions: [
        { path: 'attributes.role', operator: '==', value: 'manager' },
        { path: 'attributes.department', operator: '==', value_from: 'resource.attributes.department' },
      ],
      actions: ['approve'],
    },
    { name: 'tagged', effect: 'allow', principal_conditions: [{ path: 'attributes.team', operator: 'startswith', value_from: 'resource.attributes.prefix' }], actions: ['tag'] },
  ],
};
const manager = { attributes: { role: 'manager', department: 'sales' } };

t.test('a principal condition referring to the resource: stored, decided, explained and planned', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  t.same((await server.call('POST', '/admin/policies/validate', EXPENSES)).body, { valid: true, warnings: [] }, 'validated without warnings');
  const impossible = { name: 'levels', rules: [{ name: 'r', effect: 'allow', principal_conditions: [{ path: 'attributes.level', operator: 'gt', value_from: 'resource.uri' }], actions: ['read'] }] };
  t.match((await server.call('POST', '/admin/policies/validate', impossible)).body.warnings, [
    { loc: ['body', 'rules', 0, 'principal_conditions'], type: 'never_matches', msg: /'gt' compares numbers, and resource.uri is always a string/ },
  ], 'the checks of relations apply to it');
  const created = await server.call('POST', '/admin/policies', EXPENSES);
  t.equal(created.status, 200, JSON.stringify(created.body));
  t.same(created.body.rules[0].principal_conditions[1], { path: 'attributes.department', operator: '==', value_from: 'resource.attributes.department' });
  const check = (principal: unknown, resource: unknown) => server.call('POST', '/check', { principal, resource, action: 'approve' });
  t.equal((await check(manager, { attributes: { department: 'sales', amount: 120 } })).body.allowed, true, 'their own department');
  t.equal((await check(manager, { attributes: { department: 'it', amount: 120 } })).body.allowed, false, 'another department');
  t.equal((await check(manager, { attributes: { amount: 120 } })).body.allowed, false, 'a resource without a department: the condition is false');
  t.equal((await check({ attributes: { role: 'manager' } }, { attributes: { department: 'sales' } })).body.allowed, false, 'a principal without a department');

  const explained = await server.call('POST', '/check?explain=true', { principal: manager, resource: { attributes: { department: 'it' } }, action: 'approve' });
  t.same(explained.body.explain.policies[0].rules[0].failed, {
    side: 'principal',
    path: 'attributes.department',
    operator: '==',
    value_from: 'resource.attributes.department',
    expected: 'it',
    actual: 'sales',
  });
  const unresolved = await server.call('POST', '/check?explain=true', { principal: manager, resource: { attributes: { amount: 120 } }, action: 'approve' });
  t.same(unresolved.body.explain.policies[0].rules[0].failed, { side: 'principal', path: 'attributes.department', operator: '==', value_from: 'resource.attributes.department', actual: 'sales', value_from_missing: true });

  const planned = await server.call('POST', '/plan', { principal: manager, action: 'approve' });
  t.equal(planned.status, 200);
  t.same(planned.body, {
    kind: 'conditional',
    condition: { path: 'attributes.department', operator: '==', value: 'sales' },
    reason: 'Allowed for the resources that satisfy the condition',
    mongodb: { 'attributes.department': { $eq: 'sales', $not: { $type: 'array' } } },
  });
  t.same((await server.call('POST', '/plan', { principal: { attributes: { role: 'manager' } }, action: 'approve' })).body.condition, false, 'a principal without a department: nothing allowed');
  t.same((await server.call('POST', '/plan', { principal: { attributes: { role: 'clerk', department: 'sales' } }, action: 'approve' })).body.condition, false, 'not a manager');
  const known = (department: string) => server.call('POST', '/plan', { principal: manager, action: 'approve', resource_attributes: { department } });
  t.equal((await known('sales')).body.kind, 'always_allowed', 'the department known and the same: decided');
  t.equal((await known('it')).body.kind, 'always_denied', 'the department known and another: decided');
});

t.test('a principal condition relating the principal to an open value of the resource by an operator that reads one way: its plan is refused with 400 saying which', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', EXPENSES)).status, 200);
  const refused = await server.call('POST', '/plan', { principal: { attributes: { team: 'sales-emea' } }, action: 'tag' });
  t.equal(refused.status, 400);
  t.equal(
    refused.body.detail,
    "The plan cannot be stated: condition attributes.team startswith resource.attributes.prefix, on the principal, relates it to an open value of the resource by 'startswith', which a plan cannot state: give the resource's attributes.prefix among the known ones, or ask /check",
  );
  const known = await server.call('POST', '/plan', { principal: { attributes: { team: 'sales-emea' } }, action: 'tag', resource_attributes: { prefix: 'sales' } });
  t.equal(known.body.kind, 'always_allowed', 'with the resource value known, decided');
  t.equal((await server.call('POST', '/plan', { principal: { attributes: { role: 'manager' } }, action: 'tag' })).body.condition, false, 'the principal has no value there: the condition is false');
  t.equal((await server.call('POST', '/check', { principal: { attributes: { team: 'sales-emea' } }, resource: { attributes: { prefix: 'sales' } }, action: 'tag' })).body.allowed, true, '/check decides it');
});

t.test('hostile relations and contexts are refused or bounded, and the server goes on answering', async (t) => {
  const server = await ownerServer(t, { maxJsonDepth: 20, maxStringLength: 1000 });
  const deep = (depth: number): unknown => (depth === 0 ? 'x' : { k: deep(depth - 1) });
  t.equal((await server.call('POST', '/check', { principal: alice, resource: hers, action: 'print', context: { ip: deep(50) } })).status, 422, 'a context nested too deep');
  t.equal((await server.call('POST', '/check', { principal: alice, resource: hers, action: 'print', context: { ip: 'x'.repeat(5000) } })).status, 422, 'a context string too long');
  t.equal((await server.call('POST', '/check', { principal: alice, resource: hers, action: { name: 'x'.repeat(5000) } })).status, 422, 'an action name too long');
  const manyKeys = Object.fromEntries(Array.from({ length: 20_000 }, (_, index) => [`k${index}`, index]));
  const wide = await server.call('POST', '/check', { principal: alice, resource: hers, action: 'print', context: manyKeys });
  t.ok(wide.status === 200 || wide.status === 413, `a wide context is decided or refused by the body limit (${wide.status})`);
  const deepPath = `principal.attributes.${Array.from({ length: 450 }, () => 'a').join('.')}`;
  t.equal((await server.call('POST', '/admin/policies', { name: 'deep', rules: [{ name: 'r', effect: 'allow', resource_conditions: [{ path: 'attributes.a', operator: '==', value_from: deepPath }], actions: ['read'] }] })).status, 200, 'a reference as long as a path is accepted');
  t.equal((await server.call('POST', '/check', { principal: { attributes: { a: deep(10) } }, resource: { attributes: { a: 1 } }, action: 'read' })).body.allowed, false, 'and reads nothing past what is there');
  t.equal((await server.call('POST', '/check', { principal: alice, resource: hers, action: 'edit' })).body.allowed, true, 'still answering');
});
