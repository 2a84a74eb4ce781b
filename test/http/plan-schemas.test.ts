import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchDir, startServer, type TestServer } from '../helpers/server.js';
import type { Config } from '../../src/config/config.js';

/**
 * POST /plan and /plan/bulk hold what they know to the attribute schemas as /check does: the
 * principal, the action and the context whole, the resource's known attributes by their types but
 * never for what they leave out (the resource is the unknown side). Real servers over HTTP.
 */

const SCHEMAS = {
  principal: { types: { user: { type: 'object', properties: { level: { type: 'integer' } }, required: ['level'] } } },
  resource: { attributes: { type: 'object', properties: { kind: { enum: ['laptop', 'phone'] }, owner: { type: 'string' } }, required: ['kind', 'owner'] } },
};

const POLICY = {
  name: 'devices',
  rules: [
    {
      name: 'seniors',
      effect: 'allow',
      actions: ['administer'],
      principal_conditions: [{ path: 'attributes.level', operator: 'gte', value: 3 }],
      resource_conditions: [{ path: 'attributes.kind', operator: '==', value: 'laptop' }],
    },
  ],
};

async function serverWith(t: Test, overrides: Partial<Config>): Promise<TestServer> {
  const schemasFile = join(scratchDir(t), 'schemas.json');
  writeFileSync(schemasFile, JSON.stringify(SCHEMAS));
  const server = await startServer({ schemasFile, ...overrides });
  t.teardown(() => server.close());
  t.equal((await server.call('POST', '/admin/policies', POLICY)).status, 200);
  return server;
}

async function violationsCounted(server: TestServer): Promise<number> {
  const text = (await server.call('GET', '/metrics')).body as string;
  return Number(text.split('\n').find((row) => row.startsWith('verdict_schema_violations_total '))?.split(' ')[1]);
}

const plan = (principal: Record<string, unknown>, resource?: Record<string, unknown>) => ({
  principal: { uri: 'user:ann', attributes: principal },
  action: 'administer',
  ...(resource && { resource: { attributes: resource } }),
});

const SENIOR_PLAN = { kind: 'conditional', condition: { path: 'attributes.kind', operator: '==', value: 'laptop' } };

t.test('reject: a principal or known resource attributes that break the schemas are 400, naming them; what the resource leaves out is not asked for', async (t) => {
  const server = await serverWith(t, { schemaEnforcement: 'reject' });
  // No resource attributes at all, though the resource schema requires two: the resource is what the plan is about.
  const open = await server.call('POST', '/plan', plan({ level: 5 }));
  t.equal(open.status, 200);
  t.match(open.body, SENIOR_PLAN);
  const partly = await server.call('POST', '/plan', plan({ level: 5 }, { owner: 'ann' }));
  t.equal(partly.status, 200, 'one of the two required attributes known: the other is not missing, only unknown');

  const stringLevel = await server.call('POST', '/plan', plan({ level: '5' }));
  t.same([stringLevel.status, stringLevel.body], [400, { detail: "The check breaks the attribute schema: principal 'user:ann': attribute 'level' must be integer (type)" }]);
  const forgotten = await server.call('POST', '/plan', plan({ rank: 5 }));
  t.same([forgotten.status, forgotten.body], [400, { detail: "The check breaks the attribute schema: principal 'user:ann': attribute 'level' is required (required)" }], "the principal is known whole: its required attributes are asked for");
  const unknownKind = await server.call('POST', '/plan', plan({ level: 5 }, { kind: 'desktop' }));
  t.same(
    [unknownKind.status, unknownKind.body],
    [400, { detail: "The check breaks the attribute schema: resource: attribute 'kind' must be equal to one of the allowed values: \"laptop\", \"phone\" (enum)" }],
  );

  // In a bulk, only the item is denied, as a conflict with the registry denies it.
  const bulk = await server.call('POST', '/plan/bulk', [plan({ level: 5 }), plan({ level: '5' })]);
  t.equal(bulk.status, 200);
  t.match(bulk.body[0], SENIOR_PLAN);
  t.same(bulk.body[1], { kind: 'always_denied', condition: false, reason: stringLevel.body.detail, mongodb: bulk.body[1].mongodb });
  t.equal(await violationsCounted(server), 4);
});

t.test('warn: the same plans are made as without schemas, and counted', async (t) => {
  const server = await serverWith(t, {});
  const stringLevel = await server.call('POST', '/plan', plan({ level: '5' }));
  t.same([stringLevel.status, stringLevel.body.kind], [200, 'always_denied'], 'a level of "5" is never gte 3');
  const unknownKind = await server.call('POST', '/plan', plan({ level: 5 }, { kind: 'desktop' }));
  t.same([unknownKind.status, unknownKind.body.kind], [200, 'always_denied']);
  t.equal((await server.call('POST', '/plan', plan({ level: 5 }))).status, 200);
  t.equal(await violationsCounted(server), 2, 'the plan whose resource is only partly known is not counted');
});
