import t, { type Test } from 'tap';
import { openStore } from '../../src/store/open.js';
import { DEFAULT_CONFIG, type Config } from '../../src/config/config.js';
import type { Policy } from '../../src/schemas/policy.js';
import { startServer, temporaryDataDir, type TestServer } from '../helpers/server.js';
import { TEST_WRITER } from '../helpers/writer.js';
import {
  pythonCheckRequest,
  pythonCheckResponseProblems,
  pythonEntityCreate,
  pythonEntityProblems,
  pythonEntityUpdate,
  pythonPolicy,
  pythonPolicyProblems,
  typescriptCheckRequest,
} from '../helpers/eunomia-models.js';

const ENTITIES = '/admin/fetchers/registry/entities';
const STYLES = ['spec', 'eunomia'] as const;

async function fresh(t: Test, overrides: Partial<Config> = {}): Promise<TestServer> {
  const server = await startServer(overrides);
  t.teardown(server.close);
  return server;
}

/** The policy Eunomia's MCP tool generates and pushes (its template 001): rule descriptions, `in`, `startswith`. */
const mcpPolicy = pythonPolicy({
  name: 'mcp-template-policy-001',
  description: 'Template policy for tool listing and calling tools',
  rules: [
    {
      name: 'list-read-write-tools',
      description: 'Allow listing the read and write tools',
      effect: 'allow',
      resource_conditions: [{ path: 'attributes.name', operator: 'in', value: ['read_file', 'write_file'] }],
      actions: ['list'],
    },
    {
      name: 'execute-write-tool-for-notes',
      description: "Allow executing the write tool for files in the user's notes directory only",
      effect: 'allow',
      resource_conditions: [
        { path: 'attributes.name', operator: 'equals', value: 'write_file' },
        { path: 'attributes.arguments.path', operator: 'startswith', value: '/home/user/notes/' },
      ],
      actions: ['execute'],
    },
    { name: 'no-description', effect: 'deny', principal_conditions: [{ path: 'attributes.banned', operator: 'equals', value: true }], actions: ['execute'] },
  ],
});

t.test('a policy as the Python SDK and the MCP tool send it is stored and returned with its rule descriptions', async (t) => {
  for (const operatorStyle of STYLES) {
    const server = await fresh(t, { operatorStyle });
    const created = await server.call('POST', '/admin/policies', mcpPolicy);
    t.equal(created.status, 200, operatorStyle);
    t.strictSame(created.body, mcpPolicy, `${operatorStyle}: returned exactly as sent, nulls included`);
    t.strictSame(pythonPolicyProblems(created.body), [], `${operatorStyle}: Policy.model_validate accepts the answer`);

    // `eunomia-mcp push --overwrite`: get_policies, delete_policy for each, create_policy.
    const listed = await server.call('GET', '/admin/policies');
    t.strictSame(listed.body, [mcpPolicy]);
    t.strictSame(pythonPolicyProblems(listed.body[0]), []);
    t.equal((await server.call('DELETE', `/admin/policies/${mcpPolicy.name}`)).body, true);
    t.strictSame((await server.call('POST', '/admin/policies', mcpPolicy)).body, mcpPolicy, 'pushed again after the overwrite');
    t.strictSame((await server.call('GET', `/admin/policies/${mcpPolicy.name}`)).body, mcpPolicy);

    // The earlier family's /create-policy and the policy update take descriptions too.
    const earlier = await server.call('POST', '/create-policy', { ...mcpPolicy, name: 'earlier' });
    t.equal(earlier.status, 200);
    t.equal(earlier.body.rules[0].description, 'Allow listing the read and write tools');
    const described = { ...mcpPolicy, rules: mcpPolicy.rules.map((rule) => ({ ...rule, description: `now: ${rule.name}` })) };
    const replaced = await server.call('PUT', `/admin/policies/${mcpPolicy.name}`, described);
    t.strictSame(replaced.body, described);
    t.strictSame((await server.call('GET', `/admin/policies/${mcpPolicy.name}`)).body.rules.map((rule: { description: string }) => rule.description), [
      'now: list-read-write-tools',
      'now: execute-write-tool-for-notes',
      'now: no-description',
    ]);

    // The descriptions change nothing in decisions.
    const listing = pythonCheckRequest({ attributes: { role: 'agent' } }, { attributes: { name: 'read_file' } }, 'list');
    t.strictSame((await server.call('POST', '/check', listing)).body, {
      allowed: true,
      reason: 'Rule list-read-write-tools allowed the action in policy mcp-template-policy-001',
    });
  }
});

t.test('a rule sent without a description comes back with "description": null, everywhere', async (t) => {
  const server = await fresh(t);
  // The TypeScript SDK's Rule has no description field; its Policy may leave out the policy's.
  const typescriptPolicy = {
    version: '1.0',
    name: 'ts-policy',
    rules: [{ name: 'r', effect: 'allow', principal_conditions: [], resource_conditions: [], actions: ['read'] }],
    default_effect: 'deny',
  };
  const answers = [
    await server.call('POST', '/admin/policies', typescriptPolicy),
    await server.call('GET', '/admin/policies/ts-policy'),
    await server.call('PUT', '/admin/policies/ts-policy', typescriptPolicy),
    await server.call('POST', '/create-policy', { ...typescriptPolicy, name: 'ts-earlier' }),
    await server.call('POST', '/admin/policies/simple?name=simple', pythonCheckRequest({ attributes: { a: 1 } }, { attributes: { b: 2 } })),
  ];
  for (const answer of answers) {
    t.equal(answer.status, 200);
    t.equal(answer.body.description, null);
    t.equal(answer.body.rules[0].description, null);
    t.strictSame(Object.keys(answer.body.rules[0]), ['name', 'description', 'effect', 'principal_conditions', 'resource_conditions', 'actions']);
  }
  const listed = await server.call('GET', '/admin/policies');
  t.strictSame(listed.body.map((policy: Policy) => policy.rules[0]!.description), [null, null, null]);
});

t.test('a description that is not a string or null is 422 at the field', async (t) => {
  const server = await fresh(t);
  for (const description of [5, true, ['x'], { text: 'x' }]) {
    const sent = pythonPolicy({ name: 'p', rules: [{ name: 'r', effect: 'allow', actions: ['read'] }] });
    const answer = await server.call('POST', '/admin/policies', { ...sent, rules: [{ ...sent.rules[0], description }] });
    t.equal(answer.status, 422, JSON.stringify(description));
    t.same(answer.body.detail[0].loc, ['body', 'rules', 0, 'description']);
  }
});

t.test('policies stored before rules had descriptions are answered with "description": null', async (t) => {
  const dataDir = temporaryDataDir();
  const store = await openStore({ ...DEFAULT_CONFIG, dataDir }, { auditValues: false });
  const older = {
    version: '1.0',
    name: 'older',
    description: null,
    rules: [{ name: 'r', effect: 'allow', principal_conditions: [{ path: 'attributes.a', operator: '==', value: 1 }], resource_conditions: [], actions: ['read'] }],
    default_effect: 'deny',
  };
  await store.createPolicy(older as unknown as Policy, TEST_WRITER);
  await store.close();
  for (const operatorStyle of STYLES) {
    const server = await fresh(t, { dataDir, operatorStyle });
    const expected = { ...older, rules: [{ ...older.rules[0]!, description: null }] };
    if (operatorStyle === 'eunomia') expected.rules[0]!.principal_conditions = [{ path: 'attributes.a', operator: 'equals', value: 1 }];
    t.strictSame((await server.call('GET', '/admin/policies/older')).body, expected, operatorStyle);
    t.strictSame((await server.call('GET', '/admin/policies')).body, [expected], operatorStyle);
    await server.close();
  }
});

t.test('simple policies: `==` in the spec style, which the Python SDK cannot parse; `equals` in the eunomia style, which it can', async (t) => {
  const body = pythonCheckRequest({ uri: 'user:ann', attributes: { role: 'admin' } }, { attributes: { kind: 'doc' } }, 'read');
  const spec = await fresh(t);
  const specAnswer = await spec.call('POST', '/admin/policies/simple?name=admins', body);
  t.equal(specAnswer.status, 200);
  t.strictSame(specAnswer.body.rules[0].principal_conditions, [
    { path: 'uri', operator: '==', value: 'user:ann' },
    { path: 'attributes.role', operator: '==', value: 'admin' },
  ]);
  t.match(pythonPolicyProblems(specAnswer.body), [/operator: '==' is not a ConditionOperator/], 'why the eunomia style exists');

  const eunomia = await fresh(t, { operatorStyle: 'eunomia' });
  const answer = await eunomia.call('POST', '/admin/policies/simple?name=admins', body);
  t.equal(answer.status, 200);
  t.strictSame(answer.body, {
    version: '1.0',
    name: 'admins',
    description: null,
    rules: [
      {
        name: 'admins',
        description: null,
        effect: 'allow',
        principal_conditions: [
          { path: 'uri', operator: 'equals', value: 'user:ann' },
          { path: 'attributes.role', operator: 'equals', value: 'admin' },
        ],
        resource_conditions: [{ path: 'attributes.kind', operator: 'equals', value: 'doc' }],
        actions: ['read'],
      },
    ],
    default_effect: 'deny',
  });
  t.strictSame(pythonPolicyProblems(answer.body), []);
  const listed = await eunomia.call('GET', '/admin/policies');
  t.strictSame(listed.body.flatMap((policy: unknown) => pythonPolicyProblems(policy)), [], 'get_policies parses');
  const allowed = await eunomia.call('POST', '/check', pythonCheckRequest({ uri: 'user:ann', attributes: { role: 'admin' } }, { attributes: { kind: 'doc' } }, 'read'));
  t.strictSame(allowed.body, { allowed: true, reason: 'Rule admins allowed the action in policy admins' });
});

t.test('with --operator-style eunomia no answer holds a symbolic operator; with spec they come back as sent', async (t) => {
  const symbolic = pythonPolicy({
    name: 'symbols',
    rules: [
      {
        name: 'adults',
        effect: 'allow',
        principal_conditions: [
          { path: 'attributes.role', operator: '==', value: 'staff' },
          { path: 'attributes.team', operator: '!=', value: 'guests' },
          { path: 'attributes.age', operator: '>=', value: 18 },
          { path: 'attributes.age', operator: '<', value: 120 },
        ],
        resource_conditions: [
          { path: 'attributes.size', operator: '>', value: 0 },
          { path: 'attributes.size', operator: '<=', value: 10 },
          { path: 'attributes.kind', operator: 'equals', value: 'doc' },
        ],
        actions: ['read'],
      },
    ],
  });
  const check = pythonCheckRequest({ attributes: { role: 'staff', team: 'core', age: 30 } }, { attributes: { size: 5, kind: 'doc' } }, 'read');
  for (const operatorStyle of STYLES) {
    const server = await fresh(t, { operatorStyle });
    const answers = [
      await server.call('POST', '/admin/policies', symbolic),
      await server.call('GET', '/admin/policies/symbols'),
      await server.call('GET', '/admin/policies'),
      await server.call('PUT', '/admin/policies/symbols', symbolic),
      await server.call('POST', '/create-policy', { ...symbolic, name: 'symbols-earlier' }),
      await server.call('POST', '/admin/policies/simple?name=simple', pythonCheckRequest({ attributes: { a: 1 } }, { attributes: { b: 2 } })),
      await server.call('GET', '/admin/policies'),
      await server.call('POST', '/plan', { principal: check.principal, action: 'read' }),
      await server.call('POST', '/plan/bulk', [{ principal: check.principal, action: 'read' }]),
    ];
    for (const answer of answers) t.equal(answer.status, 200);
    const texts = answers.map((answer) => JSON.stringify(answer.body));
    if (operatorStyle === 'eunomia') {
      for (const text of texts) t.notMatch(text, /"operator":"(==|!=|>|>=|<|<=)"/, 'only Eunomia names');
      t.strictSame(answers[0]!.body.rules[0].principal_conditions.map((condition: { operator: string }) => condition.operator), ['equals', 'not_equals', 'gte', 'lt']);
      t.strictSame(answers[6]!.body.flatMap((policy: unknown) => pythonPolicyProblems(policy)), []);
      t.match(texts[7], /"operator":"equals"/, 'a plan too');
    } else {
      t.strictSame(answers[0]!.body, symbolic, 'stored and returned as sent');
      t.match(texts[5], /"operator":"=="/);
    }
    // Both spellings mean the same to the engine, in both styles.
    t.strictSame((await server.call('POST', '/check', check)).body, { allowed: true, reason: 'Rule adults allowed the action in policy symbols' });
    const younger = pythonCheckRequest({ attributes: { role: 'staff', team: 'core', age: 17 } }, { attributes: { size: 5, kind: 'doc' } }, 'read');
    t.equal((await server.call('POST', '/check', younger)).body.allowed, false);
  }
});

t.test('checks as both SDKs send them, nulls and types included, are answered in the CheckResponse shape', async (t) => {
  for (const operatorStyle of STYLES) {
    const server = await fresh(t, { operatorStyle });
    await server.call('POST', ENTITIES, pythonEntityCreate('user:ann', 'principal', { role: 'admin' }));
    await server.call('POST', '/admin/policies/simple?name=admins', pythonCheckRequest({ attributes: { role: 'admin' } }, { attributes: { kind: 'doc' } }));
    const bodies = [
      pythonCheckRequest({ uri: 'user:ann' }, { attributes: { kind: 'doc' } }),
      typescriptCheckRequest({ uri: 'user:ann' }, { attributes: { kind: 'doc' } }),
      pythonCheckRequest({ attributes: { role: 'admin' } }, { uri: 'doc:1', attributes: { kind: 'doc' } }),
      typescriptCheckRequest({ attributes: { role: 'guest' } }, { uri: 'doc:1', attributes: { kind: 'doc' } }),
    ];
    t.strictSame(bodies[0], {
      principal: { uri: 'user:ann', attributes: {}, type: 'principal' },
      resource: { uri: null, attributes: { kind: 'doc' }, type: 'resource' },
      action: 'access',
    }, 'the Python body: uri null, attributes {} and the type on each side');
    const expected = [true, true, true, false];
    for (const [index, body] of bodies.entries()) {
      const answer = await server.call('POST', '/check', body);
      t.equal(answer.status, 200);
      t.strictSame(pythonCheckResponseProblems(answer.body), []);
      t.equal(answer.body.allowed, expected[index], `${operatorStyle} check ${index}`);
      t.equal(typeof answer.body.reason, 'string');
    }
    const bulk = await server.call('POST', '/check/bulk', bodies);
    t.equal(bulk.status, 200);
    t.strictSame(bulk.body.map((answer: { allowed: boolean }) => answer.allowed), expected);
    t.strictSame(bulk.body.flatMap((answer: unknown) => pythonCheckResponseProblems(answer)), []);
    t.equal((await server.call('POST', '/check-access', bodies[0])).body, true);
  }
});

t.test('registry writes as both SDKs send them; answers are EntityInDb with attributes sorted by key', async (t) => {
  const server = await fresh(t);
  const keys = (answer: { body: { attributes: { key: string }[] } }) => answer.body.attributes.map((attribute) => attribute.key);

  // Python: attributes as a list of key/value pairs, `type` null on update, override as a query flag.
  const registered = await server.call('POST', ENTITIES, pythonEntityCreate('user:ann', 'principal', { zone: 'eu', role: 'admin', Age: 41, 'é': 1, '😀': 2, '～': 3 }));
  t.equal(registered.status, 200);
  t.strictSame(pythonEntityProblems(registered.body), []);
  t.strictSame(keys(registered), ['Age', 'role', 'zone', 'é', '～', '😀'], 'code-point order, as Eunomia lists them');
  const updated = await server.call('PUT', `${ENTITIES}/user%3Aann?override=false`, pythonEntityUpdate('user:ann', { mood: 'calm', role: 'owner' }));
  t.equal(updated.status, 200);
  t.strictSame(pythonEntityProblems(updated.body), []);
  t.equal(updated.body.type, 'principal', 'a null type keeps the registered one');
  t.strictSame(keys(updated), ['Age', 'mood', 'role', 'zone', 'é', '～', '😀']);
  t.strictSame(keys(await server.call('GET', `${ENTITIES}/user%3Aann`)), ['Age', 'mood', 'role', 'zone', 'é', '～', '😀']);
  const replaced = await server.call('PUT', `${ENTITIES}/user%3Aann?override=true`, pythonEntityUpdate('user:ann', { b: 2, a: 1 }));
  t.strictSame(keys(replaced), ['a', 'b']);

  // TypeScript: attributes as an object, no type on update.
  const tsRegistered = await server.call('POST', ENTITIES, { type: 'resource', attributes: { owner: 'ann', kind: 'doc' }, uri: 'doc:1' });
  t.strictSame(pythonEntityProblems(tsRegistered.body), []);
  t.strictSame(keys(tsRegistered), ['kind', 'owner']);
  const tsUpdated = await server.call('PUT', `${ENTITIES}/doc%3A1?override=false`, { uri: 'doc:1', attributes: { audience: 'all' } });
  t.strictSame(keys(tsUpdated), ['audience', 'kind', 'owner']);
  t.equal(tsUpdated.body.type, 'resource');

  const listed = await server.call('GET', `${ENTITIES}?offset=0&limit=10`);
  t.strictSame(listed.body.map((entity: unknown) => pythonEntityProblems(entity)), [[], []]);
  t.strictSame(listed.body.map((entity: { attributes: { key: string }[] }) => entity.attributes.map((attribute) => attribute.key)), [['a', 'b'], ['audience', 'kind', 'owner']]);
  const earlier = await server.call('POST', '/update-entity', { uri: 'doc:1', attributes: { zz: 1, aa: 2 } });
  t.strictSame(keys(earlier), ['aa', 'audience', 'kind', 'owner', 'zz']);

  t.equal((await server.call('DELETE', `${ENTITIES}/doc%3A1`)).body, true);
  t.equal((await server.call('DELETE', `/admin/policies/none`)).status, 404);
});

t.test("every field Eunomia's SDK models send is accepted, though Verdict refuses fields it does not know", async (t) => {
  const server = await fresh(t);
  // The fields of each request model, as the SDKs send them: the Python SDK's model_dump() sends every field, nulls included.
  const python = pythonCheckRequest({ uri: 'user:carol', attributes: { role: 'admin' } }, { attributes: { kind: 'doc' } }, 'read');
  const typescript = typescriptCheckRequest({ uri: 'user:carol', attributes: { role: 'admin' } }, { uri: 'doc:2', attributes: { kind: 'doc' } }, 'read');
  t.strictSame(Object.keys(python), ['principal', 'resource', 'action'], 'CheckRequest');
  t.strictSame(Object.keys(python.principal), ['uri', 'attributes', 'type'], 'PrincipalCheck');
  t.strictSame(python.resource, { uri: null, attributes: { kind: 'doc' }, type: 'resource' }, 'ResourceCheck, uri null');
  t.strictSame(Object.keys(typescript.resource), ['uri', 'attributes', 'type'], 'ResourceAccess');
  const created = pythonEntityCreate('user:ann', 'principal', { role: 'admin' });
  t.strictSame(Object.keys(created), ['uri', 'attributes', 'type'], 'EntityCreate');
  t.strictSame(Object.keys(created.attributes[0]!), ['key', 'value'], 'Attribute');
  const updated = pythonEntityUpdate('user:ann', { role: 'owner' });
  t.strictSame(Object.keys(updated), ['uri', 'attributes', 'type'], 'EntityUpdate, type null');

  const answers: [string, { status: number }][] = [
    ['register (Python)', await server.call('POST', ENTITIES, created)],
    ['register (TypeScript)', await server.call('POST', ENTITIES, { uri: 'doc:1', type: 'resource', attributes: { kind: 'doc' } })],
    ['register, earlier family', await server.call('POST', '/register-entity', pythonEntityCreate('user:bob', 'principal', { role: 'guest' }))],
    ['update (Python)', await server.call('PUT', `${ENTITIES}/user%3Aann?override=false`, updated)],
    ['update (TypeScript)', await server.call('PUT', `${ENTITIES}/doc%3A1?override=false`, { uri: 'doc:1', attributes: { owner: 'ann' } })],
    ['update, earlier family', await server.call('POST', '/update-entity', pythonEntityUpdate('user:bob', { role: 'staff' }))],
    ['check (Python)', await server.call('POST', '/check', python)],
    ['check (TypeScript)', await server.call('POST', '/check', typescript)],
    ['bulk_check (Python)', await server.call('POST', '/check/bulk', [python, python])],
    ['check-access', await server.call('POST', '/check-access', python)],
    ['create_simple_policy (Python)', await server.call('POST', '/admin/policies/simple?name=admins', python)],
    ['delete, earlier family', await server.call('POST', '/delete-entity', { uri: 'user:bob' })],
  ];
  for (const [what, answer] of answers) t.equal(answer.status, 200, what);
  const typo = await server.call('POST', '/check', { ...python, acton: 'write' });
  t.equal(typo.status, 422, 'a field no SDK sends is refused');
});

t.test('the OpenAPI document describes rule descriptions and the operators', async (t) => {
  const server = await fresh(t);
  const document = await server.call('GET', '/docs/json');
  t.equal(document.status, 200);
  const text = JSON.stringify(document.body);
  const created = document.body.paths['/admin/policies'].post;
  const body = created.requestBody.content['application/json'].schema;
  const rule = body.properties.rules.items;
  t.strictSame(rule.properties.description.type, ['string', 'null']);
  t.ok(Object.keys(rule.properties).includes('description'));
  const answered = created.responses['200'].content['application/json'].schema.properties.rules.items;
  t.ok(answered.required.includes('description'), 'answers always carry it');
  t.match(text, /"equals"/);
});
