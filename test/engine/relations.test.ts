import t from 'tap';
import { Query } from 'mingo';
import { compile, evaluate, mongoFilter, plan, policyWarnings, type DecisionRequest } from '../../src/engine/index.js';
import { OPERATORS, type Condition, type Policy } from '../../src/schemas/policy.js';
import { conditionHolds } from './reference.js';
import { OPERATOR_DEFINITIONS } from '../../src/engine/operators/index.js';

// Relations, action attributes and context in the engine: validation's warnings about them, and the
// plans and filters of relations that a random case rarely meets.

const warningsOf = (policies: Policy[]) => policyWarnings(policies, policies.map((_, index) => index), (index) => ['body', index]).map(({ loc, type, msg }) => ({ loc: loc.join('.'), type, msg }));

const policyOf = (rule: Partial<Policy['rules'][number]>): Policy => ({
  version: '1.0',
  name: 'p',
  description: null,
  rules: [{ name: 'r', description: null, effect: 'allow', principal_conditions: [], resource_conditions: [], actions: ['read'], ...rule }],
  default_effect: 'deny',
});

const entity = (attributes: Record<string, unknown> = {}, uri?: string) => ({ uri, attributes: new Map(Object.entries(attributes)) });

t.test('every operator relates every pair of values of any two types as the documented reading does', async (t) => {
  // Values of every JSON type, and strings that other conversions would read as numbers or booleans.
  const values: unknown[] = [0, 1, 5, -2.5, '5', '1', '', '0', 'x', 'xy', '10.1.2.3', '10.0.0.0/8', '2026-11-28T12:00:00Z', '2026-11-28T12:30:00+01:00', true, false, null, [], [1], ['5'], ['x', 1], ['10.0.0.0/8'], {}, { k: 1 }];
  let checked = 0;
  // Every operator that takes a value_from: the others' are refused when the policy is written. `within` takes its span as the value.
  for (const operator of OPERATORS.filter((each) => OPERATOR_DEFINITIONS[each].refusesValueFrom === undefined)) {
    const span = OPERATOR_DEFINITIONS[operator].anchored === undefined ? {} : { value: { last: 'PT30M' } };
    const condition = { path: 'attributes.a', operator, ...span, value_from: 'principal.attributes.b' } as Condition;
    const snapshot = compile([{ ...policyOf({ resource_conditions: [condition] }), default_effect: 'deny' }], 1);
    for (const a of values) {
      for (const b of values) {
        const request: DecisionRequest = { principal: entity({ b }), resource: entity({ a }), action: 'read' };
        const expected = conditionHolds(condition, request.resource, request);
        if (evaluate(snapshot, request).allowed !== expected) t.fail(`${JSON.stringify(a)} ${operator} value_from ${JSON.stringify(b)}: the reading says ${expected}`);
        checked++;
      }
    }
  }
  t.ok(checked > 5000, `${checked} pairs`);
});

t.test('validation: relations between values that can never have the types their operator takes', async (t) => {
  const never: [string, Condition, string][] = [
    ['an ordering with a uri', { path: 'attributes.level', operator: 'gt', value_from: 'principal.uri' }, "attributes.level gt principal.uri never holds: 'gt' compares numbers, and principal.uri is always a string"],
    ['an ordering of a uri', { path: 'uri', operator: '<=', value_from: 'principal.attributes.level' }, "uri <= principal.attributes.level never holds: 'lte' compares numbers, and uri is always a string"],
    ['in a name', { path: 'attributes.kind', operator: 'in', value_from: 'action.name' }, "attributes.kind in action.name never holds: 'in' needs a list, and action.name is always a string"],
  ];
  for (const [name, condition, why] of never) {
    t.same(warningsOf([policyOf({ resource_conditions: [condition] })]), [{ loc: 'body.0.rules.0.resource_conditions', type: 'never_matches', msg: `this rule can never match: ${why}` }], name);
    const snapshot = compile([policyOf({ resource_conditions: [condition] })], 1);
    for (const level of [0, 5, 'a', ['doc:1']]) {
      const asked = { principal: entity({ level }, 'user:1'), resource: entity({ level, kind: level }, 'doc:1'), action: 'read' };
      t.notOk(evaluate(snapshot, asked).allowed, `${name}: indeed never allowed (${JSON.stringify(level)})`);
    }
  }
  t.same(
    warningsOf([policyOf({ principal_conditions: [{ path: 'attributes.level', operator: 'gt', value_from: 'resource.uri' }] })]),
    [{ loc: 'body.0.rules.0.principal_conditions', type: 'never_matches', msg: "this rule can never match: attributes.level gt resource.uri never holds: 'gt' compares numbers, and resource.uri is always a string" }],
    'a principal condition referring to the resource',
  );
  t.same(warningsOf([policyOf({ principal_conditions: [{ path: 'attributes.department', operator: '==', value_from: 'resource.attributes.department' }] })]), [], 'a principal condition referring to the resource that can hold');
  t.same(warningsOf([policyOf({ resource_conditions: [{ path: 'attributes.owner', operator: '==', value_from: 'principal.uri' }, { path: 'attributes.path', operator: 'startswith', value_from: 'principal.attributes.home' }] })]), [], 'relations that can hold');
});

t.test('validation: conditions on the action name that no action of the rule satisfies', async (t) => {
  t.same(warningsOf([policyOf({ actions: ['read', 'list'], action_conditions: [{ path: 'name', operator: '==', value: 'write' }] })]), [
    { loc: 'body.0.rules.0.action_conditions', type: 'never_matches', msg: 'this rule can never match: no action it names ("read", "list") satisfies name == "write"' },
  ]);
  t.same(warningsOf([policyOf({ actions: ['read', 'list'], action_conditions: [{ path: 'name', operator: 'in', value: ['list'] }] })]), [], 'one of its actions does');
});

t.test('validation: a deny rule on the context that a check escapes by leaving the context out', async (t) => {
  const warnings = warningsOf([policyOf({ effect: 'deny', context_conditions: [{ path: 'attributes.network', operator: '!=', value: 'office' }] })]);
  t.equal(warnings.length, 1);
  t.match(warnings[0], { loc: 'body.0.rules.0.context_conditions.0', type: 'escaped_by_omission', msg: /leaves out the context's attributes.network escapes this deny rule/ });
  t.match(warnings[0]!.msg, /"context_conditions":\[\{"path":"attributes.network","operator":"not_exists"\}\]/, 'the closing rule tests the absence in the context');
});

t.test('validation: a deny rule escaped by leaving out the value a reference reads, on the side the reference names', async (t) => {
  const notOwner = { path: 'attributes.owner', operator: '!=', value_from: 'principal.attributes.id' } as Condition;
  const denying = policyOf({ effect: 'deny', resource_conditions: [notOwner] });
  const warnings = warningsOf([denying]);
  const onReference = warnings.filter((w) => /principal's attributes\.id/.test(w.msg));
  t.equal(onReference.length, 1, `one warning about the principal's id (${JSON.stringify(warnings)})`);
  t.match(onReference[0], { loc: 'body.0.rules.0.resource_conditions.0', type: 'escaped_by_omission' });
  const suggested = JSON.parse(onReference[0]!.msg.slice(onReference[0]!.msg.indexOf('{'))) as Policy['rules'][number];
  t.same(suggested.principal_conditions, [{ path: 'attributes.id', operator: 'not_exists' }], 'the closing rule tests the absence on the principal');
  t.same(suggested.resource_conditions, [], 'and drops the condition that cannot hold without it');

  // The suggested rule, added, denies what escaped, and validation says no more about the id.
  const fixed: Policy = { ...denying, default_effect: 'allow', rules: [...denying.rules, { description: null, ...suggested }] };
  t.same(warningsOf([fixed]).filter((w) => /principal's attributes\.id/.test(w.msg)), [], 'after the suggested fix, nothing about the id');
  const escaping: DecisionRequest = { principal: entity({}), resource: entity({ owner: 'alice' }), action: 'read' };
  t.equal(evaluate(compile([{ ...denying, default_effect: 'allow' }], 1), escaping).allowed, true, 'without it, leaving out the id escapes the denial');
  t.equal(evaluate(compile([fixed], 1), escaping).allowed, false, 'with it, the request is denied');

  const onName = warningsOf([policyOf({ effect: 'deny', resource_conditions: [{ path: 'attributes.kind', operator: '!=', value_from: 'action.name' }] })]);
  t.notOk(onName.some((w) => /action's name/.test(w.msg)), 'an action always has its name: nothing to leave out');
});

t.test('validation: a rule with action or context conditions does not shadow one without them', async (t) => {
  const policies = [policyOf({ action_conditions: [{ path: 'attributes.soft', operator: '==', value: true }] })];
  policies[0]!.rules.push({ name: 'later', description: null, effect: 'deny', principal_conditions: [], resource_conditions: [], actions: ['read'] });
  t.same(warningsOf(policies), []);
});

const resourcesOf = (documents: Record<string, unknown>[]) => documents.map((attributes) => ({ attributes }));
/** `leaf` below `depth` levels of documents. */
const nested = (depth: number, leaf: unknown): unknown => (depth === 0 ? leaf : { level: nested(depth - 1, leaf) });

t.test('plans of relations between two values of the resource: exact $expr for every operator', async (t) => {
  const cases: [Condition, Record<string, unknown>[]][] = [
    [{ path: 'attributes.spent', operator: '<=', value_from: 'resource.attributes.budget' }, [{ spent: 1, budget: 2 }, { spent: 2, budget: 2 }, { spent: 3, budget: 2 }, { spent: '1', budget: 2 }, { spent: 1 }, { budget: 1 }, { spent: [1], budget: 2 }]],
    [{ path: 'attributes.path', operator: 'startswith', value_from: 'resource.attributes.root' }, [{ path: '/a/b', root: '/a' }, { path: '/a', root: '/a/b' }, { path: '😀x', root: '😀' }, { path: 'x😀', root: 'x' }, { path: '/a', root: 1 }, { path: ['/a'], root: '/a' }, { path: 'ab', root: '' }]],
    [{ path: 'attributes.name', operator: 'endswith', value_from: 'resource.attributes.meta.suffix' }, [{ name: 'a.txt', meta: { suffix: '.txt' } }, { name: 'a.txt', meta: { suffix: 'a.txt.txt' } }, { name: 'a😀', meta: { suffix: '😀' } }, { name: 'a.txt', meta: [{ suffix: '.txt' }] }]],
    // Equality as JSON: the same type, lists item by item, documents with the same keys in any order (MongoDB's $eq compares them in field order), at any depth.
    [
      { path: 'attributes.owner', operator: '==', value_from: 'resource.attributes.creator' },
      [
        { owner: 'a', creator: 'a' },
        { owner: 'a', creator: 'A' },
        { owner: 1, creator: 1.0 },
        { owner: 1, creator: '1' },
        { owner: true, creator: 1 },
        { owner: null, creator: null },
        { owner: null },
        { creator: null },
        { owner: ['a', 1], creator: ['a', 1] },
        { owner: ['a', 1], creator: [1, 'a'] },
        { owner: ['a'], creator: 'a' },
        { owner: [['a']], creator: [['a']] },
        { owner: { id: 'a', org: 'o' }, creator: { org: 'o', id: 'a' } },
        { owner: { id: 'a', org: 'o' }, creator: { id: 'a' } },
        { owner: { id: 'a' }, creator: { id: 'a', org: null } },
        { owner: { id: 'a' }, creator: { ID: 'a' } },
        { owner: [{ id: 'a', org: { x: [1, { y: 2, z: 3 }] } }], creator: [{ org: { x: [1, { z: 3, y: 2 }] }, id: 'a' }] },
        { owner: [{ id: 'a', org: { x: [1, { y: 2, z: 3 }] } }], creator: [{ org: { x: [1, { z: 3, y: '2' }] }, id: 'a' }] },
        { owner: {}, creator: [] },
        { owner: {}, creator: {} },
        // As deep as a MongoDB document holds (100 levels, the document and `attributes` among them).
        { owner: nested(97, { j: 1, k: [2] }), creator: nested(97, { k: [2], j: 1 }) },
        { owner: nested(97, { j: 1, k: [2] }), creator: nested(97, { k: [3], j: 1 }) },
      ],
    ],
    [{ path: 'attributes.owner', operator: '!=', value_from: 'resource.attributes.creator' }, [{ owner: 'a', creator: 'b' }, { owner: 'a', creator: 'a' }, { owner: 'a' }, { creator: 'a' }, { owner: { j: 1, k: 2 }, creator: { k: 2, j: 1 } }, { owner: { j: 1 }, creator: { k: 1 } }, { owner: null, creator: 0 }]],
    [{ path: 'attributes.team', operator: 'in', value_from: 'resource.attributes.teams' }, [{ team: 'a', teams: ['b', 'a'] }, { team: 'a', teams: ['b'] }, { team: 'a', teams: 'a' }, { team: 'a', teams: [] }, { team: { k: 1, j: 2 }, teams: [{ j: 2, k: 1 }] }, { team: ['a'], teams: ['a'] }, { team: ['a'], teams: [['a']] }, { teams: ['a'] }, { team: null, teams: [null] }]],
    [{ path: 'attributes.team', operator: 'not_in', value_from: 'resource.attributes.teams' }, [{ team: 'a', teams: ['b', 'a'] }, { team: 'a', teams: ['b'] }, { team: 'a', teams: 'b' }, { team: 'a', teams: [] }, { team: { k: 1, j: 2 }, teams: [{ j: 2, k: 1 }] }, { teams: ['a'] }, { team: 'a' }]],
    [{ path: 'attributes.tags', operator: 'contains', value_from: 'resource.attributes.tag' }, [{ tags: ['x', 'y'], tag: 'y' }, { tags: ['x'], tag: 'y' }, { tags: 'xyz', tag: 'y' }, { tags: 'xyz', tag: '' }, { tags: '😀x', tag: '😀' }, { tags: 'xyz', tag: ['y'] }, { tags: 7, tag: 7 }, { tags: [{ a: 1, b: 2 }], tag: { b: 2, a: 1 } }, { tags: [[1]], tag: [1] }, { tags: ['x'] }]],
    [{ path: 'attributes.tags', operator: 'not_contains', value_from: 'resource.attributes.tag' }, [{ tags: ['x', 'y'], tag: 'y' }, { tags: ['x'], tag: 'y' }, { tags: 'xyz', tag: 'y' }, { tags: 'xyz', tag: 'q' }, { tags: 'xyz', tag: 1 }, { tags: 7, tag: 1 }, { tags: [{ a: 1, b: 2 }], tag: { b: 2, a: 1 } }, { tags: ['x'] }, { tag: 'x' }]],
  ];
  for (const [condition, documents] of cases) {
    const snapshot = compile([policyOf({ resource_conditions: [condition] })], 1);
    const made = plan(snapshot, { principal: entity(), resource: entity(), action: 'read' });
    t.same(made.condition, { ...condition, operator: condition.operator === '<=' ? 'lte' : condition.operator }, 'the relation as written, operator canonical');
    const filter = mongoFilter(made.condition);
    if (!('filter' in filter)) throw new Error(filter.unsupported);
    const query = new Query(filter.filter, {});
    for (const document of resourcesOf(documents)) {
      const allowed = evaluate(snapshot, { principal: entity(), resource: entity(document.attributes), action: 'read' }).allowed;
      t.equal(query.test(document), allowed, `${condition.path} ${condition.operator} ${condition.value_from}: ${JSON.stringify(document.attributes)} ${allowed ? 'allowed' : 'denied'}`);
    }
  }
});

t.test('plans: a relation with one value of the resource known reads the other way round, or is refused', async (t) => {
  const snapshotOf = (condition: Condition) => compile([policyOf({ resource_conditions: [condition] })], 1);
  const asked = (known: Record<string, unknown>): DecisionRequest => ({ principal: entity(), resource: entity(known), action: 'read' });
  t.same(plan(snapshotOf({ path: 'attributes.budget', operator: 'gt', value_from: 'resource.attributes.spent' }), asked({ budget: 10 })).condition, { path: 'attributes.spent', operator: 'lt', value: 10 });
  t.same(plan(snapshotOf({ path: 'attributes.team', operator: 'in', value_from: 'resource.attributes.teams' }), asked({ team: 3 })).condition, { path: 'attributes.teams', operator: 'contains', value: 3 });
  t.same(plan(snapshotOf({ path: 'attributes.teams', operator: 'contains', value_from: 'resource.attributes.team' }), asked({ teams: ['a'] })).condition, { path: 'attributes.team', operator: 'in', value: ['a'] });
  t.same(plan(snapshotOf({ path: 'attributes.budget', operator: 'gt', value_from: 'resource.attributes.spent' }), asked({ budget: 'x' })).condition, false, 'a known value the operator cannot take');
  t.throws(() => plan(snapshotOf({ path: 'attributes.path', operator: 'startswith', value_from: 'resource.attributes.root' }), asked({ path: '/a' })), { message: /relates a known attribute to an open one by 'startswith', which a plan cannot state/ });
});
