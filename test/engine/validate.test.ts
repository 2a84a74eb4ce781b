import t from 'tap';
import { DEFAULT_CONFIG as LIMITS } from '../../src/config/config.js';
import { normalizePolicy, policyIssues } from '../../src/engine/index.js';
import type { Policy } from '../../src/schemas/policy.js';
import { cond, policy, rule } from './helpers.js';
import { flatConditions } from '../../src/engine/condition-items.js';

const valid = (): Policy =>
  policy('p', [
    rule('r', {
      principal: [cond('==', 'x', 'attributes.role'), cond('in', ['a'], 'uri')],
      resource: [cond('gt', 1, 'attributes.size'), cond('startswith', 'doc', 'attributes.kind.0')],
    }),
  ]);

t.test('a valid policy has no issues', async (t) => {
  t.same(policyIssues(valid(), ['body'], LIMITS), []);
  t.same(policyIssues(policy('p', []), ['body'], LIMITS), []);
  t.same(policyIssues(policy('p', [rule('r')]), [], LIMITS), []);
});

t.test('bad paths are reported at the condition path', async (t) => {
  const wrongRoot = "path must be 'uri' or 'attributes.<key>' (dotted, e.g. 'attributes.address.city')";
  const p = policy('p', [
    rule('r0', { principal: [cond('==', 1, 'attributes.ok'), cond('==', 1, 'role')] }),
    rule('r1', { resource: [cond('==', 1, 'attributes..x')] }),
  ]);
  t.same(policyIssues(p, ['body'], LIMITS), [
    { loc: ['body', 'rules', 0, 'principal_conditions', 1, 'path'], msg: wrongRoot, type: 'value_error' },
    { loc: ['body', 'rules', 1, 'resource_conditions', 0, 'path'], msg: 'path has an empty segment', type: 'value_error' },
  ]);
  for (const path of ['attributes', 'uri.x', 'Attributes.x', 'resource.attributes.x', '']) {
    const issues = policyIssues(policy('p', [rule('r', { principal: [cond('==', 1, path)] })]), [], LIMITS);
    t.same(issues, [{ loc: ['rules', 0, 'principal_conditions', 0, 'path'], msg: wrongRoot, type: 'value_error' }], JSON.stringify(path));
  }
  for (const path of ['attributes.', 'attributes.a.', 'attributes.a..b']) {
    const issues = policyIssues(policy('p', [rule('r', { resource: [cond('==', 1, path)] })]), [], LIMITS);
    t.same(issues, [{ loc: ['rules', 0, 'resource_conditions', 0, 'path'], msg: 'path has an empty segment', type: 'value_error' }], path);
  }
  for (const path of ['uri', 'attributes.a', 'attributes.a.b.0', 'attributes.__proto__', 'attributes.constructor.prototype']) {
    t.same(policyIssues(policy('p', [rule('r', { principal: [cond('==', 1, path)] })]), [], LIMITS), [], path);
  }
});

t.test('operator/value mismatches are reported at the condition value', async (t) => {
  const at = (side: 'principal_conditions' | 'resource_conditions', index: number) => ['body', 'rules', 0, side, index, 'value'];
  const p = policy('p', [
    rule('r', {
      principal: [cond('in', 'a'), cond('in', ['a']), cond('not_in', { a: 1 })],
      resource: [cond('gt', '18'), cond('startswith', 5), cond('endswith', null), cond('>=', 1)],
    }),
  ]);
  t.same(policyIssues(p, ['body'], LIMITS), [
    { loc: at('principal_conditions', 0), msg: "operator 'in' needs a list value", type: 'value_error' },
    { loc: at('principal_conditions', 2), msg: "operator 'not_in' needs a list value", type: 'value_error' },
    { loc: at('resource_conditions', 0), msg: "operator 'gt' needs a number value", type: 'value_error' },
    { loc: at('resource_conditions', 1), msg: "operator 'startswith' needs a string value", type: 'value_error' },
    { loc: at('resource_conditions', 2), msg: "operator 'endswith' needs a string value", type: 'value_error' },
  ]);
  // The message names the operator as sent.
  for (const operator of ['>', 'gte', '>=', 'lt', '<', 'lte', '<='] as const) {
    t.same(policyIssues(policy('p', [rule('r', { principal: [cond(operator, 'x')] })]), [], LIMITS), [
      { loc: ['rules', 0, 'principal_conditions', 0, 'value'], msg: `operator '${operator}' needs a number value`, type: 'value_error' },
    ]);
  }
  // Operators that take any value.
  for (const operator of ['==', 'equals', '!=', 'not_equals', 'contains', 'not_contains'] as const) {
    for (const value of ['s', 1, true, null, [1], { a: 1 }]) {
      t.same(policyIssues(policy('p', [rule('r', { principal: [cond(operator, value)] })]), [], LIMITS), [], `${operator} ${JSON.stringify(value)}`);
    }
  }
});

t.test('a condition with both a bad path and a bad value gets two issues, path first', async (t) => {
  t.same(policyIssues(policy('p', [rule('r', { principal: [cond('gt', 'x', 'nope')] })]), ['body'], LIMITS), [
    {
      loc: ['body', 'rules', 0, 'principal_conditions', 0, 'path'],
      msg: "path must be 'uri' or 'attributes.<key>' (dotted, e.g. 'attributes.address.city')",
      type: 'value_error',
    },
    { loc: ['body', 'rules', 0, 'principal_conditions', 0, 'value'], msg: "operator 'gt' needs a number value", type: 'value_error' },
  ]);
});

t.test('names that slugify to nothing', async (t) => {
  t.same(policyIssues(policy('!!!', []), ['body'], LIMITS), [
    { loc: ['body', 'name'], msg: "name '!!!' has no letters or digits to make a slug from", type: 'value_error' },
  ]);
  t.same(policyIssues(policy('ok', [rule('fine'), rule('日本')]), ['body'], LIMITS), [
    { loc: ['body', 'rules', 1, 'name'], msg: "name '日本' has no letters or digits to make a slug from", type: 'value_error' },
  ]);
  t.same(policyIssues(policy('---', [rule('  ', { principal: [cond('in', 1)] })]), [0], LIMITS), [
    { loc: [0, 'name'], msg: "name '---' has no letters or digits to make a slug from", type: 'value_error' },
    { loc: [0, 'rules', 0, 'name'], msg: "name '  ' has no letters or digits to make a slug from", type: 'value_error' },
    { loc: [0, 'rules', 0, 'principal_conditions', 0, 'value'], msg: "operator 'in' needs a list value", type: 'value_error' },
  ]);
  t.same(policyIssues(policy('___', [rule('Café')]), [], LIMITS), [], 'underscores and accents slugify to something');
});

t.test('the location prefix is used as given and not modified', async (t) => {
  const at = ['body', 3];
  const issues = policyIssues(policy('!', [rule('r', { principal: [cond('in', 1)] })]), at, LIMITS);
  t.same(at, ['body', 3]);
  t.same(issues.map((issue) => issue.loc), [['body', 3, 'name'], ['body', 3, 'rules', 0, 'principal_conditions', 0, 'value']]);
});

t.test('normalizePolicy slugifies policy and rule names and keeps everything else', async (t) => {
  const conditions = [cond('==', { nested: [1, 'two'] }, 'attributes.Mixed_Case')];
  const input: Policy = {
    version: '2.5',
    name: 'My Café Policy',
    description: 'Keep Me As Is!',
    rules: [
      { name: 'Allow Admins!', effect: 'allow', principal_conditions: conditions, resource_conditions: [], actions: ['Read', 'write'] },
      { name: 'deny__Rest', description: 'Everyone Else', effect: 'deny', principal_conditions: [], resource_conditions: conditions, actions: ['access'] },
    ],
    default_effect: 'allow',
  };
  const before = JSON.parse(JSON.stringify(input));
  const normalized = normalizePolicy(input);
  t.same(normalized, {
    version: '2.5',
    name: 'my-cafe-policy',
    description: 'Keep Me As Is!',
    rules: [
      { name: 'allow-admins', description: null, effect: 'allow', principal_conditions: conditions, resource_conditions: [], actions: ['Read', 'write'] },
      { name: 'deny__rest', description: 'Everyone Else', effect: 'deny', principal_conditions: [], resource_conditions: conditions, actions: ['access'] },
    ],
    default_effect: 'allow',
  });
  t.same(input, before, 'the input is not modified');
  // Field order as stored.
  t.same(Object.keys(normalized), ['version', 'name', 'description', 'rules', 'default_effect']);
  t.same(Object.keys(normalized.rules[0]!), ['name', 'description', 'effect', 'principal_conditions', 'resource_conditions', 'actions']);
  // Operators are kept as sent, synonyms included.
  const synonyms = normalizePolicy(policy('P', [rule('R', { principal: [cond('equals', 1), cond('>', 2), cond('not_equals', 3)] })]));
  t.same(flatConditions(synonyms.rules[0]!.principal_conditions).map((c) => c.operator), ['equals', '>', 'not_equals']);
  t.equal(normalizePolicy(policy('already-a-slug', [])).name, 'already-a-slug');
  t.equal(normalizePolicy(policy('x', [], 'deny')).description, null);
});
