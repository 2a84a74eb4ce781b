import t from 'tap';
import { startServer } from '../helpers/server.js';

// POST /admin/policies/validate on a real server: what a write would refuse, as the write refuses
// it; warnings otherwise; nothing written either way.

const eq = (key: string, value: unknown) => ({ path: `attributes.${key}`, operator: '==', value });

/** The two policies of the README's first example. */
const IT_DESK = {
  name: 'IT desk',
  description: 'IT staff administer laptops',
  rules: [{ name: 'IT admins', effect: 'allow', principal_conditions: [eq('department', 'it')], resource_conditions: [eq('kind', 'laptop')], actions: ['administer'] }],
};
const HR_RECORDS = {
  version: '1.0',
  name: 'hr-records',
  description: null,
  rules: [{ name: 'hr-records', effect: 'allow', principal_conditions: [eq('department', 'hr')], resource_conditions: [eq('kind', 'hr-record')], actions: ['read'] }],
  default_effect: 'deny',
};

t.test('a policy a write would refuse: the same 422, for one policy and located by index in a list', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const refused: unknown[] = [
    { rules: [] },
    { name: 'x', rules: [{ name: 'r', effect: 'maybe', actions: ['read'] }] },
    { name: 'x', rules: [{ name: 'r', effect: 'allow', actions: ['read'], principal_conditions: [{ path: 'department', operator: '==', value: 'it' }] }] },
    { name: 'x', rules: [{ name: 'r', effect: 'allow', actions: ['read'], principal_conditions: [{ path: 'attributes.age', operator: 'gt', value: '18' }] }] },
    { name: '!!!', rules: [] },
    'a policy',
  ];
  for (const policy of refused) {
    const written = await server.call('POST', '/admin/policies', policy);
    const validated = await server.call('POST', '/admin/policies/validate', policy);
    t.equal(written.status, 422);
    t.same(validated, { ...validated, status: 422, body: written.body }, JSON.stringify(policy));
    const listed = await server.call('POST', '/admin/policies/validate', [HR_RECORDS, policy]);
    t.same(
      listed.body.detail,
      written.body.detail.map((issue: { loc: unknown[] }) => ({ ...issue, loc: ['body', 1, ...issue.loc.slice(1)] })),
      'in a list, located by index',
    );
  }
  const twice = await server.call('POST', '/admin/policies/validate', [HR_RECORDS, { ...HR_RECORDS, name: 'HR records' }]);
  t.same(twice.body, { detail: [{ loc: ['body', 1, 'name'], msg: "policy 'hr-records' is already defined earlier", type: 'value_error' }] });
  t.same((await server.call('GET', '/admin/policies')).body, [], 'nothing was written');
});

t.test("the README's policies: valid, no warnings, nothing written", async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  t.same((await server.call('POST', '/admin/policies/validate', IT_DESK)).body, { valid: true, warnings: [] });
  t.same((await server.call('POST', '/admin/policies/validate', [IT_DESK, HR_RECORDS])).body, { valid: true, warnings: [] });
  t.equal((await server.call('POST', '/admin/policies', IT_DESK)).status, 200);
  t.same((await server.call('POST', '/admin/policies/validate', HR_RECORDS)).body, { valid: true, warnings: [] });
  t.same((await server.call('GET', '/admin/policies')).body.map((p: { name: string }) => p.name), ['it-desk']);
});

t.test('warnings, each policy taken with the stored ones', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', IT_DESK)).status, 200);
  const crafted = {
    name: 'crafted',
    rules: [
      { name: 'never', effect: 'allow', principal_conditions: [eq('department', 'a'), eq('department', 'b')], actions: ['read'] },
      { name: 'all readers', effect: 'allow', principal_conditions: [eq('role', 'reader')], actions: ['read'] },
      { name: 'it readers', effect: 'allow', principal_conditions: [eq('role', 'reader'), eq('department', 'it')], actions: ['read'] },
      { name: 'typo', effect: 'allow', principal_conditions: [eq('role', 'admin'), { path: 'attributes.role', operator: 'equals', value: 'admin' }], actions: ['adminster'] },
    ],
  };
  const answer = await server.call('POST', '/admin/policies/validate', crafted);
  t.equal(answer.status, 200);
  t.same(answer.body, {
    valid: true,
    warnings: [
      {
        loc: ['body', 'rules', 0, 'principal_conditions'],
        msg: 'this rule can never match: no value of attributes.department satisfies attributes.department == "a" and attributes.department == "b"',
        type: 'never_matches',
      },
      { loc: ['body', 'rules', 2], msg: "this rule never decides: it is shadowed by rule 'all-readers' above, of the same effect", type: 'shadowed' },
      { loc: ['body', 'rules', 3, 'actions', 0], msg: "no rule of any other policy names action 'adminster': did you mean 'administer'?", type: 'unknown_action' },
      { loc: ['body', 'rules', 3, 'principal_conditions', 1], msg: 'duplicate condition: attributes.role equals "admin" is already in this rule', type: 'duplicate_condition' },
    ],
  });
  const replacing = await server.call('POST', '/admin/policies/validate', [crafted, { ...IT_DESK, rules: [{ ...IT_DESK.rules[0], actions: ['adminster'] }] }]);
  t.same(
    replacing.body.warnings.filter((w: { type: string }) => w.type === 'unknown_action'),
    [],
    'a policy sent replaces the stored one of its name: administer is named nowhere any more',
  );
  t.same((await server.call('GET', '/admin/policies')).body.map((p: { name: string }) => p.name), ['it-desk'], 'nothing was written');
});

t.test('admin authentication as for the other admin routes', async (t) => {
  const server = await startServer({ adminAuthRequired: true, adminApiKey: 'k' });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies/validate', IT_DESK)).status, 401);
  t.equal((await server.call('POST', '/admin/policies/validate', IT_DESK, { 'way-api-key': 'k' })).status, 200);
});

t.test('bounded: actions of at most 256 characters; a report cut at --max-answer-size, saying so', async (t) => {
  const server = await startServer({ maxAnswerSize: 4096, maxPlanSize: 1024 });
  t.teardown(server.close);
  const withAction = (action: string) => ({ name: 'long', rules: [{ name: 'r', effect: 'allow', actions: [action] }] });
  const tooLong = 'a'.repeat(257);
  const issue = { loc: ['body', 'rules', 0, 'actions', 0], msg: 'must NOT have more than 256 characters', type: 'maxLength' };
  for (const path of ['/admin/policies', '/admin/policies/validate']) {
    const refused = await server.call('POST', path, withAction(tooLong));
    t.strictSame([refused.status, refused.body.detail[0]], [422, issue], path);
  }
  const simple = await server.call('POST', '/admin/policies/simple?name=long', { principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } }, action: tooLong });
  t.strictSame([simple.status, simple.body.detail[0].loc], [422, ['body', 'action']], 'the simple policy too');
  t.equal((await server.call('POST', '/admin/policies', withAction('a'.repeat(256)))).status, 200, '256 characters are fine');

  const duplicated = Array.from({ length: 40 }, (_, index) => ({ name: `r${index}`, effect: 'allow', principal_conditions: [eq('x', 1), eq('x', 1)], actions: ['read'] }));
  const report = await server.call('POST', '/admin/policies/validate', { name: 'many', rules: duplicated });
  t.equal(report.status, 200);
  t.ok(JSON.stringify(report.body).length < 4096 + 500, 'within the budget');
  t.same(report.body.warnings.at(-1), {
    loc: ['body'],
    msg: 'the report stops here: its warnings would be longer than 4096 characters; fix these, or validate fewer policies at a time, to see the rest',
    type: 'incomplete',
  });
  t.ok(report.body.warnings.length > 5, 'after the warnings that fit');
});
