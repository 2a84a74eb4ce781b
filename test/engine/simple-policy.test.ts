import t from 'tap';
import { DEFAULT_CONFIG as LIMITS } from '../../src/config/config.js';
import { buildSimplePolicy, compile, evaluate, policyIssues } from '../../src/engine/index.js';
import { entity, request } from './helpers.js';

t.test('attributes become == conditions with their values as sent', async (t) => {
  const policy = buildSimplePolicy(
    'alice-docs',
    { attributes: new Map<string, unknown>([['role', 'admin'], ['level', 3], ['tags', ['a', 'b']], ['flag', true], ['none', null]]) },
    { attributes: new Map<string, unknown>([['kind', 'doc'], ['meta', { owner: 'alice' }]]) },
    'read',
    'spec',
  );
  t.same(policy, {
    version: '1.0',
    name: 'alice-docs',
    description: null,
    rules: [
      {
        name: 'alice-docs',
        effect: 'allow',
        principal_conditions: [
          { path: 'attributes.role', operator: '==', value: 'admin' },
          { path: 'attributes.level', operator: '==', value: 3 },
          { path: 'attributes.tags', operator: '==', value: ['a', 'b'] },
          { path: 'attributes.flag', operator: '==', value: true },
          { path: 'attributes.none', operator: '==', value: null },
        ],
        resource_conditions: [
          { path: 'attributes.kind', operator: '==', value: 'doc' },
          { path: 'attributes.meta', operator: '==', value: { owner: 'alice' } },
        ],
        actions: ['read'],
      },
    ],
    default_effect: 'deny',
  });
  t.same(Object.keys(policy), ['version', 'name', 'description', 'rules', 'default_effect']);
  t.same(policyIssues(policy, ['body'], LIMITS), []);
});

t.test('a uri pins the entity with a uri condition first', async (t) => {
  const policy = buildSimplePolicy(
    's',
    { uri: 'user:alice', attributes: new Map([['role', 'admin']]) },
    { uri: 'doc:1', attributes: new Map() },
    'access',
    'spec',
  );
  t.same(policy.rules[0]!.principal_conditions, [
    { path: 'uri', operator: '==', value: 'user:alice' },
    { path: 'attributes.role', operator: '==', value: 'admin' },
  ]);
  t.same(policy.rules[0]!.resource_conditions, [{ path: 'uri', operator: '==', value: 'doc:1' }]);
  t.same(policy.rules[0]!.actions, ['access']);
});

t.test('in the eunomia style every condition is spelled equals, and means the same', async (t) => {
  const principal = { uri: 'user:alice', attributes: new Map<string, unknown>([['role', 'admin']]) };
  const resource = { attributes: new Map<string, unknown>([['kind', 'doc']]) };
  const eunomia = buildSimplePolicy('s', principal, resource, 'read', 'eunomia');
  t.strictSame(eunomia.rules[0]!.principal_conditions, [
    { path: 'uri', operator: 'equals', value: 'user:alice' },
    { path: 'attributes.role', operator: 'equals', value: 'admin' },
  ]);
  t.strictSame(eunomia.rules[0]!.resource_conditions, [{ path: 'attributes.kind', operator: 'equals', value: 'doc' }]);
  const spec = buildSimplePolicy('s', principal, resource, 'read', 'spec');
  for (const [label, candidate] of [['alice', entity({ role: 'admin' }, 'user:alice')], ['bob', entity({ role: 'admin' }, 'user:bob')]] as const) {
    t.same(evaluate(compile([eunomia], 1), request(candidate, entity({ kind: 'doc' }), 'read')), evaluate(compile([spec], 1), request(candidate, entity({ kind: 'doc' }), 'read')), label);
  }
});

t.test('no uri and no attributes: no conditions', async (t) => {
  const policy = buildSimplePolicy('open', { attributes: new Map() }, { attributes: new Map() }, 'write', 'spec');
  t.same(policy.rules[0]!.principal_conditions, []);
  t.same(policy.rules[0]!.resource_conditions, []);
  t.same(policy.rules[0]!.actions, ['write']);
});

t.test('the built policy evaluates as intended', async (t) => {
  const policy = buildSimplePolicy(
    'simple',
    { uri: 'user:alice', attributes: new Map<string, unknown>([['role', 'admin']]) },
    { attributes: new Map<string, unknown>([['kind', 'doc'], ['size', 10]]) },
    'read',
    'spec',
  );
  const snapshot = compile([policy], 1);
  const alice = entity({ role: 'admin' }, 'user:alice');
  const doc = entity({ kind: 'doc', size: 10 });
  t.same(evaluate(snapshot, request(alice, doc, 'read')), { allowed: true, reason: 'Rule simple allowed the action in policy simple' });
  t.same(evaluate(snapshot, request(alice, doc, 'write')), { allowed: false, reason: 'Action denied by default effect' });
  t.same(evaluate(snapshot, request(entity({ role: 'admin' }, 'user:bob'), doc, 'read')), {
    allowed: false,
    reason: 'Action denied by default effect',
  });
  t.same(evaluate(snapshot, request(entity({ role: 'admin' }), doc, 'read')), { allowed: false, reason: 'Action denied by default effect' });
  t.same(evaluate(snapshot, request(alice, entity({ kind: 'doc', size: '10' }), 'read')), {
    allowed: false,
    reason: 'Action denied by default effect',
  }, 'values keep their JSON types');
  t.same(evaluate(snapshot, request(alice, entity({ kind: 'doc' }), 'read')), { allowed: false, reason: 'Action denied by default effect' });
  t.same(evaluate(snapshot, request(alice, entity({ kind: 'doc', size: 10, extra: 1 }), 'read')), {
    allowed: true,
    reason: 'Rule simple allowed the action in policy simple',
  }, 'extra attributes do not hurt');
});

t.test('prototype-named attribute keys', async (t) => {
  const policy = buildSimplePolicy('p', { attributes: new Map<string, unknown>([['__proto__', 'x'], ['constructor', 1]]) }, { attributes: new Map() }, 'access', 'spec');
  t.same(policy.rules[0]!.principal_conditions, [
    { path: 'attributes.__proto__', operator: '==', value: 'x' },
    { path: 'attributes.constructor', operator: '==', value: 1 },
  ]);
  const snapshot = compile([policy], 1);
  const allowed = { allowed: true, reason: 'Rule p allowed the action in policy p' };
  const denied = { allowed: false, reason: 'Action denied by default effect' };
  t.same(evaluate(snapshot, request(entity([['__proto__', 'x'], ['constructor', 1]]))), allowed);
  t.same(evaluate(snapshot, request(entity([['constructor', 1]]))), denied);
  t.same(evaluate(snapshot, request(entity([['__proto__', 'x']]))), denied);
});
