import t from 'tap';
import { Query } from 'mingo';
import { startServer, type TestServer } from '../helpers/server.js';
import { pythonPolicyProblems } from '../helpers/eunomia-models.js';

// A missing attribute makes any condition on it false, in allow and deny rules alike, so a request
// escapes a deny rule by leaving the attribute out; `exists` and `not_exists` test presence, so that
// a deny rule can close that gap, and validation points at the deny rules that leave it open.

async function fresh(t: { teardown(fn: () => unknown): void }, overrides = {}): Promise<TestServer> {
  const server = await startServer(overrides);
  t.teardown(server.close);
  return server;
}

const LAPTOPS = {
  name: 'Laptops',
  rules: [
    {
      name: 'IT administers',
      effect: 'allow',
      principal_conditions: [{ path: 'attributes.department', operator: '==', value: 'it' }],
      resource_conditions: [{ path: 'attributes.kind', operator: '==', value: 'laptop' }],
      actions: ['administer'],
    },
  ],
};
const CONTRACTORS = {
  name: 'contractors',
  effect: 'deny',
  principal_conditions: [{ path: 'attributes.employment', operator: 'in', value: ['contractor', 'intern'] }],
  actions: ['administer', 'delete'],
};
const UNKNOWN_EMPLOYMENT = {
  name: 'unknown employment',
  effect: 'deny',
  principal_conditions: [{ path: 'attributes.employment', operator: 'not_exists' }],
  actions: ['administer', 'delete'],
};
const noContractors = (rules: unknown[]) => ({ name: 'No contractors', rules, default_effect: 'allow' });

const administer = (principal: Record<string, unknown>) => ({ principal: { attributes: principal }, resource: { attributes: { kind: 'laptop' } }, action: 'administer' });

t.test('a deny rule on not_exists denies the requests that leave the attribute out', async (t) => {
  const server = await fresh(t);
  t.equal((await server.call('POST', '/admin/policies', LAPTOPS)).status, 200);
  const created = await server.call('POST', '/admin/policies', noContractors([CONTRACTORS, UNKNOWN_EMPLOYMENT]));
  t.equal(created.status, 200, JSON.stringify(created.body));
  t.strictSame(created.body.rules[1].principal_conditions, [{ path: 'attributes.employment', operator: 'not_exists' }], 'stored and answered without a value');

  const decide = async (principal: Record<string, unknown>) => (await server.call('POST', '/check', administer(principal))).body;
  t.same(await decide({ department: 'it', employment: 'staff' }), { allowed: true, reason: 'Rule it-administers allowed the action in policy laptops' });
  t.same(await decide({ department: 'it', employment: 'contractor' }), { allowed: false, reason: 'Rule contractors denied the action in policy no-contractors' });
  t.same(await decide({ department: 'it' }), { allowed: false, reason: 'Rule unknown-employment denied the action in policy no-contractors' }, 'left out: denied');
  t.same(await decide({ department: 'it', employment: null }), { allowed: true, reason: 'Rule it-administers allowed the action in policy laptops' }, 'null is a value: present');

  const bulk = await server.call('POST', '/check/bulk', [administer({ department: 'it' }), administer({ department: 'it', employment: 'staff' })]);
  t.same(bulk.body.map((answer: { allowed: boolean }) => answer.allowed), [false, true], 'in a bulk too');

  const explained = await server.call('POST', '/check?explain=true', administer({ department: 'it', employment: 'staff' }));
  const rules = explained.body.explain.policies[1].rules;
  t.same(rules[1], {
    name: 'unknown-employment',
    effect: 'deny',
    matched: false,
    failed: { side: 'principal', path: 'attributes.employment', operator: 'not_exists', actual: 'staff' },
  }, 'explained: the value that was there');
});

t.test('exists: an allow rule that needs the attribute present, whatever its value', async (t) => {
  const server = await fresh(t);
  const badge = { name: 'badge', rules: [{ name: 'badged', effect: 'allow', principal_conditions: [{ path: 'attributes.badge', operator: 'exists' }], actions: ['enter'] }] };
  t.equal((await server.call('POST', '/admin/policies', badge)).status, 200);
  const enter = (attributes: Record<string, unknown>) => ({ principal: { attributes }, resource: { attributes: { door: 'main' } }, action: 'enter' });
  const answers = await server.call('POST', '/check/bulk', [enter({ badge: 'b-1' }), enter({ badge: false }), enter({ badge: null }), enter({ name: 'ann' })]);
  t.same(answers.body.map((answer: { allowed: boolean }) => answer.allowed), [true, true, true, false]);
  const explained = await server.call('POST', '/check?explain=true', enter({ name: 'ann' }));
  t.same(explained.body.explain.policies[0].rules[0].failed, { side: 'principal', path: 'attributes.badge', operator: 'exists', missing: true });
});

t.test('exists and not_exists take no value; every other operator needs one', async (t) => {
  const server = await fresh(t);
  const withCondition = (condition: unknown) => ({ name: 'p', rules: [{ name: 'r', effect: 'deny', principal_conditions: [condition], actions: ['read'] }] });
  for (const operator of ['exists', 'not_exists']) {
    for (const value of [true, null, 'x']) {
      const answer = await server.call('POST', '/admin/policies', withCondition({ path: 'attributes.a', operator, value }));
      t.equal(answer.status, 422, `${operator} with ${JSON.stringify(value)}`);
      t.same(answer.body.detail, [
        { loc: ['body', 'rules', 0, 'principal_conditions', 0, 'value'], msg: `operator '${operator}' takes no value: leave 'value' out`, type: 'value_error' },
      ]);
    }
  }
  const missing = await server.call('POST', '/admin/policies', withCondition({ path: 'attributes.a', operator: '==' }));
  t.equal(missing.status, 422);
  t.same(missing.body.detail, [{ loc: ['body', 'rules', 0, 'principal_conditions', 0, 'value'], msg: 'Field required', type: 'missing' }]);
});

t.test('validate warns on every deny rule a request escapes by leaving an attribute out, with the rule that closes it', async (t) => {
  const server = await fresh(t);
  const alone = await server.call('POST', '/admin/policies/validate', noContractors([CONTRACTORS]));
  t.equal(alone.status, 200);
  const closing = {
    name: 'contractors-without-employment',
    effect: 'deny',
    principal_conditions: [{ path: 'attributes.employment', operator: 'not_exists' }],
    resource_conditions: [],
    actions: ['administer', 'delete'],
  };
  t.same(alone.body.warnings, [
    {
      loc: ['body', 'rules', 0, 'principal_conditions', 0],
      msg:
        "a request that leaves out the principal's attributes.employment escapes this deny rule (a missing attribute makes any condition on it false); " +
        'if every check that should be let through carries attributes.employment, deny the others with this rule next to it, with no allow rule between them ' +
        `(it denies every check without attributes.employment; otherwise declare attributes.employment required in the principal attribute schemas): ${JSON.stringify(closing)}`,
      type: 'escaped_by_omission',
    },
  ]);
  // The suggested rule closes the gap, and so does a rule of another policy that denies them.
  t.same((await server.call('POST', '/admin/policies/validate', noContractors([CONTRACTORS, closing]))).body, { valid: true, warnings: [] });
  t.same((await server.call('POST', '/admin/policies/validate', noContractors([closing, CONTRACTORS]))).body, { valid: true, warnings: [] });
  t.same((await server.call('POST', '/admin/policies/validate', [noContractors([CONTRACTORS]), { name: 'unknowns', rules: [closing] }])).body, { valid: true, warnings: [] });
  // An allow rule between them lets such requests through: the warning stays.
  const between = { name: 'staff', effect: 'allow', principal_conditions: [{ path: 'attributes.department', operator: '==', value: 'it' }], actions: ['administer'] };
  t.equal((await server.call('POST', '/admin/policies/validate', noContractors([CONTRACTORS, between, closing]))).body.warnings.length, 1);

  // Two attributes, on both sides: one warning per attribute; the uri is an attribute a request may leave out too.
  const both = {
    name: 'p',
    rules: [
      {
        name: 'blocked',
        effect: 'deny',
        principal_conditions: [{ path: 'uri', operator: 'in', value: ['user:mallory'] }],
        resource_conditions: [
          { path: 'attributes.level', operator: 'gt', value: 3 },
          { path: 'attributes.level', operator: 'lt', value: 9 },
          { path: 'attributes.owner.team', operator: '!=', value: 'core' },
        ],
        actions: ['read'],
      },
    ],
  };
  const warned = await server.call('POST', '/admin/policies/validate', both);
  t.same(warned.body.warnings.map((warning: { loc: unknown[] }) => warning.loc), [
    ['body', 'rules', 0, 'principal_conditions', 0],
    ['body', 'rules', 0, 'resource_conditions', 0],
    ['body', 'rules', 0, 'resource_conditions', 2],
  ]);
  t.match(warned.body.warnings[0].msg, /^a request that leaves out the principal's uri escapes this deny rule/);
  t.match(warned.body.warnings[1].msg, /"name":"blocked-without-level","effect":"deny","principal_conditions":\[\{"path":"uri","operator":"in","value":\["user:mallory"\]\}\],"resource_conditions":\[\{"path":"attributes.owner.team","operator":"!=","value":"core"\},\{"path":"attributes.level","operator":"not_exists"\}\]/);
  t.match(warned.body.warnings[2].msg, /"name":"blocked-without-owner-team"/);

  // exists and not_exists conditions are about presence already: no warning; allow rules never get one.
  const presence = { name: 'p', rules: [{ name: 'flagged', effect: 'deny', principal_conditions: [{ path: 'attributes.flag', operator: 'exists' }, { path: 'attributes.ok', operator: 'not_exists' }], actions: ['read'] }] };
  t.same((await server.call('POST', '/admin/policies/validate', presence)).body.warnings, []);
  t.same((await server.call('POST', '/admin/policies/validate', LAPTOPS)).body.warnings, []);
});

t.test('plans: exists and not_exists in the condition and as MongoDB filters, exactly as checks decide', async (t) => {
  const server = await fresh(t);
  const policy = {
    name: 'tagged',
    rules: [
      { name: 'untagged', effect: 'deny', resource_conditions: [{ path: 'attributes.meta.tag', operator: 'not_exists' }], actions: ['read'] },
      { name: 'owned', effect: 'allow', resource_conditions: [{ path: 'attributes.owner', operator: 'exists' }], actions: ['read'] },
    ],
  };
  t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
  const planned = await server.call('POST', '/plan', { principal: { attributes: { a: 1 } }, action: 'read' });
  t.equal(planned.status, 200);
  t.strictSame(planned.body.condition, { and: [{ not: { path: 'attributes.meta.tag', operator: 'not_exists' } }, { path: 'attributes.owner', operator: 'exists' }] });
  const resources = [
    { attributes: { owner: 'ann', meta: { tag: 'x' } } },
    { attributes: { owner: null, meta: { tag: null } } },
    { attributes: { owner: 'ann' } },
    { attributes: { owner: 'ann', meta: [{ tag: 'x' }] } },
    { attributes: { owner: 'ann', meta: 'tag' } },
    { attributes: { meta: { tag: 'x' } } },
  ];
  const query = new Query(planned.body.mongodb, {});
  for (const resource of resources) {
    const checked = await server.call('POST', '/check', { principal: { attributes: { a: 1 } }, resource, action: 'read' });
    t.equal(query.test(resource), checked.body.allowed, `${JSON.stringify(resource)}: the filter selects it exactly when a check allows it`);
  }
});

t.test('the eunomia operator style answers exists and not_exists as written: Eunomia has no presence operators', async (t) => {
  const server = await fresh(t, { operatorStyle: 'eunomia' });
  const created = await server.call('POST', '/admin/policies', noContractors([CONTRACTORS, UNKNOWN_EMPLOYMENT]));
  t.strictSame(created.body.rules[1].principal_conditions, [{ path: 'attributes.employment', operator: 'not_exists' }]);
  t.match(pythonPolicyProblems(created.body), [/operator: 'not_exists' is not a ConditionOperator/, /value: missing/], "so Eunomia's Python SDK cannot read such a policy");
  t.strictSame(pythonPolicyProblems((await server.call('POST', '/admin/policies', LAPTOPS)).body), [], 'it reads the others');
});

t.test("a bulk decided in the pool's workers explains presence conditions byte for byte as the front does", async (t) => {
  const pooled = await fresh(t, { evaluation: 'pool', workers: 1 });
  const inline = await fresh(t, { evaluation: 'inline' });
  const body = JSON.stringify(Array.from({ length: 400 }, (_, index) => administer(index % 3 === 0 ? { department: 'it' } : { department: 'it', employment: ['staff', 'intern'][index % 2] })));
  const texts: string[] = [];
  for (const server of [pooled, inline]) {
    t.equal((await server.call('POST', '/admin/policies', LAPTOPS)).status, 200);
    t.equal((await server.call('POST', '/admin/policies', noContractors([CONTRACTORS, UNKNOWN_EMPLOYMENT]))).status, 200);
    const answer = await fetch(`${server.url}/check/bulk?explain=true`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    t.equal(answer.status, 200);
    texts.push(await answer.text());
  }
  t.equal(texts[0], texts[1]);
  t.match(texts[0], /"failed":\{"side":"principal","path":"attributes.employment","operator":"not_exists","actual":"staff"\}/);
});

t.test("validate's advice is safe to follow: for a flag it adds no deny, and each advice followed keeps the ordinary users' access", async (t) => {
  const server = await fresh(t, { schemaEnforcement: 'reject' });
  const suspended = { name: 'suspended', effect: 'deny', principal_conditions: [{ path: 'attributes.suspended', operator: '==', value: true }], actions: ['read'] };
  const staff = { name: 'staff', effect: 'allow', principal_conditions: [{ path: 'attributes.department', operator: 'exists' }], actions: ['read'] };
  const desk = { name: 'desk', rules: [suspended, staff] };
  const [flagWarning] = (await server.call('POST', '/admin/policies/validate', desk)).body.warnings;
  t.match(flagWarning.msg, /leaves out the principal's attributes\.suspended escapes this deny rule/);
  t.match(flagWarning.msg, /For a flag that is usually meant/);
  t.notMatch(flagWarning.msg, /"operator":"not_exists"/, 'no deny rule on not_exists is offered for a flag');
  const read = (attributes: Record<string, unknown>) => server.call('POST', '/check', { principal: { uri: 'user:x', attributes }, resource: { uri: 'doc:1' }, action: 'read' });

  // The flag's advice followed: the policy as it is, and the flag required by the schemas.
  t.equal((await server.call('POST', '/admin/policies', desk)).status, 200);
  t.equal((await read({ department: 'it' })).body.allowed, true, 'a user without the flag keeps access: the advice asks for no deny');
  const schemas = { principal: { attributes: { type: 'object', properties: { department: { type: 'string' }, employment: { type: 'string' }, suspended: { type: 'boolean' } }, required: ['suspended'] } } };
  t.equal((await server.call('PUT', '/admin/schemas', schemas)).status, 200);
  t.equal((await read({ department: 'it', suspended: false })).body.allowed, true, 'the ordinary user, saying false, keeps access');
  t.equal((await read({ department: 'it', suspended: true })).body.allowed, false, 'a suspended one does not');
  t.equal((await read({ department: 'it' })).status, 400, 'and one that leaves the flag out is told to say it');

  // The other advice followed: the closing rule it gives, for users who all carry the attribute.
  t.equal((await server.call('DELETE', '/admin/policies/desk')).status, 200);
  const contractors = noContractors([CONTRACTORS]);
  const [gap] = (await server.call('POST', '/admin/policies/validate', contractors)).body.warnings;
  const closing = JSON.parse(gap.msg.slice(gap.msg.indexOf('{"name"')));
  t.match(gap.msg, /it denies every check without attributes\.employment/, 'says whom the closing rule denies');
  t.equal((await server.call('POST', '/admin/policies', noContractors([CONTRACTORS, closing]))).status, 200);
  const administer = (attributes: Record<string, unknown>) =>
    server.call('POST', '/check', { principal: { uri: 'user:y', attributes: { suspended: false, ...attributes } }, resource: { uri: 'doc:1' }, action: 'administer' });
  t.equal((await administer({ employment: 'staff' })).body.allowed, true, 'staff, who carry it, keep access');
  t.equal((await administer({ employment: 'contractor' })).body.allowed, false);
  t.equal((await administer({})).body.allowed, false, 'and one who leaves it out is denied, as the advice said');
});
