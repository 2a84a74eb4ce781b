import t from 'tap';
import { rmSync } from 'node:fs';
import { startServer, temporaryDataDir } from '../helpers/server.js';

const OPS_ONLY = {
  name: 'docs',
  rules: [{ name: 'ops', effect: 'allow', principal_conditions: [{ path: 'attributes.team', operator: '==', value: 'ops' }], resource_conditions: [], actions: ['read'] }],
};
const EVERYONE = { ...OPS_ONLY, rules: [{ ...OPS_ONLY.rules[0], name: 'everyone', principal_conditions: [] }] };
const CHECK = { principal: { attributes: { team: 'dev' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' };

t.test('history lists every version, deletion included; one version reads back; restore makes it current', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const created = (await server.call('POST', '/admin/policies', OPS_ONLY)).body;
  const before = await server.call('POST', '/check', CHECK);
  t.equal(before.body.allowed, false, 'dev may not read before the change');
  await server.call('PUT', '/admin/policies/docs', EVERYONE);
  t.equal((await server.call('POST', '/check', CHECK)).body.allowed, true, 'the bad change lets everyone in');

  const history = await server.call('GET', '/admin/policies/docs/history');
  t.equal(history.status, 200);
  t.same(history.body.records.map((r: any) => [r.version, r.operation, r.actor]), [[2, 'policy.replace', 'anonymous'], [1, 'policy.create', 'anonymous']]);
  t.equal(history.body.next_cursor, null);
  const first = await server.call('GET', '/admin/policies/docs/history/1');
  t.equal(first.status, 200);
  t.same(first.body.after, created, 'version 1 is the policy as created');

  const restored = await server.call('POST', '/admin/policies/docs/restore?version=1');
  t.equal(restored.status, 200);
  t.same(restored.body, first.body.after, 'the answer is the restored policy');
  t.same((await server.call('GET', '/admin/policies/docs')).body, first.body.after);
  t.same((await server.call('POST', '/check', CHECK)).body, before.body, 'the check answers as it did before the change');
  const [record] = (await server.call('GET', '/admin/policies/docs/history')).body.records;
  t.match(record, { version: 3, operation: 'policy.restore', restored_from: 1, route: 'POST /admin/policies/:name/restore' }, 'the restore is a write of its own');
  t.same([record.before.rules[0].name, record.after.rules[0].name], ['everyone', 'ops']);
});

t.test('restoring a replacement brings back the policy it wrote, not the one it replaced', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const forTeam = (team: string) => ({ ...OPS_ONLY, rules: [{ ...OPS_ONLY.rules[0], name: team, principal_conditions: [{ path: 'attributes.team', operator: '==', value: team }] }] });
  const teamsAllowed = async () => {
    const teams = [];
    for (const team of ['ops', 'dev', 'qa']) if ((await server.call('POST', '/check', { ...CHECK, principal: { attributes: { team } } })).body.allowed) teams.push(team);
    return teams;
  };
  t.equal((await server.call('POST', '/admin/policies', forTeam('ops'))).status, 200);
  t.equal((await server.call('PUT', '/admin/policies/docs', forTeam('dev'))).status, 200);
  t.equal((await server.call('PUT', '/admin/policies/docs', forTeam('qa'))).status, 200);
  const second = (await server.call('GET', '/admin/policies/docs/history/2')).body;
  t.same([second.before.rules[0].name, second.after.rules[0].name], ['ops', 'dev'], 'version 2 replaced ops by dev');

  const restored = await server.call('POST', '/admin/policies/docs/restore?version=2');
  t.equal(restored.status, 200);
  t.same(restored.body, second.after, 'the answer is what version 2 wrote');
  t.same((await server.call('GET', '/admin/policies/docs')).body, second.after);
  t.same(await teamsAllowed(), ['dev'], 'and it decides');
  const [record] = (await server.call('GET', '/admin/policies/docs/history')).body.records;
  t.match(record, { version: 4, operation: 'policy.restore', restored_from: 2 });
  t.same([record.before.rules[0].name, record.after.rules[0].name], ['qa', 'dev']);
});

t.test('a deleted policy can be restored; its deletion cannot', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  await server.call('POST', '/admin/policies', OPS_ONLY);
  await server.call('POST', '/admin/policies', { ...OPS_ONLY, name: 'other' });
  await server.call('DELETE', '/admin/policies/docs');
  t.equal((await server.call('GET', '/admin/policies/docs')).status, 404);
  const history = (await server.call('GET', '/admin/policies/docs/history')).body.records;
  t.same(history.map((r: any) => [r.version, r.operation, r.after === null]), [[2, 'policy.delete', true], [1, 'policy.create', false]], 'the deletion is a version');

  const deletion = await server.call('POST', '/admin/policies/docs/restore?version=2');
  t.equal(deletion.status, 400);
  t.match(deletion.body.detail, /is its deletion/);
  const restored = await server.call('POST', '/admin/policies/docs/restore?version=1');
  t.equal(restored.status, 200);
  t.same((await server.call('GET', '/admin/policies')).body.map((p: any) => p.name), ['other', 'docs'], 'back, last in creation order');
  t.equal((await server.call('POST', '/check', { ...CHECK, principal: { attributes: { team: 'ops' } } })).body.allowed, true, 'and enforced');
});

t.test('history errors say what to fix', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  await server.call('POST', '/admin/policies', OPS_ONLY);
  const cases: [string, string, number, RegExp | unknown][] = [
    ['GET', '/admin/policies/absent/history', 404, 'Policy not found'],
    ['GET', '/admin/policies/docs/history/9', 404, /no version 9/],
    ['GET', '/admin/policies/docs/history/0', 422, undefined],
    ['GET', '/admin/policies/docs/history/one', 422, undefined],
    ['POST', '/admin/policies/docs/restore?version=9', 404, /no version 9/],
    ['POST', '/admin/policies/docs/restore?version=x', 422, undefined],
    ['POST', '/admin/policies/docs/restore', 422, undefined],
  ];
  for (const [method, path, status, detail] of cases) {
    const response = await server.call(method, path);
    t.equal(response.status, status, `${method} ${path} → ${status}`);
    t.ok(response.body.detail !== undefined, `${method} ${path}: a detail`);
    if (detail !== undefined) t.match(response.body.detail, detail);
  }
  for (let index = 0; index < 4; index++) await server.call('PUT', '/admin/policies/docs', { ...OPS_ONLY, description: `edit ${index}` });
  const page = (await server.call('GET', '/admin/policies/docs/history?limit=2')).body;
  t.same(page.records.map((r: any) => r.version), [5, 4]);
  const next = (await server.call('GET', `/admin/policies/docs/history?limit=2&cursor=${page.next_cursor}`)).body;
  t.same(next.records.map((r: any) => r.version), [3, 2], 'history pages like the audit trail');
});

t.test('a version that breaks the limits in force now is not restored', async (t) => {
  const dataDir = temporaryDataDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const first = await startServer({ dataDir });
  const rules = ['a', 'b', 'c'].map((name) => ({ ...OPS_ONLY.rules[0], name }));
  await first.call('POST', '/admin/policies', { ...OPS_ONLY, rules });
  await first.call('PUT', '/admin/policies/docs', OPS_ONLY);
  await first.close();
  const server = await startServer({ dataDir, maxRulesPerPolicy: 2 });
  t.teardown(server.close);
  const response = await server.call('POST', '/admin/policies/docs/restore?version=1');
  t.equal(response.status, 422);
  t.match(response.body.detail, [{ loc: ['body', 'rules'] }]);
  t.equal((await server.call('GET', '/admin/policies/docs/history')).body.records.length, 2, 'nothing was written');
});

t.test('policies stored before the audit trail get a baseline version 1', async (t) => {
  const { default: Database } = await import('better-sqlite3');
  const { DATABASE_FILE } = await import('../../src/store/embedded/database.js');
  const { join } = await import('node:path');
  const dataDir = temporaryDataDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const first = await startServer({ dataDir });
  await first.call('POST', '/admin/policies', OPS_ONLY);
  await first.close();
  // Back to the layout of the release before the audit trail (schema 3), keeping the policy.
  const db = new Database(join(dataDir, DATABASE_FILE));
  db.exec('DROP TABLE audit; DROP TABLE policy_versions; PRAGMA user_version = 3;');
  db.close();

  const server = await startServer({ dataDir });
  t.teardown(server.close);
  const [baseline] = (await server.call('GET', '/admin/policies/docs/history')).body.records;
  t.match(baseline, { version: 1, operation: 'policy.baseline', actor: 'verdict', before: null });
  t.same(baseline.after, (await server.call('GET', '/admin/policies/docs')).body);
  await server.call('PUT', '/admin/policies/docs', EVERYONE);
  t.equal((await server.call('POST', '/admin/policies/docs/restore?version=1')).status, 200, 'the baseline restores');
  t.equal((await server.call('POST', '/check', CHECK)).body.allowed, false);
});
