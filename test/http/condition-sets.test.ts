import t from 'tap';
import { decides, decidesEachAndInBulk, emptyServer } from '../helpers/it-desk.js';
import { MAX_CONDITION_SETS } from '../../src/schemas/policy.js';

// Condition sets ("derived roles") over the API: defined once in a policy, referred to by its rules
// on any part of the check; decided by checks and bulks (front and pool), explained by name,
// planned, refused when they refer to what is not there, versioned with their policy.

const MANAGER = [
  { path: 'attributes.role', operator: '==', value: 'manager' },
  { path: 'attributes.active', operator: '==', value: true },
];

/** Active managers approve expenses up to their limit; they, or the requester, read them. */
const EXPENSES = {
  name: 'expenses',
  condition_sets: { manager: MANAGER },
  rules: [
    {
      name: 'managers approve',
      effect: 'allow',
      principal_conditions: [{ set: 'manager' }, { path: 'attributes.limit', operator: 'gte', value_from: 'resource.attributes.amount' }],
      actions: ['approve'],
    },
    {
      name: 'managers or requesters read',
      effect: 'allow',
      principal_conditions: [{ any_of: [[{ path: 'uri', operator: '==', value_from: 'resource.attributes.requester' }], [{ path: 'attributes.role', operator: '==', value: 'manager' }]] }],
      actions: ['read'],
    },
  ],
};

const approve = (attributes: Record<string, unknown>, amount = 100) => ({ principal: { uri: 'user:mo', attributes }, resource: { attributes: { amount, requester: 'user:al' } }, action: 'approve' });
const APPROVED = { allowed: true, reason: 'Rule managers-approve allowed the action in policy expenses' };
const DENIED = { allowed: false, reason: 'Action denied by default effect' };

t.test('a rule that refers to a set holds when every item of the set does, on the front and in the pool', async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await emptyServer(t, { evaluation, workers: 1 });
    t.equal((await server.call('POST', '/admin/policies', EXPENSES)).status, 200);
    const cases: [ReturnType<typeof approve>, unknown, string][] = [
      [approve({ role: 'manager', active: true, limit: 500 }), APPROVED, 'an active manager within the limit'],
      [approve({ role: 'manager', active: false, limit: 500 }), DENIED, 'an inactive one'],
      [approve({ role: 'manager', limit: 500 }), DENIED, 'one who does not say'],
      [approve({ role: 'manager', active: true, limit: 50 }), DENIED, 'past the limit'],
    ];
    await decidesEachAndInBulk(t, server, cases, evaluation);
  }
});

t.test("an explanation names the set and its first item that did not hold; a plan states the set's conditions", async (t) => {
  const server = await emptyServer(t);
  t.equal((await server.call('POST', '/admin/policies', EXPENSES)).status, 200);
  const inactive = await server.call('POST', '/check?explain=true', approve({ role: 'manager', active: false, limit: 500 }));
  t.same(inactive.body.explain.policies[0].rules[0].failed, { side: 'principal', set: 'manager', failed: { path: 'attributes.active', operator: '==', expected: true, actual: false } });
  const planned = await server.call('POST', '/plan', { principal: { uri: 'user:mo', attributes: { role: 'manager', active: true, limit: 500 } }, action: 'approve' });
  t.same(planned.body.condition, { path: 'attributes.amount', operator: 'lte', value: 500 }, 'the set decided on the known principal');
  t.ok(planned.body.mongodb !== undefined);
});

t.test('writes refuse a reference to a set the policy does not define, a set in a set, and too many sets, naming where', async (t) => {
  const server = await emptyServer(t);
  const written = (policy: Record<string, unknown>) => server.call('POST', '/admin/policies', { name: 'p', rules: [], ...policy });
  const refusals: [Record<string, unknown>, string, RegExp][] = [
    [
      { condition_sets: { manager: MANAGER }, rules: [{ name: 'r', effect: 'allow', principal_conditions: [{ set: 'managr' }], actions: ['read'] }] },
      'body.rules.0.principal_conditions.0.set',
      /no condition set named 'managr' \(its sets: manager\)/,
    ],
    [{ rules: [{ name: 'r', effect: 'allow', resource_conditions: [{ set: 'constructor' }], actions: ['read'] }] }, 'body.rules.0.resource_conditions.0.set', /no condition set named 'constructor' \(it defines none\)/],
    [{ condition_sets: { outer: [{ set: 'manager' }], manager: MANAGER } }, 'body.condition_sets.outer.0.set', /a condition set refers to no other set/],
    [{ condition_sets: Object.fromEntries(Array.from({ length: MAX_CONDITION_SETS + 1 }, (_, index) => [`s${index}`, MANAGER])) }, 'body.condition_sets', /must NOT have more than 64 properties/],
    [{ condition_sets: { 'a b': MANAGER } }, 'body.condition_sets', /property name must be valid|must match pattern/],
    [{ condition_sets: { manager: [{ path: 'attributes.role', operator: 'in', value: 'manager' }] } }, 'body.condition_sets.manager.0.value', /operator 'in' needs a list value/],
    [{ condition_sets: { manager: [] } }, 'body.condition_sets.manager', /must NOT have fewer than 1 items/],
  ];
  for (const [policy, location, message] of refusals) {
    const response = await written(policy);
    t.equal(response.status, 422, JSON.stringify(policy).slice(0, 80));
    t.equal(response.body.detail?.[0]?.loc?.join('.'), location, JSON.stringify(response.body.detail?.[0]));
    t.match(response.body.detail?.[0]?.msg, message);
  }
});

t.test('a set is versioned with its policy: a new version of the set changes the decisions, and the history holds both', async (t) => {
  const server = await emptyServer(t, { operatorStyle: 'eunomia' });
  const created = await server.call('POST', '/admin/policies', EXPENSES);
  t.same(created.body.condition_sets, { manager: [{ path: 'attributes.role', operator: 'equals', value: 'manager' }, { path: 'attributes.active', operator: 'equals', value: true }] }, 'answered in the server style');
  const leads = { ...EXPENSES, condition_sets: { manager: [{ path: 'attributes.role', operator: 'in', value: ['manager', 'lead'] }] } };
  t.equal((await server.call('PUT', '/admin/policies/expenses', leads)).status, 200);
  await decides(t, server, approve({ role: 'lead', limit: 500 }), APPROVED, '/check', 'a lead is now a manager');
  const history = await server.call('GET', '/admin/policies/expenses/history');
  t.equal(history.status, 200);
  const [replaced, first] = history.body.records;
  t.same([replaced.version, first.version], [2, 1], 'both versions audited');
  t.same(replaced.before.condition_sets, first.after.condition_sets, 'the set as it was');
  t.same(replaced.after.condition_sets.manager, [{ path: 'attributes.role', operator: 'in', value: ['manager', 'lead'] }], 'and as it is');
});
