import t from 'tap';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, temporaryDataDir, type TestServer } from '../helpers/server.js';

/**
 * AuthZEN decisions are checks to everything that watches checks: the outcome and per-rule metrics,
 * the live view's seconds, top rules and recent denials (which the playground replays as /check),
 * and the decision log.
 */

const subject = (id: string, properties: Record<string, unknown> = {}) => ({ type: 'user', id, properties });
const report = { type: 'report', id: 'q3', properties: { kind: 'report' } };

async function liveWhen(server: TestServer, done: (body: any) => boolean) {
  for (let attempt = 0; ; attempt++) {
    const live = await server.call('GET', '/admin/live');
    if (done(live.body) || attempt === 600) return live.body;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

t.test('metrics, the live view, recent denials replayed as /check, and the decision log see AuthZEN decisions', async (t) => {
  const dir = temporaryDataDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const decisionLog = join(dir, 'decisions.jsonl');
  const server = await startServer({ decisionLog, recentDenialsValues: true });
  t.teardown(server.close);
  const created = await server.call('POST', '/admin/policies', {
    name: 'reports',
    rules: [{ name: 'analysts', effect: 'allow', principal_conditions: [{ path: 'attributes.team', operator: '==', value: 'analytics' }], resource_conditions: [{ path: 'attributes.kind', operator: '==', value: 'report' }], actions: ['read'] }],
  });
  t.equal(created.status, 200);
  // A search decides every candidate, but those are no decisions anyone asked for: nothing below counts them.
  for (const [uri, team] of [['user:zoe', 'analytics'], ['user:max', 'sales']]) {
    t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri, type: 'principal', attributes: { team } })).status, 200);
  }
  const found = await server.call('POST', '/access/v1/search/subject', { subject: { type: 'user' }, action: { name: 'read' }, resource: report });
  t.strictSame(found.body.results, [{ type: 'user', id: 'zoe' }]);
  t.equal((await server.call('POST', '/access/v1/search/action', { subject: subject('max'), resource: report })).body.results.length, 0);
  for (const uri of ['dashboard:d1', 'dashboard:d2']) {
    t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri, type: 'resource', attributes: { kind: uri.endsWith('1') ? 'report' : 'chart' } })).status, 200);
  }
  const dashboards = await server.call('POST', '/access/v1/search/resource', { subject: subject('zoe'), action: { name: 'read' }, resource: { type: 'dashboard' } });
  t.strictSame(dashboards.body.results, [{ type: 'dashboard', id: 'd1' }]);
  const ask = (body: unknown, path = '/access/v1/evaluation') => server.call('POST', path, body).then((answer) => answer.body);
  t.strictSame(await ask({ subject: subject('ann', { team: 'analytics' }), action: { name: 'read' }, resource: report }), { decision: true });
  t.strictSame(await ask({ subject: subject('sam', { team: 'sales' }), action: { name: 'read' }, resource: report }), { decision: false });
  t.strictSame(await ask({ subject: subject('ann', { team: 'analytics' }), action: { name: 'read' }, evaluations: [{ resource: report }, { resource: { ...report, properties: { kind: 'memo' } } }] }, '/access/v1/evaluations'), {
    evaluations: [{ decision: true }, { decision: false }],
  });

  const live = await liveWhen(server, (body) => body.seconds.reduce((total: number, second: any) => total + second.allowed + second.denied + second.check.count + second.bulk.count, 0) >= 4 + 3);
  const total = (read: (second: any) => number) => live.seconds.reduce((sum: number, second: any) => sum + read(second), 0);
  t.strictSame([total((s) => s.allowed), total((s) => s.denied)], [2, 2], 'every decision counted once');
  t.strictSame([total((s) => s.check.count), total((s) => s.bulk.count)], [2, 1], 'an evaluation times as a check, evaluations as a bulk');
  t.equal(live.recent_denials.denials.length, 2, 'no candidate of a search among the recent denials');
  t.strictSame(live.rules.rules, [{ policy: 'reports', rule: 'analysts', effect: 'allow', decisions: 2 }]);
  const [memo, sam] = live.recent_denials.denials;
  t.match(sam, { principal: { uri: 'user:sam', attributes: { team: 'sales' } }, resource: { uri: 'report:q3', attributes: { kind: 'report' } }, action: 'read', reason: 'Action denied by default effect' });
  t.match(memo, { principal: { uri: 'user:ann' }, resource: { uri: 'report:q3', attributes: { kind: 'memo' } } });
  const metrics = (await server.call('GET', '/metrics')).body as string;
  t.match(metrics, /^verdict_decisions_total\{allowed="true"\} 2$/m);
  t.match(metrics, /^verdict_decisions_total\{allowed="false"\} 2$/m);
  t.match(metrics, /^verdict_rule_decisions_total\{policy="reports",rule="analysts",effect="allow"\} 2$/m);
  t.match(metrics, /route="\/access\/v1\/evaluation",status_code="200"/, 'the request histogram names the route');

  // What the playground sends when a denial is replayed: its uris, attributes and action, as /check.
  for (const denial of [sam, memo]) {
    const replayed = await server.call('POST', '/check', { principal: denial.principal, resource: denial.resource, action: denial.action });
    t.strictSame([replayed.status, replayed.body.allowed, replayed.body.reason], [200, false, denial.reason], 'the replay is denied as the evaluation was');
  }

  await server.close();
  const lines = readFileSync(decisionLog, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line));
  t.strictSame(
    lines.map((line) => [line.request.principal.uri, line.request.resource.uri, line.allowed]),
    [['user:ann', 'report:q3', true], ['user:sam', 'report:q3', false], ['user:ann', 'report:q3', true], ['user:ann', 'report:q3', false], ['user:sam', 'report:q3', false], ['user:ann', 'report:q3', false]],
    'one line per decision (the two replays last), naming the entities type:id',
  );
});
