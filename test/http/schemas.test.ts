import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchDir, startServer, temporaryDataDir, type TestServer } from '../helpers/server.js';
import type { Config } from '../../src/config/config.js';

/** Users have an integer level and a clearance from 1 to 3, both required; documents a string owner. */
const SCHEMAS = {
  principal: {
    types: {
      user: {
        type: 'object',
        properties: { level: { type: 'integer' }, clearance: { type: 'integer', enum: [1, 2, 3] } },
        required: ['level', 'clearance'],
      },
    },
  },
  resource: { attributes: { type: 'object', properties: { owner: { type: 'string' } } } },
  context: { attributes: { type: 'object', properties: { ip: { type: 'string', format: 'ipv4' } } } },
};

const cond = (key: string, operator: string, value: unknown) => ({ path: `attributes.${key}`, operator, value });

/** Everyone may read, but users below level 3 and users of clearance 2 are denied. */
const GUARDED = {
  name: 'guarded',
  default_effect: 'allow',
  rules: [
    { name: 'low level', effect: 'deny', actions: ['read'], principal_conditions: [cond('level', 'lt', 3)] },
    { name: 'clearance two', effect: 'deny', actions: ['read'], principal_conditions: [cond('clearance', '==', 2)] },
  ],
};

async function serverWith(t: Test, overrides: Partial<Config>, schemas: unknown = SCHEMAS): Promise<TestServer> {
  const dir = scratchDir(t);
  const schemasFile = join(dir, 'schemas.json');
  writeFileSync(schemasFile, JSON.stringify(schemas));
  const server = await startServer({ schemasFile, ...overrides });
  t.teardown(() => server.close());
  return server;
}

const check = (principal: unknown, extra: Record<string, unknown> = {}) => ({ principal, resource: { uri: 'document:1', attributes: { owner: 'ann' } }, action: 'read', ...extra });

async function metricValue(server: TestServer): Promise<number> {
  const text = (await server.call('GET', '/metrics')).body as string;
  const line = text.split('\n').find((row) => row.startsWith('verdict_schema_violations_total '));
  return line === undefined ? NaN : Number(line.split(' ')[1]);
}

t.test('reject: the three silent allows are each refused, naming the attribute and the rule', async (t) => {
  // A user registered with level "5" while schemas were only warned about (reject would refuse the registration).
  const dataDir = temporaryDataDir();
  const warned = await startServer({ dataDir, schemasFile: writeSchemas(t) });
  t.equal((await warned.call('POST', '/admin/policies', GUARDED)).status, 200);
  t.equal((await warned.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:stored', attributes: { level: '5', clearance: 1 } })).status, 200);
  await warned.close();
  const server = await startServer({ dataDir, schemasFile: writeSchemas(t), schemaEnforcement: 'reject' });
  t.teardown(() => server.close());

  const stored = await server.call('POST', '/check', check({ uri: 'user:stored' }));
  t.equal(stored.status, 400);
  t.match(stored.body.detail, /principal 'user:stored': attribute 'level' must be integer \(type\)/);

  const sentAsString = await server.call('POST', '/check', check({ uri: 'user:sent', attributes: { level: 4, clearance: '2' } }));
  t.equal(sentAsString.status, 400);
  t.match(sentAsString.body.detail, /attribute 'clearance' must be integer \(type\)/);

  const forgotten = await server.call('POST', '/check', check({ uri: 'user:forgot', attributes: { clearance: 1 } }));
  t.equal(forgotten.status, 400);
  t.match(forgotten.body.detail, /attribute 'level' is required \(required\)/);

  // What keeps to the schema is decided as always: the deny rules fire.
  t.same((await server.call('POST', '/check', check({ uri: 'user:low', attributes: { level: 1, clearance: 1 } }))).body.allowed, false);
  t.same((await server.call('POST', '/check', check({ uri: 'user:two', attributes: { level: 5, clearance: 2 } }))).body.allowed, false);
  t.same((await server.call('POST', '/check', check({ uri: 'user:ok', attributes: { level: 5, clearance: 1 } }))).body.allowed, true);
  t.equal(await metricValue(server), 3);
});

/** A schema file in the test's scratch directory. */
function writeSchemas(t: Test, schemas: unknown = SCHEMAS): string {
  const path = join(scratchDir(t), 'schemas.json');
  writeFileSync(path, JSON.stringify(schemas));
  return path;
}

t.test('warn: the same checks are decided as without schemas, counted, and explained', async (t) => {
  const server = await serverWith(t, {});
  t.equal((await server.call('POST', '/admin/policies', GUARDED)).status, 200);
  const sentAsString = await server.call('POST', '/check?explain=true', check({ uri: 'user:sent', attributes: { level: 4, clearance: '2' } }));
  t.equal(sentAsString.status, 200);
  t.equal(sentAsString.body.allowed, true, 'the deny on clearance == 2 does not see "2"');
  t.same(sentAsString.body.explain.schema_violations, [
    "principal 'user:sent': attribute 'clearance' must be integer (type)",
    "principal 'user:sent': attribute 'clearance' must be equal to one of the allowed values: 1, 2, 3 (enum)",
  ]);
  const forgotten = await server.call('POST', '/check', check({ uri: 'user:forgot', attributes: { clearance: 1 } }));
  t.same(forgotten.body, { allowed: true, reason: 'Action allowed by default effect' });
  // The registration is not refused either.
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:stored', attributes: { level: '5', clearance: 1 } })).status, 200);
  const stored = await server.call('POST', '/check', check({ uri: 'user:stored' }));
  t.equal(stored.body.allowed, true);
  const clean = await server.call('POST', '/check?explain=true', check({ uri: 'user:ok', attributes: { level: 5, clearance: 1 } }));
  t.notOk('schema_violations' in clean.body.explain, 'a check that keeps to the schema has no violations listed');
  t.equal(await metricValue(server), 3);
});

t.test('off, and no schemas: nothing is checked', async (t) => {
  for (const overrides of [{ schemaEnforcement: 'off' as const }, { schemasFile: '' }]) {
    const server = await serverWith(t, overrides);
    t.equal((await server.call('POST', '/admin/policies', GUARDED)).status, 200);
    const answer = await server.call('POST', '/check?explain=true', check({ uri: 'user:sent', attributes: { level: 4, clearance: '2' } }));
    t.equal(answer.body.allowed, true);
    t.notOk('schema_violations' in answer.body.explain);
    t.ok(Number.isNaN(await metricValue(server)), 'no violation counter is served');
  }
});

t.test('reject: bulk items that break the schema are denied, saying why, on the front and in a worker alike', async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await serverWith(t, { schemaEnforcement: 'reject', evaluation });
    t.equal((await server.call('POST', '/admin/policies', GUARDED)).status, 200);
    const good = { principal: { attributes: { level: 5, clearance: 1 } }, resource: { attributes: { owner: 'ann' } }, action: 'read' };
    const bad = { principal: { attributes: { level: 5, clearance: 1 } }, resource: { attributes: { owner: 7 } }, action: 'read' };
    const answer = await server.call('POST', '/check/bulk', [good, bad, good]);
    t.equal(answer.status, 200, evaluation);
    t.same(answer.body[0], { allowed: true, reason: 'Action allowed by default effect' });
    t.equal(answer.body[1].allowed, false);
    t.match(answer.body[1].reason, /resource: attribute 'owner' must be string \(type\)/);
    t.same(answer.body[2], answer.body[0]);
    // A bulk with no violation is decided by the worker as before.
    const clean = await server.call('POST', '/check/bulk', [good, good]);
    t.same(clean.body, [answer.body[0], answer.body[0]]);
  }
});

t.test('warn: a worker decides a bulk that breaks the schema, explains it, and the front counts it', async (t) => {
  const server = await serverWith(t, { evaluation: 'pool' });
  const bad = { principal: { attributes: { level: 5, clearance: 1 } }, resource: { attributes: { owner: 7 } }, action: 'read', context: { ip: 'nowhere' } };
  const answer = await server.call('POST', '/check/bulk?explain=true', [bad]);
  t.equal(answer.status, 200);
  t.same(answer.body[0].explain.schema_violations, ["resource: attribute 'owner' must be string (type)", `context: attribute 'ip' must match format "ipv4" (format)`]);
  t.equal(await metricValue(server), 1);
});

t.test('reject: AuthZEN, a single evaluation is 400 and an evaluation of a batch is denied with the error in its context', async (t) => {
  const server = await serverWith(t, { schemaEnforcement: 'reject' });
  t.equal((await server.call('POST', '/admin/policies', GUARDED)).status, 200);
  const evaluation = (level: unknown) => ({
    subject: { type: 'user', id: 'ann', properties: { level, clearance: 1 } },
    resource: { type: 'document', id: '1' },
    action: { name: 'read' },
  });
  const single = await server.call('POST', '/access/v1/evaluation', evaluation('5'));
  t.equal(single.status, 400);
  t.match(single.body.detail, /principal 'user:ann': attribute 'level' must be integer/);
  const batch = await server.call('POST', '/access/v1/evaluations', { evaluations: [evaluation(5), evaluation('5')] });
  t.equal(batch.status, 200);
  t.equal(batch.body.evaluations[0].decision, true);
  t.equal(batch.body.evaluations[1].decision, false);
  t.equal(batch.body.evaluations[1].context.error.status, 400);
  t.match(batch.body.evaluations[1].context.error.message, /attribute 'level' must be integer/);
});

t.test('reject: /check-access refuses as it refuses a conflict', async (t) => {
  const server = await serverWith(t, { schemaEnforcement: 'reject' });
  const answer = await server.call('POST', '/check-access', check({ uri: 'user:ann', attributes: { level: 5 } }));
  t.equal(answer.status, 400);
  t.match(answer.body.detail, /attribute 'clearance' is required/);
});

t.test('reject: registrations that break the schema of their type are 422 naming the attribute', async (t) => {
  const server = await serverWith(t, { schemaEnforcement: 'reject' });
  const ENTITIES = '/admin/fetchers/registry/entities';
  const one = await server.call('POST', ENTITIES, { uri: 'user:ann', attributes: { level: '5', clearance: 1 } });
  t.equal(one.status, 422);
  t.match(one.body.detail, [{ loc: ['body', 'attributes'], msg: "principal 'user:ann': attribute 'level' must be integer (type)" }]);
  const many = await server.call('POST', `${ENTITIES}/$bulk`, [
    { uri: 'user:bob', attributes: { level: 5, clearance: 1 } },
    { uri: 'user:cid', attributes: { level: 5, clearance: 4 } },
  ]);
  t.equal(many.status, 422);
  t.match(many.body.detail, [{ loc: ['body', 1, 'attributes'], msg: /attribute 'clearance' must be equal to one of the allowed values: 1, 2, 3 \(enum\)/ }]);
  t.equal((await server.call('GET', `${ENTITIES}/user:bob`)).status, 404, 'none of the list was registered');
  t.equal((await server.call('POST', ENTITIES, { uri: 'user:bob', attributes: { level: 5, clearance: 1 } })).status, 200);
  // An update is judged by the entity it leaves.
  const update = await server.call('PUT', `${ENTITIES}/user:bob`, { attributes: { level: 'high' }, override: false });
  t.equal(update.status, 422);
  t.same((await server.call('GET', `${ENTITIES}/user:bob`)).body.attributes.find((attribute: { key: string }) => attribute.key === 'level').value, 5);
  // Entities of a type without a schema are not checked.
  t.equal((await server.call('POST', ENTITIES, { uri: 'team:x', attributes: { level: 'any' } })).status, 200);
});

t.test('reject: a resource type\'s schema, required attributes included, holds checks and registrations as a principal type\'s does', async (t) => {
  const documents = { type: 'object', properties: { owner: { type: 'string' }, pages: { type: 'integer' } }, required: ['owner'] };
  const server = await serverWith(t, { schemaEnforcement: 'reject' }, { resource: { types: { document: documents } } });
  const reading = (resource: unknown) => ({ principal: { attributes: { level: 5 } }, resource, action: 'read' });
  await server.call('POST', '/admin/policies', GUARDED);

  const forgotten = await server.call('POST', '/check', reading({ uri: 'document:1', attributes: { pages: 3 } }));
  t.equal(forgotten.status, 400, 'a document without its required owner is refused');
  t.match(forgotten.body.detail, /resource 'document:1': attribute 'owner' is required \(required\)/);
  t.equal((await server.call('POST', '/check', reading({ uri: 'document:1', attributes: { owner: 'ann' } }))).status, 200, 'with it, decided');
  t.equal((await server.call('POST', '/check', reading({ uri: 'note:1', attributes: {} }))).status, 200, 'another type is not held to it');

  const ENTITIES = '/admin/fetchers/registry/entities';
  const wrong = await server.call('POST', ENTITIES, { uri: 'document:2', type: 'resource', attributes: { owner: 7 } });
  t.equal(wrong.status, 422, 'a registration breaking the resource type\'s schema is refused');
  t.match(wrong.body.detail, [{ loc: ['body', 'attributes'], msg: "resource 'document:2': attribute 'owner' must be string (type)" }]);
  t.equal((await server.call('POST', ENTITIES, { uri: 'document:2', type: 'resource', attributes: { owner: 'ann' } })).status, 200);
  const update = await server.call('PUT', `${ENTITIES}/document:2`, { attributes: { pages: 'many' }, override: false });
  t.equal(update.status, 422, 'so is an update that would leave it broken');
});

t.test('a schema document that cannot be used stops the start, saying why', async (t) => {
  const refused = async (schemas: unknown) => {
    try {
      await startServer({ schemasFile: writeSchemas(t, schemas) });
      return 'started';
    } catch (error) {
      return (error as Error).message;
    }
  };
  t.match(await refused({ principal: { attributes: { type: 'object', propertees: {} } } }), /principal\.attributes is not a valid JSON Schema: strict mode: unknown keyword: "propertees"/);
  t.match(await refused({ principal: { attributes: { type: 'integr' } } }), /principal\.attributes is not a valid JSON Schema/);
  t.match(await refused({ resource: { types: { doc: { type: 'string', format: 'nope' } } } }), /resource\.types\.doc is not a valid JSON Schema: unknown format "nope"/);
  t.match(await refused({ subject: {} }), /'subject' is not one of principal, resource, action, context/);
  t.match(await refused({ context: { types: {} } }), /context\.types is not expected/);
  t.match(await refused([]), /must be an object/);
});

/** A policy that breaks the schemas four ways: a typo in a path, `gt` on a string, "5" for an integer, a clearance that does not exist. */
const MISTYPED = {
  name: 'mistyped',
  rules: [
    {
      name: 'r',
      effect: 'deny',
      actions: ['read'],
      principal_conditions: [cond('levle', 'gte', 3), cond('level', '==', '5'), cond('clearance', '==', 4)],
      resource_conditions: [cond('owner', 'gt', 3)],
    },
  ],
};

const MISTYPED_ISSUES = [
  { loc: ['body', 'rules', 0, 'principal_conditions', 0, 'path'], msg: "rule 'r': principal attribute 'levle' is not declared by the principal schemas", type: 'schema_error' },
  { loc: ['body', 'rules', 0, 'principal_conditions', 1, 'value'], msg: `rule 'r': "5" is string, but principal attribute 'level' is declared integer`, type: 'schema_error' },
  {
    loc: ['body', 'rules', 0, 'principal_conditions', 2, 'value'],
    msg: "rule 'r': 4 is not one of the values principal attribute 'clearance' may take: 1, 2, 3",
    type: 'schema_error',
  },
  { loc: ['body', 'rules', 0, 'resource_conditions', 0, 'operator'], msg: "rule 'r': operator 'gt' cannot hold for resource attribute 'owner', declared string", type: 'schema_error' },
];

t.test('policies: reject refuses a write that breaks the schemas with a 422 listing each problem; warn takes it', async (t) => {
  const rejecting = await serverWith(t, { schemaEnforcement: 'reject' });
  const refused = await rejecting.call('POST', '/admin/policies', MISTYPED);
  t.equal(refused.status, 422);
  t.same(refused.body.detail, MISTYPED_ISSUES);
  t.equal((await rejecting.call('GET', '/admin/policies/mistyped')).status, 404);
  t.equal((await rejecting.call('POST', '/admin/policies', GUARDED)).status, 200, 'a policy that keeps to them is taken');
  t.equal((await rejecting.call('PUT', '/admin/policies/guarded', { ...GUARDED, rules: MISTYPED.rules })).status, 422, 'a replacement too');
  for (const schemaEnforcement of ['warn', 'off'] as const) {
    const server = await serverWith(t, { schemaEnforcement });
    t.equal((await server.call('POST', '/admin/policies', MISTYPED)).status, 200, schemaEnforcement);
  }
});

t.test('policies: validate reports what breaks the schemas as warnings, in every mode', async (t) => {
  for (const schemaEnforcement of ['reject', 'warn', 'off'] as const) {
    const server = await serverWith(t, { schemaEnforcement });
    const report = await server.call('POST', '/admin/policies/validate', [GUARDED, MISTYPED]);
    t.equal(report.status, 200, schemaEnforcement);
    const schemaWarnings = report.body.warnings.filter((warning: { type: string }) => warning.type === 'schema_error');
    t.same(schemaWarnings, MISTYPED_ISSUES.map((issue) => ({ ...issue, loc: ['body', 1, ...issue.loc.slice(1)] })));
  }
});

t.test('--policies: a schemas.json beside the policy files is the schema document, not a policy', async (t) => {
  const dir = scratchDir(t);
  writeFileSync(join(dir, 'guarded.json'), JSON.stringify(GUARDED));
  writeFileSync(join(dir, 'schemas.json'), JSON.stringify(SCHEMAS));
  const server = await startServer({ policiesDir: dir, schemaEnforcement: 'reject' });
  t.teardown(() => server.close());
  t.same((await server.call('GET', '/admin/policies')).body.map((policy: { name: string }) => policy.name), ['guarded']);
  const answer = await server.call('POST', '/check', check({ uri: 'user:sent', attributes: { level: 4, clearance: '2' } }));
  t.equal(answer.status, 400);
  t.match(answer.body.detail, /attribute 'clearance' must be integer/);
  // --schemas names another file: that one is read instead.
  const other = await startServer({ policiesDir: dir, schemaEnforcement: 'reject', schemasFile: writeSchemas(t, { context: { attributes: { type: 'object' } } }) });
  t.teardown(() => other.close());
  t.equal((await other.call('POST', '/check', check({ uri: 'user:sent', attributes: { level: 4, clearance: '2' } }))).status, 200);
});

t.test('reject: an AuthZEN subject search leaves out the registered subjects that break the schema', async (t) => {
  const server = await serverWith(t, { schemaEnforcement: 'reject' });
  t.equal((await server.call('POST', '/admin/policies', GUARDED)).status, 200);
  const ENTITIES = '/admin/fetchers/registry/entities';
  t.equal((await server.call('POST', ENTITIES, { uri: 'user:good', attributes: { level: 5, clearance: 1 } })).status, 200);
  const search = { subject: { type: 'user' }, action: { name: 'read' }, resource: { type: 'document', id: '1' } };
  t.same((await server.call('POST', '/access/v1/search/subject', search)).body.results, [{ type: 'user', id: 'good' }]);
  const missing = await server.call('POST', '/access/v1/search/subject', { ...search, resource: { type: 'document', id: '1', properties: { owner: 7 } } });
  t.same(missing.body.results, [], 'a resource that breaks the schema allows no subject');
});

t.test('action schemas apply by the action name; context schemas to every check', async (t) => {
  const server = await serverWith(t, { schemaEnforcement: 'reject' }, {
    action: { types: { delete: { type: 'object', properties: { reason: { type: 'string', minLength: 3 } }, required: ['reason'] } } },
    context: { attributes: { type: 'object', properties: { ip: { type: 'string', format: 'ipv4' } } } },
  });
  const asked = (action: unknown, context?: unknown) => server.call('POST', '/check', { principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } }, action, ...(context === undefined ? {} : { context }) });
  t.equal((await asked('read')).status, 200, 'another action has no schema');
  const forgot = await asked('delete');
  t.equal(forgot.status, 400);
  t.match(forgot.body.detail, /action 'delete': attribute 'reason' is required \(required\)/);
  t.equal((await asked({ name: 'delete', attributes: { reason: 'gdpr' } })).status, 200);
  t.match((await asked({ name: 'delete', attributes: { reason: 'x' } })).body.detail, /attribute 'reason' must NOT have fewer than 3 characters \(minLength\)/);
  t.match((await asked('read', { ip: '300.1.1.1' })).body.detail, /context: attribute 'ip' must match format "ipv4" \(format\)/);
});

t.test('hostile checks: a long list of wrong items reports at most 10 violations; __proto__ is an ordinary key', async (t) => {
  const server = await serverWith(t, { schemaEnforcement: 'reject', bodyLimit: 4 * 1024 * 1024 }, {
    resource: { attributes: { type: 'object', properties: { tags: { type: 'array', items: { type: 'integer' } } }, additionalProperties: false } },
  });
  const many = await server.call('POST', '/check', { principal: { attributes: { a: 1 } }, resource: { attributes: { tags: Array.from({ length: 200_000 }, () => 'x') } } });
  t.equal(many.status, 400);
  t.equal((many.body.detail as string).split('; ').length, 10);
  t.match(many.body.detail, /resource: attribute 'tags\.0' must be integer \(type\)/);
  const proto = await server.send('POST', '/check', '{"principal": {"attributes": {"a": 1}}, "resource": {"attributes": {"__proto__": {"tags": "x"}}}}', { 'content-type': 'application/json' });
  t.equal(proto.status, 400);
  t.match(proto.body.detail, /resource: attribute '__proto__' is not declared by the schema \(additionalProperties\)/);
  t.equal((await server.call('POST', '/check', { principal: { attributes: { a: 1 } }, resource: { attributes: { tags: [1] } } })).status, 200, 'the server answers on');
});

t.test('warn: a write that contradicts the schemas is taken, and its answer says what it contradicts in Verdict-Warnings', async (t) => {
  const server = await serverWith(t, { schemaEnforcement: 'warn' });
  const written = await server.call('POST', '/admin/policies', MISTYPED);
  t.equal(written.status, 200, 'taken');
  t.equal(written.body.name, 'mistyped', 'the body is the policy, as clients parse it');
  const warned = JSON.parse(String(written.headers['verdict-warnings'])) as string[];
  t.same(warned, MISTYPED_ISSUES.map(({ loc, msg }) => `${loc.join('.')}: ${msg}`), 'each contradiction, where and what');
  const replaced = await server.call('PUT', '/admin/policies/mistyped', MISTYPED);
  t.ok(replaced.headers['verdict-warnings'], 'a replacement too');
  t.equal((await server.call('POST', '/admin/policies', GUARDED)).headers['verdict-warnings'], undefined, 'a policy that keeps to them: no header');

  const ENTITIES = '/admin/fetchers/registry/entities';
  const registered = await server.call('POST', ENTITIES, { uri: 'user:ann', attributes: { level: '5', clearance: 1 } });
  t.equal(registered.status, 200);
  t.same(JSON.parse(String(registered.headers['verdict-warnings'])), ["body.attributes: principal 'user:ann': attribute 'level' must be integer (type)"]);
  const updated = await server.call('PUT', `${ENTITIES}/user:ann`, { uri: 'user:ann', attributes: { clearance: 9 } });
  t.equal(updated.status, 200, JSON.stringify(updated.body));
  t.match(JSON.parse(String(updated.headers['verdict-warnings'])), [/attribute 'level' must be integer/, /attribute 'clearance' must be equal to one of the allowed values/]);
  const many = await server.call('POST', `${ENTITIES}/$bulk`, Array.from({ length: 12 }, (_, index) => ({ uri: `user:${index}`, attributes: { level: 'x', clearance: 1 } })));
  const listed = JSON.parse(String(many.headers['verdict-warnings'])) as string[];
  t.equal(listed.length, 11, 'ten, then how many more');
  t.equal(listed.at(-1), 'and 2 more');
});

t.test('reject: a registry update refused for breaking the schemas is the client\'s refusal, not a failed audit write', async (t) => {
  const server = await serverWith(t, { schemaEnforcement: 'reject' });
  const ENTITIES = '/admin/fetchers/registry/entities';
  t.equal((await server.call('POST', ENTITIES, { uri: 'user:bob', attributes: { level: 5, clearance: 1 } })).status, 200);
  t.equal((await server.call('PUT', `${ENTITIES}/user:bob`, { uri: 'user:bob', attributes: { level: 'high' } })).status, 422);
  const metrics = (await server.call('GET', '/metrics')).body as string;
  t.match(metrics, /^verdict_audit_write_failures_total 0$/m, 'no audit write failed');
});
