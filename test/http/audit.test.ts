import t from 'tap';
import { startServer, temporaryDataDir, type TestServer } from '../helpers/server.js';
import { ADMIN_WRITES, writeRoutesOf } from '../helpers/admin-writes.js';
import { rmSync } from 'node:fs';

const ENTITIES = '/admin/fetchers/registry/entities';

async function records(server: TestServer, query = ''): Promise<any[]> {
  const response = await server.call('GET', `/admin/audit?limit=1000${query}`);
  if (response.status !== 200) throw new Error(`GET /admin/audit${query}: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.records;
}

/** The route of a record in OpenAPI's spelling. */
const openapiRoute = (route: string) => route.replace(/:([a-z]+)/g, '{$1}');

t.test('every admin write route leaves exactly one audit record, naming the request', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const openapi = (await server.call('GET', '/docs/json')).body;
  t.same(
    [...new Set(ADMIN_WRITES.map(({ method, route }) => `${method} ${route}`))].sort(),
    [...new Set(writeRoutesOf(openapi))].sort(),
    'the routes below are every write route the server documents',
  );
  for (const write of ADMIN_WRITES) {
    const before = await records(server);
    const response = await server.call(write.method, write.path, write.body);
    t.equal(response.status, 200, `${write.method} ${write.path} succeeds`);
    const after = await records(server);
    t.equal(after.length, before.length + 1, `${write.method} ${write.path}: one record`);
    const record = after[0];
    t.equal(`${record.route.split(' ')[0]} ${openapiRoute(record.route.split(' ')[1])}`, `${write.method} ${write.route}`, `${write.method} ${write.route}: the route`);
    t.match(record, { target: write.target, actor: 'anonymous', client: '127.0.0.1', request_id: /^[0-9a-f-]{36}$/ }, `${write.method} ${write.route}: who and where`);
  }
  const ids = (await records(server)).map((record) => record.request_id);
  t.equal(new Set(ids).size, ids.length, 'every record names a request of its own');
});

t.test('a write that fails leaves no record', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const policy = { name: 'p', rules: [] };
  t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
  t.equal((await server.call('POST', ENTITIES, { uri: 'e', attributes: { a: 1 } })).status, 200);
  t.equal((await server.call('DELETE', '/admin/policies/gone-soon')).status, 404);
  const kept = await records(server);
  const failures: [string, string, unknown, number][] = [
    ['POST', '/admin/policies', policy, 409],
    ['POST', '/create-policy', policy, 409],
    ['POST', '/admin/policies', { name: 'bad', rules: [{ name: 'r', effect: 'maybe', actions: ['a'] }] }, 422],
    ['POST', '/admin/policies/simple?name=x', { principal: {}, resource: { attributes: { a: 1 } } }, 422],
    ['PUT', '/admin/policies/absent', { name: 'absent', rules: [] }, 404],
    ['PUT', '/admin/policies/p', { name: 'other', rules: [] }, 400],
    ['DELETE', '/admin/policies/absent', undefined, 404],
    ['POST', '/admin/policies/absent/restore?version=1', undefined, 404],
    ['POST', '/admin/policies/p/restore?version=7', undefined, 404],
    ['POST', '/admin/policies/p/restore', undefined, 422],
    ['POST', ENTITIES, { uri: 'e', attributes: { a: 1 } }, 409],
    ['POST', '/register-entity', { uri: 'e', attributes: { a: 1 } }, 409],
    ['PUT', `${ENTITIES}/e`, { uri: 'f', attributes: { a: 1 } }, 400],
    ['PUT', `${ENTITIES}/absent`, { uri: 'absent', attributes: { a: 1 } }, 404],
    ['DELETE', `${ENTITIES}/absent`, undefined, 404],
    ['POST', '/update-entity', { uri: 'absent', attributes: { a: 1 } }, 404],
    ['POST', '/delete-entity?uri=absent', undefined, 404],
  ];
  for (const [method, path, body, status] of failures) {
    t.equal((await server.call(method, path, body)).status, status, `${method} ${path} → ${status}`);
  }
  t.same(await records(server), kept, 'no record was added');
});

t.test('GET /admin/audit: filters and a cursor, newest first', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  for (let index = 0; index < 5; index++) await server.call('POST', ENTITIES, { uri: `user:${index}`, attributes: { a: index } });
  await server.call('POST', '/admin/policies', { name: 'p', rules: [] });
  await server.call('PUT', '/admin/policies/p', { name: 'p', description: 'second', rules: [] });
  const all = await records(server);
  t.equal(all.length, 7);
  t.same(all.map((record) => record.id), all.map((record) => record.id).sort((a, b) => b - a), 'newest first');

  const pages: any[] = [];
  let cursor: string | null = '';
  while (cursor !== null) {
    const response = await server.call('GET', `/admin/audit?limit=3${cursor === '' ? '' : `&cursor=${cursor}`}`);
    t.equal(response.status, 200);
    t.ok(response.body.records.length <= 3);
    pages.push(...response.body.records);
    cursor = response.body.next_cursor;
  }
  t.same(pages, all, 'the pages together are the whole trail, each record once');

  t.same((await records(server, '&target=policy:p')).map((r) => [r.operation, r.version]), [['policy.replace', 2], ['policy.create', 1]], 'by target');
  t.equal((await records(server, '&target=entity:*')).length, 5, 'by target prefix');
  t.equal((await records(server, '&target=entity:user:1')).length, 1);
  t.equal((await records(server, '&actor=anonymous')).length, 7, 'by actor');
  t.equal((await records(server, '&actor=someone')).length, 0);
  const middle = all[3].time;
  const since = await records(server, `&since=${encodeURIComponent(middle)}`);
  const until = await records(server, `&until=${encodeURIComponent(middle)}`);
  t.equal(since.length + until.length, 7, 'since and until split the trail');
  t.ok(since.some((r) => r.id === all[3].id), 'since is inclusive');
  const [replaced] = await records(server, '&target=policy:p');
  t.same(replaced.before.description, null, 'a policy record holds the policy before');
  t.same(replaced.after.description, 'second', 'and after');

  for (const query of ['since=yesterday', 'until=2024-13-01T00:00:00Z', 'limit=0', 'limit=1001', 'cursor=abc', 'cursor=-1', 'target=', 'actor=']) {
    const response = await server.call('GET', `/admin/audit?${query}`);
    t.equal(response.status, 422, `${query} → 422`);
    t.match(response.body.detail, [{ loc: ['query', query.split('=')[0]] }], `${query}: the detail names the parameter`);
  }
});

t.test('registry values are recorded only with --audit-values', async (t) => {
  const entity = { uri: 'user:s', attributes: { salary: 123456, team: 'ops' } };
  const update = { uri: 'user:s', attributes: { salary: 654321 } };
  for (const auditValues of [false, true]) {
    const server = await startServer({ auditValues });
    t.teardown(server.close);
    await server.call('POST', ENTITIES, entity);
    await server.call('PUT', `${ENTITIES}/user:s`, update);
    const [updated, created] = await records(server);
    t.same(updated.changed_keys, ['salary'], 'the keys that changed, always');
    if (auditValues) {
      t.same([updated.before.attributes, updated.after.attributes], [{ salary: 123456, team: 'ops' }, { salary: 654321, team: 'ops' }], 'values with --audit-values');
    } else {
      t.same([created.after, updated.before, updated.after], [{ type: null, keys: ['salary', 'team'] }, { type: null, keys: ['salary', 'team'] }, { type: null, keys: ['salary', 'team'] }]);
      const raw = (await server.call('GET', '/admin/audit')).body;
      t.notOk(JSON.stringify(raw).includes('123456') || JSON.stringify(raw).includes('654321'), 'no value anywhere in the answer without --audit-values');
    }
  }
});

t.test('metrics count audit records by operation', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  await server.call('POST', '/admin/policies', { name: 'p', rules: [] });
  await server.call('POST', '/admin/policies', { name: 'p', rules: [] });
  await server.call('DELETE', '/admin/policies/p');
  const metrics = (await server.call('GET', '/metrics')).body as string;
  t.match(metrics, /verdict_audit_records_total\{operation="policy.create"\} 1\n/);
  t.match(metrics, /verdict_audit_records_total\{operation="policy.delete"\} 1\n/);
  t.match(metrics, /verdict_audit_write_failures_total 0\n/, 'a refused duplicate is not a failure');
});

t.test('--audit-retention keeps the newest records', async (t) => {
  const dataDir = temporaryDataDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const first = await startServer({ dataDir });
  for (let index = 0; index < 6; index++) await first.call('POST', ENTITIES, { uri: `user:${index}`, attributes: { a: index } });
  const all = await records(first);
  await first.close();

  const server = await startServer({ dataDir, auditRetention: { maxCount: 2 } });
  t.teardown(server.close);
  // The pruning starts with the server, in the background.
  let kept = await records(server);
  for (let polls = 0; kept.length > 2 && polls < 200; polls++) kept = await records(server);
  t.equal(kept.length, 2, 'pruned to the newest two');
  t.same(kept, all.slice(0, 2), 'the oldest went');
  const metrics = (await server.call('GET', '/metrics')).body as string;
  t.match(metrics, /verdict_audit_records_pruned_total 4\n/, 'the pruned records are counted');
});
