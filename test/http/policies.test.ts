import t from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import { MAX_STORED_VALUE_DEPTH } from '../../src/engine/value-limits.js';

const NO_POLICIES = { allowed: false, reason: 'Action denied by default because there are no policies' };
const DEFAULT_DENY = { allowed: false, reason: 'Action denied by default effect' };
const DEFAULT_ALLOW = { allowed: true, reason: 'Action allowed by default effect' };
const allows = (rule: string, policy: string) => ({ allowed: true, reason: `Rule ${rule} allowed the action in policy ${policy}` });
const denies = (rule: string, policy: string) => ({ allowed: false, reason: `Rule ${rule} denied the action in policy ${policy}` });

const eq = (key: string, value: unknown) => ({ path: `attributes.${key}`, operator: '==', value });

async function fresh(t: { teardown(fn: () => unknown): void }, overrides = {}): Promise<TestServer> {
  const server = await startServer(overrides);
  t.teardown(server.close);
  return server;
}

async function create(server: TestServer, policy: unknown) {
  const response = await server.call('POST', '/admin/policies', policy);
  if (response.status !== 200) throw new Error(`policy not created: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

const itCheck = { principal: { attributes: { department: 'it' } }, resource: { attributes: { kind: 'laptop' } }, action: 'use' };
const check = async (server: TestServer, body: unknown = itCheck) => {
  const response = await server.call('POST', '/check', body);
  if (response.status !== 200) throw new Error(`check failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
};

/** An allow (or deny) policy matching itCheck, with one rule. */
const matching = (name: string, rule: string, effect = 'allow', extra: Record<string, unknown> = {}) => ({
  name,
  rules: [{ name: rule, effect, principal_conditions: [eq('department', 'it')], resource_conditions: [eq('kind', 'laptop')], actions: ['use'] }],
  ...extra,
});

t.test('create fills the defaults and returns the stored policy', async (t) => {
  const server = await fresh(t);
  const empty = await server.call('GET', '/admin/policies');
  t.equal(empty.status, 200);
  t.same(empty.body, []);

  const created = await server.call('POST', '/admin/policies', {
    name: 'minimal',
    rules: [{ name: 'only', effect: 'allow', actions: ['read'] }],
  });
  t.equal(created.status, 200);
  const stored = {
    version: '1.0',
    name: 'minimal',
    description: null,
    rules: [{ name: 'only', description: null, effect: 'allow', principal_conditions: [], resource_conditions: [], actions: ['read'] }],
    default_effect: 'deny',
  };
  t.same(created.body, stored);
  t.strictSame(Object.keys(created.body), ['version', 'name', 'description', 'rules', 'default_effect']);
  t.strictSame(Object.keys(created.body.rules[0]), ['name', 'description', 'effect', 'principal_conditions', 'resource_conditions', 'actions']);

  const got = await server.call('GET', '/admin/policies/minimal');
  t.equal(got.status, 200);
  t.same(got.body, stored);

  const full = {
    version: '2.1',
    name: 'full',
    description: 'everything given',
    rules: [
      {
        name: 'r',
        description: 'adults only',
        effect: 'deny',
        principal_conditions: [{ path: 'attributes.age', operator: 'gt', value: 18 }],
        resource_conditions: [{ path: 'uri', operator: 'equals', value: 'doc:1' }],
        actions: ['read', 'write'],
      },
    ],
    default_effect: 'allow',
  };
  const createdFull = await server.call('POST', '/admin/policies', full);
  t.equal(createdFull.status, 200);
  t.same(createdFull.body, full, 'everything as sent, operators as sent');

  const list = await server.call('GET', '/admin/policies');
  t.same(list.body, [stored, full]);
});

t.test('policy and rule names are slugified; a name with nothing left is 422', async (t) => {
  const server = await fresh(t);
  const created = await server.call('POST', '/admin/policies', {
    name: 'IT Desk!!',
    rules: [
      { name: 'Allow: IT Admins', effect: 'allow', actions: ['a'] },
      { name: 'Café  Été', effect: 'allow', actions: ['b'] },
      { name: 'keep_under-score', effect: 'allow', actions: ['c'] },
    ],
  });
  t.equal(created.status, 200);
  t.equal(created.body.name, 'it-desk');
  t.same(
    created.body.rules.map((rule: { name: string }) => rule.name),
    ['allow-it-admins', 'cafe-ete', 'keep_under-score'],
  );
  const got = await server.call('GET', '/admin/policies/it-desk');
  t.equal(got.status, 200);
  t.equal(got.body.name, 'it-desk');

  // The slug is the identity: another spelling of the same slug is a duplicate.
  const duplicate = await server.call('POST', '/admin/policies', { name: '--it  DESK--', rules: [] });
  t.equal(duplicate.status, 409);
  t.type(duplicate.body.detail, 'string');

  const emptySlug = await server.call('POST', '/admin/policies', { name: '!!!', rules: [] });
  t.equal(emptySlug.status, 422);
  t.same(emptySlug.body.detail[0].loc, ['body', 'name']);
  t.type(emptySlug.body.detail[0].msg, 'string');
  t.type(emptySlug.body.detail[0].type, 'string');

  const emptyName = await server.call('POST', '/admin/policies', { name: '', rules: [] });
  t.equal(emptyName.status, 422);
  t.same(emptyName.body.detail[0].loc, ['body', 'name']);

  const emptyRuleSlug = await server.call('POST', '/admin/policies', {
    name: 'fine',
    rules: [{ name: 'ok', effect: 'allow', actions: ['a'] }, { name: ' ?? ', effect: 'allow', actions: ['a'] }],
  });
  t.equal(emptyRuleSlug.status, 422);
  t.same(emptyRuleSlug.body.detail[0].loc, ['body', 'rules', 1, 'name']);

  const list = await server.call('GET', '/admin/policies');
  t.same(list.body.map((policy: { name: string }) => policy.name), ['it-desk'], 'refused policies were not stored');

  // The slugified names are the ones reasons give.
  await create(server, matching('Laptop Users', 'IT Staff'));
  t.same(await check(server), allows('it-staff', 'laptop-users'));
});

t.test('list in creation order, get, 404 and 409', async (t) => {
  const server = await fresh(t);
  for (const name of ['bravo', 'alpha', 'charlie']) await create(server, { name, rules: [] });
  const list = await server.call('GET', '/admin/policies');
  t.equal(list.status, 200);
  t.same(list.body.map((policy: { name: string }) => policy.name), ['bravo', 'alpha', 'charlie']);

  const got = await server.call('GET', '/admin/policies/alpha');
  t.equal(got.status, 200);
  t.same(got.body, { version: '1.0', name: 'alpha', description: null, rules: [], default_effect: 'deny' });

  const missing = await server.call('GET', '/admin/policies/delta');
  t.equal(missing.status, 404);
  t.same(missing.body, { detail: 'Policy not found' });
  const missingDelete = await server.call('DELETE', '/admin/policies/delta');
  t.equal(missingDelete.status, 404);
  t.same(missingDelete.body, { detail: 'Policy not found' });
  const missingPut = await server.call('PUT', '/admin/policies/delta', { name: 'delta', rules: [] });
  t.equal(missingPut.status, 404);
  t.same(missingPut.body, { detail: 'Policy not found' });

  const duplicate = await server.call('POST', '/admin/policies', { name: 'alpha', rules: [{ name: 'x', effect: 'allow', actions: ['a'] }] });
  t.equal(duplicate.status, 409);
  t.type(duplicate.body.detail, 'string');
  const unchanged = await server.call('GET', '/admin/policies/alpha');
  t.same(unchanged.body.rules, [], 'the duplicate did not overwrite');

  const deleted = await server.call('DELETE', '/admin/policies/alpha');
  t.equal(deleted.status, 200);
  t.equal(deleted.body, true);
  const gone = await server.call('GET', '/admin/policies/alpha');
  t.equal(gone.status, 404);
  t.same(gone.body, { detail: 'Policy not found' });
  const again = await server.call('DELETE', '/admin/policies/alpha');
  t.equal(again.status, 404);
  t.same(again.body, { detail: 'Policy not found' });
  const after = await server.call('GET', '/admin/policies');
  t.same(after.body.map((policy: { name: string }) => policy.name), ['bravo', 'charlie']);

  // The name is free again once deleted, and the re-created policy goes to the end.
  await create(server, { name: 'alpha', rules: [] });
  const reordered = await server.call('GET', '/admin/policies');
  t.same(reordered.body.map((policy: { name: string }) => policy.name), ['bravo', 'charlie', 'alpha']);
});

t.test('PUT /admin/policies/{name} replaces and keeps the creation order', async (t) => {
  const server = await fresh(t);
  await create(server, matching('first', 'one'));
  await create(server, matching('second', 'two'));
  await create(server, { name: 'third', rules: [] });
  t.same(await check(server), allows('one', 'first'));

  const replacement = {
    name: 'First',
    description: 'replaced',
    rules: [
      {
        name: 'One Again',
        effect: 'allow',
        principal_conditions: [eq('department', 'it')],
        resource_conditions: [],
        actions: ['use'],
      },
    ],
  };
  const replaced = await server.call('PUT', '/admin/policies/first', replacement);
  t.equal(replaced.status, 200);
  t.same(replaced.body, {
    version: '1.0',
    name: 'first',
    description: 'replaced',
    rules: [{ name: 'one-again', description: null, effect: 'allow', principal_conditions: [eq('department', 'it')], resource_conditions: [], actions: ['use'] }],
    default_effect: 'deny',
  });
  const got = await server.call('GET', '/admin/policies/first');
  t.same(got.body, replaced.body);

  const list = await server.call('GET', '/admin/policies');
  t.same(list.body.map((policy: { name: string }) => policy.name), ['first', 'second', 'third']);
  // Still the first policy: it is the one the reason names, with its new rule (read your writes).
  t.same(await check(server), allows('one-again', 'first'));

  // Replacing with a policy that no longer matches lets the second one answer.
  const narrowed = await server.call('PUT', '/admin/policies/first', { name: 'first', rules: [], default_effect: 'deny' });
  t.equal(narrowed.status, 200);
  t.same(await check(server), allows('two', 'second'));

  const mismatch = await server.call('PUT', '/admin/policies/first', { name: 'second', rules: [] });
  t.equal(mismatch.status, 400);
  t.type(mismatch.body.detail, 'string');
  t.match(mismatch.body.detail, /^Name mismatch/);
  const mismatchSlug = await server.call('PUT', '/admin/policies/first', { name: 'First Policy', rules: [] });
  t.equal(mismatchSlug.status, 400);
  t.match(mismatchSlug.body.detail, /^Name mismatch/);

  const unknown = await server.call('PUT', '/admin/policies/nope', { name: 'nope', rules: [] });
  t.equal(unknown.status, 404);
  t.same(unknown.body, { detail: 'Policy not found' });

  const invalid = await server.call('PUT', '/admin/policies/first', { name: 'first', rules: [{ name: 'r', effect: 'maybe', actions: ['a'] }] });
  t.equal(invalid.status, 422);
  t.same(invalid.body.detail[0].loc, ['body', 'rules', 0, 'effect']);

  const final = await server.call('GET', '/admin/policies');
  t.same(final.body.map((policy: { name: string }) => policy.name), ['first', 'second', 'third']);
  t.same(final.body[0].rules, [], 'failed PUTs changed nothing');
});

t.test('POST /admin/policies/simple builds the one-rule policy', async (t) => {
  const server = await fresh(t);
  const created = await server.call('POST', '/admin/policies/simple?name=HR%20Records', {
    principal: { attributes: { department: 'hr', level: 3, manager: true, tags: ['a', 'b'], deputy: null, address: { city: 'Oslo' } } },
    resource: { attributes: { kind: 'hr-record' } },
    action: 'read',
  });
  t.equal(created.status, 200);
  const expected = {
    version: '1.0',
    name: 'hr-records',
    description: null,
    rules: [
      {
        name: 'hr-records',
        description: null,
        effect: 'allow',
        principal_conditions: [
          { path: 'attributes.department', operator: '==', value: 'hr' },
          { path: 'attributes.level', operator: '==', value: 3 },
          { path: 'attributes.manager', operator: '==', value: true },
          { path: 'attributes.tags', operator: '==', value: ['a', 'b'] },
          { path: 'attributes.deputy', operator: '==', value: null },
          { path: 'attributes.address', operator: '==', value: { city: 'Oslo' } },
        ],
        resource_conditions: [{ path: 'attributes.kind', operator: '==', value: 'hr-record' }],
        actions: ['read'],
      },
    ],
    default_effect: 'deny',
  };
  t.strictSame(created.body, expected);
  const got = await server.call('GET', '/admin/policies/hr-records');
  t.strictSame(got.body, expected);

  const principal = { department: 'hr', level: 3, manager: true, tags: ['a', 'b'], deputy: null, address: { city: 'Oslo' } };
  t.same(
    await check(server, { principal: { attributes: principal }, resource: { attributes: { kind: 'hr-record' } }, action: 'read' }),
    allows('hr-records', 'hr-records'),
  );
  t.same(
    await check(server, { principal: { attributes: { ...principal, level: '3' } }, resource: { attributes: { kind: 'hr-record' } }, action: 'read' }),
    DEFAULT_DENY,
  );
  t.same(
    await check(server, { principal: { attributes: principal }, resource: { attributes: { kind: 'hr-record' } }, action: 'write' }),
    DEFAULT_DENY,
  );

  // Attributes as a list work too, and the README's example gives exactly its answer.
  const readme = await server.call('POST', '/admin/policies/simple?name=hr-list', {
    principal: { attributes: [{ key: 'department', value: 'hr' }] },
    resource: { attributes: { kind: 'hr-record' } },
    action: 'read',
  });
  t.equal(readme.status, 200);
  t.same(readme.body.rules[0].principal_conditions, [{ path: 'attributes.department', operator: '==', value: 'hr' }]);

  const duplicate = await server.call('POST', '/admin/policies/simple?name=hr-records', {
    principal: { attributes: { department: 'hr' } },
    resource: { attributes: { kind: 'x' } },
    action: 'read',
  });
  t.equal(duplicate.status, 409);

  const missingName = await server.call('POST', '/admin/policies/simple', {
    principal: { attributes: { department: 'hr' } },
    resource: { attributes: { kind: 'x' } },
    action: 'read',
  });
  t.equal(missingName.status, 422);
  t.same(missingName.body.detail[0].loc, ['query', 'name']);

  const emptySlug = await server.call('POST', '/admin/policies/simple?name=%21%21', {
    principal: { attributes: { department: 'hr' } },
    resource: { attributes: { kind: 'x' } },
    action: 'read',
  });
  t.equal(emptySlug.status, 422);
  t.same(emptySlug.body.detail[0].loc, ['query', 'name']);

  const emptySide = await server.call('POST', '/admin/policies/simple?name=broken', {
    principal: { attributes: {} },
    resource: { attributes: { kind: 'x' } },
    action: 'read',
  });
  t.equal(emptySide.status, 422);
  t.same(emptySide.body.detail[0].loc, ['body', 'principal']);

  const list = await server.call('GET', '/admin/policies');
  t.same(list.body.map((policy: { name: string }) => policy.name), ['hr-records', 'hr-list']);
});

t.test('schema violations in a policy are 422 naming the field', async (t) => {
  const server = await fresh(t);
  const rule = { name: 'r', effect: 'allow', actions: ['a'] };
  const cases: { body: unknown; loc: unknown[] }[] = [
    { body: { name: 'p', rules: [], colour: 'red' }, loc: ['body', 'colour'] },
    { body: { name: 'p', rules: [{ ...rule, priority: 1 }] }, loc: ['body', 'rules', 0, 'priority'] },
    {
      body: { name: 'p', rules: [{ ...rule, principal_conditions: [{ path: 'attributes.a', operator: '==', value: 1, negate: true }] }] },
      loc: ['body', 'rules', 0, 'principal_conditions', 0, 'negate'],
    },
    { body: { rules: [] }, loc: ['body', 'name'] },
    { body: { name: 'p' }, loc: ['body', 'rules'] },
    { body: { name: 'p', rules: [{ ...rule, effect: 'permit' }] }, loc: ['body', 'rules', 0, 'effect'] },
    { body: { name: 'p', rules: [], default_effect: 'maybe' }, loc: ['body', 'default_effect'] },
    {
      body: { name: 'p', rules: [{ ...rule, resource_conditions: [{ path: 'attributes.a', operator: '~=', value: 1 }] }] },
      loc: ['body', 'rules', 0, 'resource_conditions', 0, 'operator'],
    },
    {
      body: { name: 'p', rules: [rule, { ...rule, principal_conditions: [{ path: 'attributes.a', operator: 'in', value: 'a' }] }] },
      loc: ['body', 'rules', 1, 'principal_conditions', 0, 'value'],
    },
    {
      body: { name: 'p', rules: [{ ...rule, resource_conditions: [{ path: 'attributes.a', operator: 'not_in', value: { a: 1 } }] }] },
      loc: ['body', 'rules', 0, 'resource_conditions', 0, 'value'],
    },
    {
      body: { name: 'p', rules: [{ ...rule, principal_conditions: [{ path: 'attributes.age', operator: 'gt', value: '18' }] }] },
      loc: ['body', 'rules', 0, 'principal_conditions', 0, 'value'],
    },
    {
      body: { name: 'p', rules: [{ ...rule, principal_conditions: [{ path: 'department', operator: '==', value: 'it' }] }] },
      loc: ['body', 'rules', 0, 'principal_conditions', 0, 'path'],
    },
    { body: { name: 'p', rules: [{ ...rule, actions: [] }] }, loc: ['body', 'rules', 0, 'actions'] },
    { body: { name: 'p', rules: [{ ...rule, actions: 'a' }] }, loc: ['body', 'rules', 0, 'actions'] },
    { body: { name: 42, rules: [] }, loc: ['body', 'name'] },
    { body: ['not', 'a', 'policy'], loc: ['body'] },
  ];
  for (const { body, loc } of cases) {
    for (const path of ['/admin/policies', '/create-policy']) {
      const response = await server.call('POST', path, body);
      t.equal(response.status, 422, `${path} ${JSON.stringify(body)}`);
      t.ok(Array.isArray(response.body.detail), JSON.stringify(body));
      t.same(response.body.detail[0].loc, loc, `${path} ${JSON.stringify(body)}`);
      t.type(response.body.detail[0].msg, 'string');
      t.type(response.body.detail[0].type, 'string');
    }
  }
  const list = await server.call('GET', '/admin/policies');
  t.same(list.body, [], 'nothing was stored');

  // The list-valued operators with a list are fine.
  const inList = await server.call('POST', '/admin/policies', {
    name: 'in-list',
    rules: [{ ...rule, principal_conditions: [{ path: 'attributes.a', operator: 'in', value: ['x', 1] }] }],
  });
  t.equal(inList.status, 200);
});

t.test('read your writes: a created or deleted policy counts at the very next check', async (t) => {
  const server = await fresh(t);
  for (let round = 0; round < 5; round++) {
    t.same(await check(server), NO_POLICIES);
    const created = await server.call('POST', '/admin/policies', matching('ryw', 'r'));
    t.equal(created.status, 200);
    t.same(await check(server), allows('r', 'ryw'));
    const deleted = await server.call('DELETE', '/admin/policies/ryw');
    t.equal(deleted.status, 200);
    t.equal(deleted.body, true);
  }
  t.same(await check(server), NO_POLICIES);

  const simple = await server.call('POST', '/admin/policies/simple?name=quick', itCheck);
  t.equal(simple.status, 200);
  t.same(await check(server), allows('quick', 'quick'));
  const viaCheckAccess = await server.call('POST', '/check-access', itCheck);
  t.equal(viaCheckAccess.body, true);
  await server.call('DELETE', '/admin/policies/quick');
  const afterDelete = await server.call('POST', '/check-access', itCheck);
  t.equal(afterDelete.body, false);
});

t.test('POST /create-policy behaves like POST /admin/policies', async (t) => {
  const server = await fresh(t);
  const created = await server.call('POST', '/create-policy', matching('Legacy Policy', 'Legacy Rule'));
  t.equal(created.status, 200);
  const expected = {
    version: '1.0',
    name: 'legacy-policy',
    description: null,
    rules: [
      {
        name: 'legacy-rule',
        description: null,
        effect: 'allow',
        principal_conditions: [eq('department', 'it')],
        resource_conditions: [eq('kind', 'laptop')],
        actions: ['use'],
      },
    ],
    default_effect: 'deny',
  };
  t.same(created.body, expected);
  const got = await server.call('GET', '/admin/policies/legacy-policy');
  t.same(got.body, expected);
  t.same(await check(server), allows('legacy-rule', 'legacy-policy'));

  const duplicate = await server.call('POST', '/create-policy', { name: 'legacy policy', rules: [] });
  t.equal(duplicate.status, 409);
  const adminDuplicate = await server.call('POST', '/admin/policies', { name: 'LEGACY POLICY', rules: [] });
  t.equal(adminDuplicate.status, 409);
  const emptySlug = await server.call('POST', '/create-policy', { name: '***', rules: [] });
  t.equal(emptySlug.status, 422);
  t.same(emptySlug.body.detail[0].loc, ['body', 'name']);
});

t.test('evaluation through HTTP: combining across policies', async (t) => {
  const server = await fresh(t);
  t.same(await check(server), NO_POLICIES);

  // A policy whose rules do not match and whose default is allow.
  await create(server, { name: 'lenient', rules: [{ name: 'x', effect: 'deny', principal_conditions: [eq('department', 'hr')], actions: ['use'] }], default_effect: 'allow' });
  t.same(await check(server), DEFAULT_ALLOW);

  // Any default deny beats every default allow.
  await create(server, { name: 'strict', rules: [], default_effect: 'deny' });
  t.same(await check(server), DEFAULT_DENY);

  // A matching allow rule beats the default effects; the first allowing policy is named.
  await create(server, matching('allow-a', 'rule-a'));
  await create(server, matching('allow-b', 'rule-b'));
  t.same(await check(server), allows('rule-a', 'allow-a'));

  // A matching deny rule in a later policy beats any allow.
  await create(server, matching('blocker', 'no-laptops', 'deny'));
  t.same(await check(server), denies('no-laptops', 'blocker'));
  await create(server, matching('blocker-2', 'also-no', 'deny'));
  t.same(await check(server), denies('no-laptops', 'blocker'), 'the first denying policy is named');
  t.same(
    await check(server, { principal: { attributes: { department: 'it' } }, resource: { attributes: { kind: 'laptop' } }, action: 'other' }),
    DEFAULT_DENY,
    'another action: no rule applies',
  );

  await server.call('DELETE', '/admin/policies/blocker');
  t.same(await check(server), denies('also-no', 'blocker-2'));
  await server.call('DELETE', '/admin/policies/blocker-2');
  t.same(await check(server), allows('rule-a', 'allow-a'));
  await server.call('DELETE', '/admin/policies/allow-a');
  t.same(await check(server), allows('rule-b', 'allow-b'));
  await server.call('DELETE', '/admin/policies/allow-b');
  await server.call('DELETE', '/admin/policies/strict');
  t.same(await check(server), DEFAULT_ALLOW);
  await server.call('DELETE', '/admin/policies/lenient');
  t.same(await check(server), NO_POLICIES);
});

t.test('evaluation through HTTP: within a policy the first matching rule counts', async (t) => {
  const server = await fresh(t);
  const both = (first: string, second: string) => ({
    name: `${first}-then-${second}`,
    rules: [
      { name: `${first}-rule`, effect: first, principal_conditions: [eq('department', 'it')], actions: ['use'] },
      { name: `${second}-rule`, effect: second, principal_conditions: [eq('department', 'it')], actions: ['use'] },
    ],
  });
  await create(server, both('allow', 'deny'));
  t.same(await check(server), allows('allow-rule', 'allow-then-deny'));
  await server.call('DELETE', '/admin/policies/allow-then-deny');
  await create(server, both('deny', 'allow'));
  t.same(await check(server), denies('deny-rule', 'deny-then-allow'));

  // Conditions are ANDed: one failing condition is enough to skip the rule.
  await server.call('DELETE', '/admin/policies/deny-then-allow');
  await create(server, {
    name: 'and',
    rules: [{ name: 'both', effect: 'allow', principal_conditions: [eq('department', 'it'), eq('role', 'admin')], actions: ['use'] }],
  });
  t.same(await check(server), DEFAULT_DENY);
  t.same(
    await check(server, { principal: { attributes: { department: 'it', role: 'admin' } }, resource: { uri: 'x' }, action: 'use' }),
    allows('both', 'and'),
  );
});

t.test('a condition value nested deeper than the stored-value limit is refused with 422, never a 5xx', async (t) => {
  const server = await fresh(t);
  const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
  const policy = (depth: number) =>
    `{"name":"deep","rules":[{"name":"r","effect":"allow","actions":["a"],"principal_conditions":[{"path":"attributes.x","operator":"==","value":${nested(depth)}}]}]}`;
  for (const path of ['/admin/policies', '/create-policy']) {
    const refused = await server.send('POST', path, policy(5000), { 'content-type': 'application/json' });
    t.equal(refused.status, 422, path);
    // So deep that the request-wide nesting limit refuses it, at the condition's value.
    t.same(refused.body.detail[0].loc.slice(0, 6), ['body', 'rules', 0, 'principal_conditions', 0, 'value']);
  }
  const accepted = await server.send('POST', '/admin/policies', policy(MAX_STORED_VALUE_DEPTH), { 'content-type': 'application/json' });
  t.equal(accepted.status, 200);
  t.equal(JSON.stringify(accepted.body.rules[0].principal_conditions[0].value), nested(MAX_STORED_VALUE_DEPTH));
});
