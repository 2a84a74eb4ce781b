import t from 'tap';
import { compile, derive, evaluate, explain, plan, policyWarnings } from '../../src/engine/index.js';
import { entity, policy, request, rule } from './helpers.js';

// `"actions": ["*"]` means every action, wherever a rule's actions are read: evaluate, explain,
// plan, derive, validate.

const SUSPENDED = policy('suspended', [rule('suspended-do-nothing', { effect: 'deny', principal: [{ path: 'attributes.suspended', operator: '==', value: true }], actions: ['*'] })], 'allow');
const READERS = policy('readers', [rule('staff-read', { principal: [{ path: 'attributes.staff', operator: '==', value: true }], actions: ['read'] })]);
const ADMINS = policy('admins', [rule('admins-do-anything', { principal: [{ path: 'attributes.admin', operator: '==', value: true }], actions: ['*', 'read'] })]);

const as = (attributes: Record<string, unknown>, action: string) => request(entity(attributes), entity(), action);

t.test('a deny on every action denies named actions and actions no rule names; an allow on every action allows them', async (t) => {
  const snapshot = compile([READERS, SUSPENDED, ADMINS], 1);
  for (const action of ['read', 'delete', 'something-nobody-named']) {
    t.same(evaluate(snapshot, as({ staff: true, admin: true, suspended: true }, action)), { allowed: false, reason: 'Rule suspended-do-nothing denied the action in policy suspended' }, `suspended: ${action}`);
    t.same(evaluate(snapshot, as({ admin: true }, action)), { allowed: true, reason: 'Rule admins-do-anything allowed the action in policy admins' }, `admin: ${action}`);
  }
  t.same(evaluate(snapshot, as({ staff: true }, 'read')), { allowed: true, reason: 'Rule staff-read allowed the action in policy readers' }, 'the first policy in creation order is named');
  t.same(evaluate(snapshot, as({ staff: true }, 'delete')), { allowed: false, reason: 'Action denied by default effect' });
});

t.test('explain and plan read the rules of every action beside the named ones', async (t) => {
  const snapshot = compile([READERS, SUSPENDED], 1);
  const checked = as({ suspended: true }, 'export');
  const explanation = explain(snapshot, checked, evaluate(snapshot, checked));
  t.match(explanation.decided_by, { kind: 'rule', policy: 'suspended', rule: 'suspended-do-nothing' });
  t.same(explanation.policies.map((trace) => trace.name), ['suspended']);
  t.equal(plan(snapshot, as({ suspended: true }, 'read')).condition, false, 'a plan for a named action');
  t.equal(plan(snapshot, as({ suspended: true }, 'export')).condition, false, 'and for one no rule names');
  t.equal(plan(snapshot, as({ staff: true }, 'read')).condition, true);
});

t.test('deriving a snapshot adds and removes rules of every action for every action, named before or after', async (t) => {
  const before = compile([READERS], 1, [0]);
  const added = derive(before, [{ name: 'suspended', now: { policy: SUSPENDED, position: 1 } }], 2)!;
  t.equal(evaluate(added, as({ staff: true, suspended: true }, 'read')).allowed, false, 'a named action');
  t.equal(evaluate(added, as({ suspended: true }, 'delete')).allowed, false, 'an action no rule names');
  const named = derive(added, [{ name: 'deleters', now: { policy: policy('deleters', [rule('d', { actions: ['delete'] })]), position: 2 } }], 3)!;
  t.equal(evaluate(named, as({ suspended: true }, 'delete')).allowed, false, 'an action named after the rule of every action was written still holds it');
  t.equal(evaluate(named, as({}, 'delete')).allowed, true);
  const removed = derive(named, [{ name: 'suspended', now: null }], 4)!;
  t.equal(evaluate(removed, as({ suspended: true }, 'delete')).allowed, true, 'removed from the actions named after it');
  t.equal(evaluate(removed, as({ suspended: true, staff: true }, 'read')).allowed, true, 'and from those named before');
  t.same(evaluate(removed, as({ suspended: true }, 'export')), { allowed: false, reason: 'Action denied by default effect' }, 'and from the others');
});

t.test("validate takes '*' for every action: no typo warning for it, and shadowing across it", async (t) => {
  const policies = [policy('p', [rule('anything', { actions: ['*'] }), rule('reads', { actions: ['read'] })]), READERS];
  const warnings = policyWarnings(policies, [0, 1], (index) => ['body', index]);
  t.notOk(warnings.some((warning) => /'\*'/.test(warning.msg) && /typo|only|looks like/i.test(warning.msg)), JSON.stringify(warnings));
  t.ok(warnings.some((warning) => warning.loc.join('/') === 'body/0/rules/1' && /never decides|shadow|earlier rule/i.test(warning.msg)), `the rule after one of every action never decides: ${JSON.stringify(warnings)}`);
});
