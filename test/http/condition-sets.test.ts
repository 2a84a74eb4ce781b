import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

/** Derived roles that combine: managers (a set) or the requester's delegates (another) read; nobody on leave (a set in a none_of) approves. */
const COMBINED = {
  name: 'combined',
  condition_sets: {
    manager: MANAGER,
    delegate: [{ path: 'attributes.delegate_of', operator: '==', value_from: 'resource.attributes.requester' }],
    on_leave: [{ path: 'attributes.leave', operator: '==', value: true }],
  },
  rules: [
    { name: 'managers or delegates read', effect: 'allow', principal_conditions: [{ any_of: [[{ set: 'manager' }], [{ set: 'delegate' }]] }], actions: ['read'] },
    { name: 'present managers approve', effect: 'allow', principal_conditions: [{ set: 'manager' }, { none_of: [[{ set: 'on_leave' }]] }], actions: ['approve'] },
  ],
};

const asking = (action: string, attributes: Record<string, unknown>) => ({ principal: { uri: 'user:mo', attributes }, resource: { attributes: { amount: 100, requester: 'user:al' } }, action });
const allowedBy = (rule: string) => ({ allowed: true, reason: `Rule ${rule} allowed the action in policy combined` });

t.test('sets combine inside groups: any_of of sets, a set in a none_of, decided alike on the front and in the pool', async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await emptyServer(t, { evaluation, workers: 1 });
    const created = await server.call('POST', '/admin/policies', COMBINED);
    t.equal(created.status, 200, JSON.stringify(created.body));
    t.same(created.body.rules[0].principal_conditions, COMBINED.rules[0]!.principal_conditions, 'stored as written, the sets by name');
    const cases: [ReturnType<typeof asking>, unknown, string][] = [
      [asking('read', { role: 'manager', active: true }), allowedBy('managers-or-delegates-read'), 'a manager reads'],
      [asking('read', { delegate_of: 'user:al' }), allowedBy('managers-or-delegates-read'), "the requester's delegate reads"],
      [asking('read', { role: 'manager', active: false, delegate_of: 'user:zed' }), DENIED, 'neither an active manager nor the delegate'],
      [asking('approve', { role: 'manager', active: true }), allowedBy('present-managers-approve'), 'a present manager approves'],
      [asking('approve', { role: 'manager', active: true, leave: true }), DENIED, 'one on leave does not'],
    ];
    await decidesEachAndInBulk(t, server, cases, evaluation);
    // Explained, a bulk (in a worker, under pool) says what /check says, byte for byte.
    const checks = cases.map(([check]) => check);
    const alone = await Promise.all(checks.map((check) => server.call('POST', '/check?explain=true', check)));
    const inBulk = await server.call('POST', '/check/bulk?explain=true', checks);
    t.equal(JSON.stringify(inBulk.body), JSON.stringify(alone.map((answer) => answer.body)), `${evaluation}: explained alike in a bulk`);
  }
});

t.test("an explanation of a failed any_of names each alternative's set and its first failing item; a plan states the sets", async (t) => {
  const server = await emptyServer(t);
  t.equal((await server.call('POST', '/admin/policies', COMBINED)).status, 200);
  const nobody = await server.call('POST', '/check?explain=true', asking('read', { role: 'manager', active: false, delegate_of: 'user:zed' }));
  t.equal(nobody.status, 200);
  t.same(nobody.body.explain.policies[0].rules[0].failed, {
    side: 'principal',
    group: 'any_of',
    alternatives: [
      { set: 'manager', failed: { path: 'attributes.active', operator: '==', expected: true, actual: false } },
      { set: 'delegate', failed: { path: 'attributes.delegate_of', operator: '==', value_from: 'resource.attributes.requester', expected: 'user:al', actual: 'user:zed' } },
    ],
  });
  const onLeave = await server.call('POST', '/check?explain=true', asking('approve', { role: 'manager', active: true, leave: true }));
  t.same(onLeave.body.explain.policies[0].rules[0].failed, { side: 'principal', group: 'none_of', held: 0 });
  const planned = await server.call('POST', '/plan', { principal: { uri: 'user:mo', attributes: { delegate_of: 'user:al' } }, action: 'read' });
  t.equal(planned.status, 200, JSON.stringify(planned.body));
  t.same(planned.body.condition, { path: 'attributes.requester', operator: '==', value: 'user:al' }, "the delegate set mirrored onto the resource");
});

t.test('in a group, a reference to an undefined set is refused naming where it stands; a set of its own groups refers to no set', async (t) => {
  const server = await emptyServer(t);
  const unknown = await server.call('POST', '/admin/policies', { ...COMBINED, rules: [{ name: 'r', effect: 'allow', principal_conditions: [{ any_of: [[{ set: 'manager' }], [{ set: 'delegat' }]] }], actions: ['read'] }] });
  t.equal(unknown.status, 422);
  t.same(unknown.body.detail.map((issue: { loc: unknown[] }) => issue.loc.join('.')), ['body.rules.0.principal_conditions.0.any_of.1.0.set'], 'one issue, where the name stands');
  t.match(unknown.body.detail[0].msg, /no condition set named 'delegat' \(its sets: manager, delegate, on_leave\)/);
  const nested = await server.call('POST', '/admin/policies', { name: 'p', condition_sets: { outer: [{ any_of: [[{ set: 'inner' }]] }], inner: MANAGER }, rules: [] });
  t.equal(nested.status, 422);
  t.same(nested.body.detail.map((issue: { loc: unknown[]; msg: string }) => [issue.loc.join('.'), issue.msg]), [['body.condition_sets.outer.0.any_of.0.0.set', 'is not allowed here: a condition set refers to no other set']], 'one line, naming the rule it broke');
  const validated = await server.call('POST', '/admin/policies/validate', COMBINED);
  t.equal(validated.status, 200);
  t.notMatch(JSON.stringify(validated.body.warnings ?? []), /unused_condition_set/, 'a set referred to only inside a group is used');
});

// Sets shared by policies: one policy defines the company's roles, others take them with `from`.

const COMPANY_ROLES = { name: 'company-roles', description: 'Roles every policy may take', condition_sets: { manager: MANAGER, auditor: [{ path: 'attributes.role', operator: '==', value: 'auditor' }] }, rules: [], default_effect: 'none' };

const SHARED_EXPENSES = {
  name: 'shared-expenses',
  rules: [
    { name: 'managers approve', effect: 'allow', principal_conditions: [{ set: 'manager', from: 'company-roles' }], actions: ['approve'] },
    { name: 'managers or auditors read', effect: 'allow', principal_conditions: [{ any_of: [[{ set: 'manager', from: 'company-roles' }], [{ set: 'auditor', from: 'company-roles' }]] }], actions: ['read'] },
  ],
};

const sharedAllowed = (rule: string) => ({ allowed: true, reason: `Rule ${rule} allowed the action in policy shared-expenses` });

t.test("a policy takes another's sets with from: decided alike on the front and in the pool, changed with the lending policy, audited there", async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await emptyServer(t, { evaluation, workers: 1 });
    t.equal((await server.call('POST', '/admin/policies', COMPANY_ROLES)).status, 200);
    const created = await server.call('POST', '/admin/policies', SHARED_EXPENSES);
    t.equal(created.status, 200, JSON.stringify(created.body));
    t.same(created.body.rules[0].principal_conditions, [{ set: 'manager', from: 'company-roles' }], 'stored as written');
    await decidesEachAndInBulk(
      t,
      server,
      [
        [asking('approve', { role: 'manager', active: true }), sharedAllowed('managers-approve'), 'a manager as the company defines one approves'],
        [asking('approve', { role: 'manager', active: false }), DENIED, 'an inactive one does not'],
        [asking('read', { role: 'auditor' }), sharedAllowed('managers-or-auditors-read'), 'an auditor reads'],
        [asking('read', { role: 'lead', active: true }), DENIED, 'a lead is nobody yet'],
      ],
      evaluation,
    );
    const inactive = asking('approve', { role: 'manager', active: false });
    const [alone, inBulk] = await Promise.all([server.call('POST', '/check?explain=true', inactive), server.call('POST', '/check/bulk?explain=true', [inactive])]);
    t.equal(JSON.stringify(inBulk.body), JSON.stringify([alone.body]), `${evaluation}: a shared set explained alike in a bulk`);
    // The company's definition changes once, in its policy: every policy that takes it follows.
    const leads = { ...COMPANY_ROLES, condition_sets: { ...COMPANY_ROLES.condition_sets, manager: [{ path: 'attributes.role', operator: 'in', value: ['manager', 'lead'] }] } };
    t.equal((await server.call('PUT', '/admin/policies/company-roles', leads)).status, 200);
    await decidesEachAndInBulk(t, server, [[asking('read', { role: 'lead' }), sharedAllowed('managers-or-auditors-read'), 'a lead is now a manager']], `${evaluation}, after the change`);
    const history = await server.call('GET', '/admin/policies/company-roles/history');
    t.same(history.body.records.map((record: { version: number }) => record.version), [2, 1], 'the change is audited with the lending policy');
  }
});

t.test('an explanation names the set and the policy it is taken from', async (t) => {
  const server = await emptyServer(t);
  t.equal((await server.call('POST', '/admin/policies', COMPANY_ROLES)).status, 200);
  t.equal((await server.call('POST', '/admin/policies', SHARED_EXPENSES)).status, 200);
  const inactive = await server.call('POST', '/check?explain=true', asking('approve', { role: 'manager', active: false }));
  const traced = inactive.body.explain.policies.find((policy: { name: string }) => policy.name === 'shared-expenses');
  t.same(traced.rules[0].failed, { side: 'principal', set: 'manager', from: 'company-roles', failed: { path: 'attributes.active', operator: '==', expected: true, actual: false } });
});

t.test('writes keep shared sets whole: a set taken from a policy that is not there, or lacks it, is refused where it stands; a policy that lends one is not deleted nor rewritten without it', async (t) => {
  const server = await emptyServer(t);
  t.equal((await server.call('POST', '/admin/policies', COMPANY_ROLES)).status, 200);
  const takes = (from: string, set: string) => ({ name: 'p', rules: [{ name: 'r', effect: 'allow', principal_conditions: [{ any_of: [[{ set, from }]] }], actions: ['read'] }] });
  for (const [policy, message] of [
    [takes('company-role', 'manager'), /there is no policy named 'company-role' to take condition set 'manager' from/],
    [takes('company-roles', 'manger'), /policy 'company-roles' has no condition set named 'manger' \(its sets: manager, auditor\)/],
  ] as const) {
    for (const path of ['/admin/policies', '/admin/policies/validate']) {
      const refused = await server.call('POST', path, policy);
      t.equal(refused.status, 422, path);
      t.same(refused.body.detail.map((issue: { loc: unknown[] }) => issue.loc.join('.')), ['body.rules.0.principal_conditions.0.any_of.0.0.from'], `${path}: one issue, where the reference stands`);
      t.match(refused.body.detail[0].msg, message);
    }
  }
  t.equal((await server.call('POST', '/admin/policies', SHARED_EXPENSES)).status, 200);
  const deleted = await server.call('DELETE', '/admin/policies/company-roles');
  t.equal(deleted.status, 409);
  t.match(deleted.body.detail, /Policy 'company-roles' cannot be deleted: policy 'shared-expenses' refers to its set 'manager', policy 'shared-expenses' refers to its set 'auditor'/);
  const withoutAuditor = await server.call('PUT', '/admin/policies/company-roles', { ...COMPANY_ROLES, condition_sets: { manager: MANAGER } });
  t.equal(withoutAuditor.status, 409);
  t.match(withoutAuditor.body.detail, /policy 'shared-expenses' refers to its set 'auditor'/);
  t.equal((await server.call('PUT', '/admin/policies/company-roles', { ...COMPANY_ROLES, description: 'kept whole' })).status, 200, 'a change that keeps the sets is written');
  t.equal((await server.call('DELETE', '/admin/policies/shared-expenses')).status, 200);
  t.equal((await server.call('DELETE', '/admin/policies/company-roles')).status, 200, 'once nobody takes its sets, it goes');
});

t.test('policy files are held to one another as writes are: a set taken from a policy the directory does not hold stops the start, naming the file and the reference', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-shared-sets-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'expenses.json'), JSON.stringify(SHARED_EXPENSES));
  await t.rejects(emptyServer(t, { policiesDir: dir }), { message: /expenses\.json: rules\.0\.principal_conditions\.0\.from: there is no policy named 'company-roles'/ });
  writeFileSync(join(dir, 'company-roles.json'), JSON.stringify(COMPANY_ROLES));
  const server = await emptyServer(t, { policiesDir: dir });
  await decides(t, server, asking('approve', { role: 'manager', active: true }), sharedAllowed('managers-approve'), '/check', 'with the lender beside it, decided');
});

t.test('a shadow of the lending policy shows what its change would do to the policies that take its sets, changing no answer', async (t) => {
  const server = await emptyServer(t, { evaluation: 'inline' });
  t.equal((await server.call('POST', '/admin/policies', COMPANY_ROLES)).status, 200);
  t.equal((await server.call('POST', '/admin/policies', SHARED_EXPENSES)).status, 200);
  const leadsToo = { ...COMPANY_ROLES, name: 'company-roles-next', shadow: 'company-roles', condition_sets: { ...COMPANY_ROLES.condition_sets, manager: [{ path: 'attributes.role', operator: 'in', value: ['manager', 'lead'] }] } };
  t.equal((await server.call('POST', '/admin/policies', leadsToo)).status, 200);
  await decides(t, server, asking('read', { role: 'lead' }), DENIED, '/check', 'the live answer is unchanged');
  await decides(t, server, asking('read', { role: 'auditor' }), sharedAllowed('managers-or-auditors-read'), '/check', 'and one both agree on');
  const report = (await server.call('GET', '/admin/shadow')).body;
  t.same(report.decided, { agree: 1, allow_to_deny: 0, deny_to_allow: 1 }, "the shadow's manager set lets the lead read: counted");
  t.match(report.disagreements[0], { live: { allowed: false }, shadow: { allowed: true, explain: { decided_by: { rule: 'managers-or-auditors-read' } } } });
});

t.test("a rule counts the conditions of the sets it takes from other policies toward its limit, and a lender's set grows only as far as its takers' rules allow", async (t) => {
  const server = await emptyServer(t, { maxConditionsPerRule: 4 });
  const threeConditions = [
    { path: 'attributes.role', operator: '==', value: 'manager' },
    { path: 'attributes.active', operator: '==', value: true },
    { path: 'attributes.level', operator: 'gte', value: 2 },
  ];
  t.equal((await server.call('POST', '/admin/policies', { ...COMPANY_ROLES, condition_sets: { manager: threeConditions, auditor: threeConditions } })).status, 200);
  const taking = (references: unknown[]) => ({ name: 'taking', rules: [{ name: 'r', effect: 'allow', principal_conditions: references, actions: ['read'] }] });
  const twice = await server.call('POST', '/admin/policies', taking([{ set: 'manager', from: 'company-roles' }, { any_of: [[{ set: 'auditor', from: 'company-roles' }]] }]));
  t.equal(twice.status, 422, 'six conditions through two shared sets, past the limit of four');
  t.same(twice.body.detail, [{ loc: ['body', 'rules', 0], msg: 'a rule may have at most 4 conditions, principal and resource together, the sets it takes from other policies counted', type: 'too_long' }]);
  t.equal((await server.call('POST', '/admin/policies', taking([{ set: 'manager', from: 'company-roles' }]))).status, 200, 'three are within it');
  const grown = await server.call('PUT', '/admin/policies/company-roles', { ...COMPANY_ROLES, condition_sets: { manager: [...threeConditions, { path: 'attributes.x', operator: 'exists' }, { path: 'attributes.y', operator: 'exists' }], auditor: threeConditions } });
  t.equal(grown.status, 409);
  t.match(grown.body.detail, /Policy 'company-roles' cannot be written so: policy 'taking' rules\.0: a rule may have at most 4 conditions/);
});

t.test('a restore or a promote that would take a set away from the policies that take it is refused as a rewrite is', async (t) => {
  const server = await emptyServer(t);
  const managersOnly = { ...COMPANY_ROLES, condition_sets: { manager: MANAGER } };
  t.equal((await server.call('POST', '/admin/policies', managersOnly)).status, 200, 'version 1: managers only');
  t.equal((await server.call('PUT', '/admin/policies/company-roles', COMPANY_ROLES)).status, 200, 'version 2: auditors too');
  t.equal((await server.call('POST', '/admin/policies', SHARED_EXPENSES)).status, 200, 'a policy takes both');
  const restored = await server.call('POST', '/admin/policies/company-roles/restore?version=1');
  t.equal(restored.status, 409);
  t.match(restored.body.detail, /policy 'shared-expenses' refers to its set 'auditor'/);
  t.equal((await server.call('POST', '/admin/policies', { ...managersOnly, name: 'company-roles-next', shadow: 'company-roles' })).status, 200, 'a shadow without auditors may be written');
  const promoted = await server.call('POST', '/admin/policies/company-roles-next/promote');
  t.equal(promoted.status, 409, 'but not promoted over the lender');
  t.match(promoted.body.detail, /policy 'shared-expenses' refers to its set 'auditor'/);
  await decides(t, server, asking('read', { role: 'auditor' }), sharedAllowed('managers-or-auditors-read'), '/check', 'the auditors still read');
});
