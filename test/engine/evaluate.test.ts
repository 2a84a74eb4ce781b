import t from 'tap';
import { compile, evaluate, type Decision } from '../../src/engine/index.js';
import type { Policy } from '../../src/schemas/policy.js';
import { cond, entity, policy, request, rule } from './helpers.js';

const DENIED_DEFAULT = { allowed: false, reason: 'Action denied by default effect' };
const ALLOWED_DEFAULT = { allowed: true, reason: 'Action allowed by default effect' };
const NO_POLICIES = { allowed: false, reason: 'Action denied by default because there are no policies' };
const allowedBy = (r: string, p: string) => ({ allowed: true, reason: `Rule ${r} allowed the action in policy ${p}` });
const deniedBy = (r: string, p: string) => ({ allowed: false, reason: `Rule ${r} denied the action in policy ${p}` });

const admin = entity({ role: 'admin', dept: 'it' });
const guest = entity({ role: 'guest', dept: 'sales' });
const isAdmin = cond('==', 'admin', 'attributes.role');
const isGuest = cond('==', 'guest', 'attributes.role');
const inIt = cond('==', 'it', 'attributes.dept');

function decide(policies: Policy[], principal = admin, action = 'access', resource = entity()): Decision {
  return evaluate(compile(policies, 1), request(principal, resource, action));
}

t.test('no policies', async (t) => {
  t.same(decide([]), NO_POLICIES);
  t.same(decide([], admin, 'read'), NO_POLICIES);
  const snapshot = compile([], 7);
  t.equal(snapshot.revision, 7);
  t.equal(snapshot.policyCount, 0);
});

t.test('a compiled snapshot keeps its revision and policy count', async (t) => {
  const snapshot = compile([policy('a', []), policy('b', [])], 42);
  t.equal(snapshot.revision, 42);
  t.equal(snapshot.policyCount, 2);
});

t.test('an allow rule that matches', async (t) => {
  const policies = [policy('p', [rule('admins', { principal: [isAdmin] })])];
  t.same(decide(policies, admin), allowedBy('admins', 'p'));
  t.same(decide(policies, guest), DENIED_DEFAULT);
});

t.test('a deny rule that matches', async (t) => {
  const policies = [policy('p', [rule('no-guests', { effect: 'deny', principal: [isGuest] })], 'allow')];
  t.same(decide(policies, guest), deniedBy('no-guests', 'p'));
  t.same(decide(policies, admin), ALLOWED_DEFAULT);
});

t.test('default effects', async (t) => {
  const never = rule('never', { principal: [cond('==', 'nobody', 'attributes.role')] });
  t.same(decide([policy('a', [never], 'deny')]), DENIED_DEFAULT);
  t.same(decide([policy('a', [never], 'allow')]), ALLOWED_DEFAULT);
  t.same(decide([policy('a', [], 'allow'), policy('b', [], 'allow')]), ALLOWED_DEFAULT);
  t.same(decide([policy('a', [], 'allow'), policy('b', [], 'deny')]), DENIED_DEFAULT, 'any deny default denies');
  t.same(decide([policy('a', [], 'deny'), policy('b', [], 'allow')]), DENIED_DEFAULT, 'whatever its position');
  t.same(decide([policy('a', [], 'allow'), policy('b', [], 'allow'), policy('c', [], 'deny')]), DENIED_DEFAULT);
  t.same(decide([policy('a', [], 'deny')]), DENIED_DEFAULT, 'a policy without rules still has its default');
  // The default also applies to actions no rule names.
  const policies = [policy('a', [rule('r', { actions: ['read'] })], 'allow')];
  t.same(decide(policies, admin, 'write'), ALLOWED_DEFAULT);
  t.same(decide([policy('a', [rule('r', { actions: ['read'] })], 'deny')], admin, 'write'), DENIED_DEFAULT);
});

t.test('a matching rule beats every default effect', async (t) => {
  t.same(decide([policy('a', [], 'deny'), policy('b', [rule('ok')], 'deny')]), allowedBy('ok', 'b'));
  t.same(decide([policy('a', [], 'allow'), policy('b', [rule('no', { effect: 'deny' })], 'allow')]), deniedBy('no', 'b'));
});

t.test('a deny rule wins over an allow rule across policies, in either order', async (t) => {
  const allowP = policy('allow-p', [rule('let-in', { principal: [isAdmin] })]);
  const denyP = policy('deny-p', [rule('keep-out', { effect: 'deny', principal: [inIt] })]);
  t.same(decide([allowP, denyP]), deniedBy('keep-out', 'deny-p'));
  t.same(decide([denyP, allowP]), deniedBy('keep-out', 'deny-p'));
  // When the deny rule does not match, the allow rule counts.
  t.same(decide([allowP, denyP], entity({ role: 'admin', dept: 'ops' })), allowedBy('let-in', 'allow-p'));
  // When the allow rule does not match either, the defaults decide.
  t.same(decide([allowP, denyP], entity({ role: 'guest', dept: 'ops' })), DENIED_DEFAULT);
});

t.test('within a policy the first matching rule counts', async (t) => {
  const allowThenDeny = policy('p', [rule('a', { principal: [isAdmin] }), rule('b', { effect: 'deny', principal: [inIt] })]);
  t.same(decide([allowThenDeny]), allowedBy('a', 'p'), '[allow A, deny B] both matching: allow A');
  t.same(decide([allowThenDeny], entity({ role: 'x', dept: 'it' })), deniedBy('b', 'p'), 'only B matches: deny B');

  const denyThenAllow = policy('p', [rule('b', { effect: 'deny', principal: [inIt] }), rule('a', { principal: [isAdmin] })]);
  t.same(decide([denyThenAllow]), deniedBy('b', 'p'));
  t.same(decide([denyThenAllow], entity({ role: 'admin', dept: 'ops' })), allowedBy('a', 'p'));

  const twoAllows = policy('p', [rule('first', { principal: [isAdmin] }), rule('second', { principal: [inIt] })]);
  t.same(decide([twoAllows]), allowedBy('first', 'p'));
  t.same(decide([twoAllows], entity({ role: 'x', dept: 'it' })), allowedBy('second', 'p'));

  const twoDenies = policy('p', [rule('d1', { effect: 'deny', principal: [isAdmin] }), rule('d2', { effect: 'deny' })], 'allow');
  t.same(decide([twoDenies]), deniedBy('d1', 'p'));
  t.same(decide([twoDenies], guest), deniedBy('d2', 'p'));

  // Many rules: a shadowed deny after a matching allow is ignored even far down the list.
  const many = policy('p', [
    rule('r0', { principal: [cond('==', 'nobody', 'attributes.role')] }),
    rule('r1', { principal: [isAdmin] }),
    rule('r2', { effect: 'deny' }),
    rule('r3', { effect: 'deny', principal: [isAdmin] }),
  ]);
  t.same(decide([many]), allowedBy('r1', 'p'));
  t.same(decide([many], guest), deniedBy('r2', 'p'));
});

t.test("a policy's shadowed deny does not count, another policy's first-match deny does", async (t) => {
  const allowThenDeny = policy('first', [rule('a', { principal: [isAdmin] }), rule('b', { effect: 'deny', principal: [inIt] })]);
  const otherDeny = policy('second', [rule('c', { effect: 'deny', principal: [inIt] })]);
  const otherAllowThenDeny = policy('third', [rule('d', { principal: [isAdmin] }), rule('e', { effect: 'deny' })]);
  t.same(decide([allowThenDeny, otherDeny]), deniedBy('c', 'second'));
  t.same(decide([otherDeny, allowThenDeny]), deniedBy('c', 'second'));
  t.same(decide([allowThenDeny, otherAllowThenDeny]), allowedBy('a', 'first'));
  t.same(decide([otherAllowThenDeny, allowThenDeny]), allowedBy('d', 'third'));
  t.same(decide([otherAllowThenDeny, allowThenDeny, otherDeny]), deniedBy('c', 'second'));
});

t.test('the earliest policy in creation order is named', async (t) => {
  const allows = [policy('one', [rule('x')]), policy('two', [rule('y')]), policy('three', [rule('z')])];
  t.same(decide(allows), allowedBy('x', 'one'));
  t.same(decide([allows[2]!, allows[0]!, allows[1]!]), allowedBy('z', 'three'));
  const denies = [
    policy('one', [rule('x')]),
    policy('two', [rule('y', { effect: 'deny' })]),
    policy('three', [rule('z', { effect: 'deny' })]),
  ];
  t.same(decide(denies), deniedBy('y', 'two'));
  t.same(decide([denies[2]!, denies[1]!, denies[0]!]), deniedBy('z', 'three'));
  // An earlier policy whose rules do not match is skipped.
  const skip = [policy('one', [rule('x', { principal: [isGuest] })]), policy('two', [rule('y', { principal: [isAdmin] })])];
  t.same(decide(skip), allowedBy('y', 'two'));
  t.same(decide(skip, guest), allowedBy('x', 'one'));
});

t.test('the same rule name in different policies', async (t) => {
  const policies = [policy('p1', [rule('same', { principal: [isGuest] })]), policy('p2', [rule('same', { principal: [isAdmin] })])];
  t.same(decide(policies, admin), allowedBy('same', 'p2'));
  t.same(decide(policies, guest), allowedBy('same', 'p1'));
});

t.test('action matching', async (t) => {
  const policies = [policy('p', [rule('readers', { actions: ['read'] }), rule('writers', { actions: ['write', 'delete'], principal: [isAdmin] })])];
  t.same(decide(policies, guest, 'read'), allowedBy('readers', 'p'));
  t.same(decide(policies, admin, 'write'), allowedBy('writers', 'p'));
  t.same(decide(policies, admin, 'delete'), allowedBy('writers', 'p'));
  t.same(decide(policies, guest, 'write'), DENIED_DEFAULT);
  t.same(decide(policies, admin, 'access'), DENIED_DEFAULT, 'an action no rule names falls back to the defaults');
  t.same(decide(policies, admin, 'Read'), DENIED_DEFAULT, 'actions are case-sensitive');
  t.same(decide(policies, admin, 'rea'), DENIED_DEFAULT);
  t.same(decide(policies, admin, ''), DENIED_DEFAULT);

  // A deny rule for another action never matches.
  const denyWrite = [policy('p', [rule('no-write', { effect: 'deny', actions: ['write'] }), rule('read', { actions: ['read'] })])];
  t.same(decide(denyWrite, admin, 'read'), allowedBy('read', 'p'));
  t.same(decide(denyWrite, admin, 'write'), deniedBy('no-write', 'p'));

  // Rules for another action do not settle the policy's first match.
  const order = [policy('p', [rule('first-write', { actions: ['write'] }), rule('then-deny', { effect: 'deny', actions: ['read'] })])];
  t.same(decide(order, admin, 'read'), deniedBy('then-deny', 'p'));
  t.same(decide(order, admin, 'write'), allowedBy('first-write', 'p'));

  // A repeated action in one rule is harmless.
  t.same(decide([policy('p', [rule('r', { actions: ['read', 'read'] })])], admin, 'read'), allowedBy('r', 'p'));

  // Names like Object.prototype members are ordinary actions.
  const proto = [policy('p', [rule('r', { actions: ['constructor', '__proto__'] })])];
  t.same(decide(proto, admin, 'constructor'), allowedBy('r', 'p'));
  t.same(decide(proto, admin, '__proto__'), allowedBy('r', 'p'));
  t.same(decide(proto, admin, 'toString'), DENIED_DEFAULT);
  t.same(decide([policy('p', [rule('r', { actions: ['read'] })])], admin, 'constructor'), DENIED_DEFAULT);
  t.same(decide([policy('p', [rule('r', { actions: ['read'] })])], admin, 'hasOwnProperty'), DENIED_DEFAULT);
});

t.test('conditions combine with AND, across both sides', async (t) => {
  const both = policy('p', [rule('r', { principal: [isAdmin, inIt], resource: [cond('==', 'doc', 'attributes.kind')] })]);
  const doc = entity({ kind: 'doc' });
  const img = entity({ kind: 'img' });
  t.same(decide([both], admin, 'access', doc), allowedBy('r', 'p'));
  t.same(decide([both], admin, 'access', img), DENIED_DEFAULT, 'resource condition fails');
  t.same(decide([both], entity({ role: 'admin', dept: 'ops' }), 'access', doc), DENIED_DEFAULT, 'second principal condition fails');
  t.same(decide([both], entity({ role: 'guest', dept: 'it' }), 'access', doc), DENIED_DEFAULT, 'first principal condition fails');
  t.same(decide([both], entity({ role: 'admin' }), 'access', doc), DENIED_DEFAULT, 'a principal attribute is missing');
  t.same(decide([both], admin, 'access', entity()), DENIED_DEFAULT, 'the resource has no attributes');

  // Principal conditions test the principal, resource conditions the resource: never swapped.
  const sides = policy('p', [rule('r', { principal: [cond('==', 'P', 'attributes.side')], resource: [cond('==', 'R', 'attributes.side')] })]);
  t.same(decide([sides], entity({ side: 'P' }), 'access', entity({ side: 'R' })), allowedBy('r', 'p'));
  t.same(decide([sides], entity({ side: 'R' }), 'access', entity({ side: 'P' })), DENIED_DEFAULT);

  // Several conditions on one attribute: a range.
  const range = policy('p', [rule('adult', { principal: [cond('gte', 18, 'attributes.age'), cond('lt', 65, 'attributes.age')] })]);
  t.same(decide([range], entity({ age: 18 })), allowedBy('adult', 'p'));
  t.same(decide([range], entity({ age: 64 })), allowedBy('adult', 'p'));
  t.same(decide([range], entity({ age: 65 })), DENIED_DEFAULT);
  t.same(decide([range], entity({ age: 17 })), DENIED_DEFAULT);
  t.same(decide([range], entity({ age: '30' })), DENIED_DEFAULT);
});

t.test('empty condition lists match every entity', async (t) => {
  const policies = [policy('p', [rule('all')])];
  t.same(decide(policies, entity()), allowedBy('all', 'p'));
  t.same(decide(policies, entity({}, 'u:1')), allowedBy('all', 'p'));
  t.same(decide(policies, admin, 'access', entity({ anything: [1] })), allowedBy('all', 'p'));
  t.same(decide(policies, admin, 'other'), DENIED_DEFAULT, 'but only for its actions');
  const onlyPrincipal = [policy('p', [rule('r', { principal: [isAdmin] })])];
  t.same(decide(onlyPrincipal, admin, 'access', entity({ any: 'thing' })), allowedBy('r', 'p'));
  const onlyResource = [policy('p', [rule('r', { resource: [cond('==', 'doc', 'attributes.kind')] })])];
  t.same(decide(onlyResource, entity(), 'access', entity({ kind: 'doc' })), allowedBy('r', 'p'));
  t.same(decide(onlyResource, admin, 'access', entity({ kind: 'img' })), DENIED_DEFAULT);
});

t.test('reasons are exact and name rule and policy as given', async (t) => {
  t.same(decide([policy('my-policy', [rule('my_rule-1')])]), { allowed: true, reason: 'Rule my_rule-1 allowed the action in policy my-policy' });
  t.same(decide([policy('pol', [rule('r', { effect: 'deny' })])]), { allowed: false, reason: 'Rule r denied the action in policy pol' });
  const decision = decide([policy('p', [rule('r')])]);
  t.equal(decision.allowed, true);
  t.equal(decision.reason, 'Rule r allowed the action in policy p');
  t.same(Object.keys(decision).sort(), ['allowed', 'reason']);
});

t.test('a snapshot is reusable and independent of later changes to its input', async (t) => {
  const rules = [rule('r', { principal: [isAdmin] })];
  const policies = [policy('p', rules)];
  const snapshot = compile(policies, 1);
  t.same(evaluate(snapshot, request(admin)), allowedBy('r', 'p'));
  t.same(evaluate(snapshot, request(guest)), DENIED_DEFAULT);
  t.same(evaluate(snapshot, request(admin)), allowedBy('r', 'p'), 'same answer twice');
  policies.push(policy('q', [rule('d', { effect: 'deny' })]));
  t.same(evaluate(snapshot, request(admin)), allowedBy('r', 'p'), 'a policy added after compiling is not seen');
  t.same(evaluate(compile(policies, 2), request(admin)), deniedBy('d', 'q'));
});

t.test('many policies and rules', async (t) => {
  const policies: Policy[] = [];
  for (let p = 0; p < 20; p++) {
    const rules = [];
    for (let r = 0; r < 10; r++) {
      rules.push(rule(`r${r}`, { principal: [cond('==', p * 10 + r, 'attributes.n')], effect: r === 9 ? 'deny' : 'allow' }));
    }
    policies.push(policy(`p${p}`, rules));
  }
  t.same(decide(policies, entity({ n: 0 })), allowedBy('r0', 'p0'));
  t.same(decide(policies, entity({ n: 57 })), allowedBy('r7', 'p5'));
  t.same(decide(policies, entity({ n: 199 })), deniedBy('r9', 'p19'));
  t.same(decide(policies, entity({ n: 200 })), DENIED_DEFAULT);
  t.same(decide(policies, entity({ n: '57' })), DENIED_DEFAULT);
  // A catch-all deny in the last policy beats every allow.
  policies.push(policy('last', [rule('catch-all', { effect: 'deny' })]));
  t.same(decide(policies, entity({ n: 57 })), deniedBy('catch-all', 'last'));
});
