import t from 'tap';
import { compile, derive, evaluate, explain, plan, type DecisionRequest } from '../../src/engine/index.js';
import type { Policy } from '../../src/schemas/policy.js';

// A set out of reach (its lending policy gone, as two writes crossing on two servers, or an older
// policy file, can leave it) fails closed in the engine itself: a deny rule that takes it holds, an
// allow rule never matches through it, a none_of included; explained as the set alone; planned alike.

const TAKING: Policy = {
  version: '1.0',
  name: 'taking',
  description: null,
  rules: [
    { name: 'suspended-do-nothing', description: null, effect: 'deny', principal_conditions: [{ set: 'suspended', from: 'company-roles' }], resource_conditions: [], actions: ['delete'] },
    { name: 'all-but-suspended-read', description: null, effect: 'allow', principal_conditions: [{ none_of: [[{ set: 'suspended', from: 'company-roles' }]] }], resource_conditions: [], actions: ['read'] },
    { name: 'managers-write', description: null, effect: 'allow', principal_conditions: [{ set: 'manager', from: 'company-roles' }], resource_conditions: [], actions: ['write'] },
  ],
  default_effect: 'deny',
};

const LENDING: Policy = {
  version: '1.0',
  name: 'company-roles',
  description: null,
  condition_sets: { suspended: [{ path: 'attributes.suspended', operator: '==', value: true }], manager: [{ path: 'attributes.role', operator: '==', value: 'manager' }] },
  rules: [],
  default_effect: 'none',
};

const asking = (action: string): DecisionRequest => ({ principal: { uri: 'user:mo', attributes: new Map<string, unknown>([['role', 'manager']]) }, resource: { uri: 'doc:1', attributes: new Map() }, action });

t.test('with its lender gone, every reference to a shared set fails closed; with the lender back, it decides as written', async (t) => {
  const alone = compile([TAKING], 1);
  t.same(evaluate(alone, asking('delete')), { allowed: false, reason: 'Rule suspended-do-nothing denied the action in policy taking' }, 'the deny rule holds');
  t.same(evaluate(alone, asking('read')), { allowed: false, reason: 'Action denied by default effect' }, 'the none_of of an allow rule does not hold');
  t.same(evaluate(alone, asking('write')), { allowed: false, reason: 'Action denied by default effect' }, 'an allow rule does not match through it');
  const writing = evaluate(alone, asking('write'));
  t.same(explain(alone, asking('write'), writing).policies[0]!.rules[0]!.failed, { side: 'principal', set: 'manager', from: 'company-roles' }, 'explained as the set alone');
  const openResource = (action: string) => ({ ...asking(action), resource: { uri: undefined, attributes: new Map() } });
  for (const action of ['delete', 'read', 'write']) t.same(plan(alone, openResource(action)).condition, false, `${action}: the plan allows nothing either`);

  // The lender arrives: a change of a policy others take from is compiled afresh, and decides as written.
  const both = derive(alone, [{ name: 'company-roles', now: { policy: LENDING, position: 1 } }], 2);
  t.equal(both, undefined, 'the lender is not derived into the snapshot: the policies that take from it change too');
  const lent = compile([TAKING, LENDING], 2);
  t.same(evaluate(lent, asking('delete')), { allowed: false, reason: 'Action denied by default effect' }, 'not suspended: the deny rule does not hold');
  t.same(evaluate(lent, asking('read')), { allowed: true, reason: 'Rule all-but-suspended-read allowed the action in policy taking' });
  t.same(evaluate(lent, asking('write')), { allowed: true, reason: 'Rule managers-write allowed the action in policy taking' });
});
