import t from 'tap';
import fc from 'fast-check';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { newestLines } from '../../src/services/decision-log-replay.js';

// POST /admin/policies/impact over real HTTP: what a proposed change would do to the checks the
// server decided lately, against deciding those checks after the change is written.

const IMPACT = '/admin/policies/impact';
const roleRule = (role: string, actions = ['read']) => ({ name: `${role}s`, effect: 'allow', principal_conditions: [{ path: 'attributes.role', operator: '==', value: role }], actions });
const policyOf = (name: string, rules: unknown[]) => ({ name, rules });
const check = (role: string, action = 'read', resource = 'doc:1') => ({ principal: { uri: `user:${role}`, attributes: { role } }, resource: { uri: resource }, action });

async function decideAll(server: TestServer, checks: unknown[]): Promise<boolean[]> {
  const answered = await server.call('POST', '/check/bulk', checks);
  if (answered.status !== 200) throw new Error(JSON.stringify(answered.body));
  return (answered.body as { allowed: boolean }[]).map((answer) => answer.allowed);
}

async function sendEach(server: TestServer, checks: unknown[]): Promise<void> {
  for (const each of checks) if ((await server.call('POST', '/check', each)).status !== 200) throw new Error(`refused: ${JSON.stringify(each)}`);
}

t.test('a change that flips a known share of the checks: counted both ways, by action, by rule, by type, with a sample', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', policyOf('access', [roleRule('reader')]))).status, 200);
  const checks = [...Array.from({ length: 30 }, () => check('reader')), ...Array.from({ length: 10 }, () => check('guest', 'read', 'img:1')), ...Array.from({ length: 5 }, () => check('guest', 'write'))];
  await sendEach(server, checks);

  const proposed = policyOf('access', [roleRule('guest', ['read'])]);
  const impact = await server.call('POST', IMPACT, { policies: [proposed] });
  t.equal(impact.status, 200, JSON.stringify(impact.body));
  const report = impact.body as Record<string, any>;
  t.equal(report.replayed, 45);
  t.same(report.changed, { allow_to_deny: 30, deny_to_allow: 10 });
  t.same(report.by_action, [{ key: 'read', allow_to_deny: 30, deny_to_allow: 10 }], 'the writes stay denied');
  t.same(report.by_rule, [
    { before: 'access/readers', after: 'default deny', allow_to_deny: 30, deny_to_allow: 0 },
    { before: 'default deny', after: 'access/guests', allow_to_deny: 0, deny_to_allow: 10 },
  ]);
  t.same(report.by_resource_type, [{ key: 'doc', allow_to_deny: 30, deny_to_allow: 0 }, { key: 'img', allow_to_deny: 0, deny_to_allow: 10 }]);
  t.same(report.by_principal_type, [{ key: 'user', allow_to_deny: 30, deny_to_allow: 10 }]);
  t.equal(report.sample.length, 10);
  t.match(report.sample[0], { check: { principal: { uri: 'user:reader', attributes: { role: 'reader' } }, resource: { uri: 'doc:1' }, action: 'read' }, before: { allowed: true, explain: { decided_by: { rule: 'readers' } } }, after: { allowed: false, explain: { decided_by: { kind: 'default' } } } });
  t.match(report, { source: 'recent_checks', process: { pid: process.pid }, recent_checks: { capacity: 1000, skipped_for_size: 0 } });
  t.ok(Date.parse(report.from) <= Date.parse(report.to));

  t.same((await server.call('GET', '/admin/policies/access')).body.rules.map((rule: { name: string }) => rule.name), ['readers'], 'nothing was written');
  const deletion = await server.call('POST', IMPACT, { delete: ['access'] });
  t.same(deletion.body.changed, { allow_to_deny: 30, deny_to_allow: 0 });
  t.same(deletion.body.by_rule, [{ before: 'access/readers', after: 'no policies', allow_to_deny: 30, deny_to_allow: 0 }]);

  // A restore: version 1 (readers) back over version 2 (guests), previewed once version 2 is in force.
  t.equal((await server.call('PUT', '/admin/policies/access', proposed)).status, 200);
  await sendEach(server, checks);
  const restore = await server.call('POST', IMPACT, { restore: [{ name: 'access', version: 1 }] });
  t.same(restore.body.changed, { allow_to_deny: 20, deny_to_allow: 60 }, 'both rounds of checks replayed: the 10 guests twice lose read, the 30 readers twice gain it');
});

t.test('random policies and checks: the preview counts exactly the checks that the change, once written, decides otherwise', async (t) => {
  const roles = ['reader', 'writer', 'guest', 'admin'];
  const rules = fc.array(fc.record({ role: fc.constantFrom(...roles), actions: fc.subarray(['read', 'write', 'delete'], { minLength: 1 }), effect: fc.constantFrom('allow', 'deny') }), { minLength: 1, maxLength: 4 });
  const checks = fc.array(fc.record({ role: fc.constantFrom(...roles), action: fc.constantFrom('read', 'write', 'delete'), resource: fc.constantFrom('doc:1', 'img:2', 'x') }), { minLength: 1, maxLength: 40 });
  const asPolicy = (name: string, drawn: { role: string; actions: string[]; effect: string }[]) => policyOf(name, drawn.map(({ role, actions, effect }, index) => ({ ...roleRule(role, actions), name: `r${index}`, effect })));
  await fc.assert(
    fc.asyncProperty(rules, rules, rules, checks, async (kept, before, after, drawn) => {
      const server = await startServer();
      try {
        for (const policy of [asPolicy('kept', kept), asPolicy('changed', before)]) if ((await server.call('POST', '/admin/policies', policy)).status !== 200) throw new Error('not written');
        const sent = drawn.map(({ role, action, resource }) => check(role, action, resource));
        await sendEach(server, sent);
        const previewed = (await server.call('POST', IMPACT, { policies: [asPolicy('changed', after)] })).body as Record<string, any>;
        const decidedBefore = await decideAll(server, sent);
        if ((await server.call('PUT', '/admin/policies/changed', asPolicy('changed', after))).status !== 200) throw new Error('not replaced');
        const decidedAfter = await decideAll(server, sent);
        const flips = { allow_to_deny: 0, deny_to_allow: 0 };
        decidedBefore.forEach((allowed, index) => {
          if (allowed && !decidedAfter[index]) flips.allow_to_deny++;
          if (!allowed && decidedAfter[index]) flips.deny_to_allow++;
        });
        if (previewed.replayed !== sent.length || JSON.stringify(previewed.changed) !== JSON.stringify(flips)) {
          throw new Error(`previewed ${JSON.stringify(previewed.changed)} of ${previewed.replayed}, decided ${JSON.stringify(flips)} of ${sent.length}`);
        }
      } finally {
        await server.close();
      }
    }),
    { numRuns: Number(process.env.IMPACT_RUNS ?? 25) },
  );
  t.pass('the preview agrees with the decisions after the write');
});

t.test('refused changes say what to fix; a read key may preview; the ring keeps its bounds', async (t) => {
  const server = await startServer({ recentChecks: 5, maxAnswerSize: 2000 });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', policyOf('access', [roleRule('reader')]))).status, 200);
  const nothing = await server.call('POST', IMPACT, {});
  t.match([nothing.status, nothing.body.detail], [400, /Nothing to preview/]);
  const invalid = await server.call('POST', IMPACT, { policies: [{ name: 'x', rules: [{ name: 'r', effect: 'maybe', actions: ['read'] }] }] });
  t.equal(invalid.status, 422);
  t.same(invalid.body.detail[0].loc.slice(0, 3), ['body', 'policies', 0]);
  const unknown = await server.call('POST', IMPACT, { delete: ['nope'] });
  t.match([unknown.status, unknown.body.detail], [422, [{ loc: ['body', 'delete', 0], msg: "no policy named 'nope' is in force" }]]);
  t.equal((await server.call('DELETE', '/admin/policies/access')).status, 200);
  const deletion = await server.call('POST', IMPACT, { restore: [{ name: 'access', version: 2 }] });
  t.match([deletion.status, deletion.body.detail], [400, /is its deletion/]);
  t.equal((await server.call('POST', IMPACT, { restore: [{ name: 'access', version: 9 }] })).status, 404);

  for (let index = 0; index < 8; index++) await server.call('POST', '/check', check(index % 2 === 0 ? 'reader' : 'guest'));
  await server.call('POST', '/check', { ...check('reader'), context: { note: 'x'.repeat(20_000) } });
  const bounded = await server.call('POST', IMPACT, { restore: [{ name: 'access', version: 1 }] });
  t.equal(bounded.status, 200);
  t.equal(bounded.body.replayed, 5, 'the last five checks, no more');
  t.same(bounded.body.recent_checks, { capacity: 5, skipped_for_size: 1 }, 'a check over 16 KB was not kept');
  t.ok(bounded.body.sample.length < 3 && bounded.body.sample_cut !== undefined, `the sample stops at --max-answer-size: ${bounded.body.sample_cut}`);
  t.ok(JSON.stringify(bounded.body).length < 4000);
});

t.test('--recent-checks-rate keeps at most so many checks a second', async (t) => {
  const clock = new ManualClock();
  clock.advance(1000 - (clock.now() % 1000));
  const server = await startServer({ recentChecksRate: 3 }, { clock });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', policyOf('access', [roleRule('reader')]))).status, 200);
  const replayed = async () => ((await server.call('POST', IMPACT, { delete: ['access'] })).body as { replayed: number }).replayed;
  await sendEach(server, Array.from({ length: 20 }, () => check('reader')));
  t.equal(await replayed(), 3, 'three of the twenty sent within one second');
  clock.advance(999);
  await sendEach(server, [check('reader')]);
  t.equal(await replayed(), 3, 'none more before that second is up');
  clock.advance(1);
  await sendEach(server, Array.from({ length: 20 }, () => check('reader')));
  t.equal(await replayed(), 6, 'three more in the next');
});

t.test('checks of bulks decided in the worker pool are kept for previews too, within --recent-checks-rate', async (t) => {
  const clock = new ManualClock();
  clock.advance(1000 - (clock.now() % 1000));
  const server = await startServer({ evaluation: 'pool', workers: 1, recentChecksRate: 25 }, { clock });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', policyOf('access', [roleRule('reader')]))).status, 200);
  // By attributes alone: a worker decides them (a uri would keep the bulk on the front).
  const byAttributes = (role: string) => ({ principal: { attributes: { role } }, resource: { attributes: { kind: 'doc' } }, action: 'read' });
  t.same(await decideAll(server, [...Array.from({ length: 20 }, () => byAttributes('reader')), ...Array.from({ length: 20 }, () => byAttributes('guest'))]).then((allowed) => allowed.filter(Boolean).length), 20);
  const metrics = (await server.call('GET', '/metrics')).body as string;
  t.match(metrics, /verdict_worker_pool_threads [1-9]/, 'the bulk went to the worker pool');
  const preview = (await server.call('POST', IMPACT, { delete: ['access'] })).body as Record<string, any>;
  t.equal(preview.replayed, 25, 'the first 25 of the bulk, this second\'s share');
  t.same(preview.changed, { allow_to_deny: 20, deny_to_allow: 0 }, 'each replayed as the worker read it');
  await decideAll(server, [byAttributes('reader')]);
  t.equal(((await server.call('POST', IMPACT, { delete: ['access'] })).body as { replayed: number }).replayed, 25, 'no more this second');
  clock.advance(1000);
  await decideAll(server, Array.from({ length: 3 }, () => byAttributes('reader')));
  t.equal(((await server.call('POST', IMPACT, { delete: ['access'] })).body as { replayed: number }).replayed, 28, 'the next second\'s, from the next bulk');
});

t.test('source decision_log: the newest lines of the log file are replayed, bulks decided in the pool among them; masked and refused lines are counted, not replayed', async (t) => {
  const file = join(mkdtempSync(join(tmpdir(), 'verdict-impact-log-')), 'decisions.ndjson');
  t.teardown(() => rmSync(dirname(file), { recursive: true, force: true }));
  const server = await startServer({ decisionLog: file, decisionLogMask: { context: { ip: 'omit' } }, evaluation: 'pool', workers: 1, recentChecks: 0 });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', policyOf('access', [roleRule('reader')]))).status, 200);
  await sendEach(server, Array.from({ length: 6 }, () => check('reader')));
  await decideAll(server, [...Array.from({ length: 4 }, () => check('guest')), ...Array.from({ length: 3 }, () => check('reader'))]);
  await sendEach(server, [{ ...check('reader'), context: { ip: '10.0.0.1' } }]);
  const proposed = { policies: [policyOf('access', [roleRule('guest')])] };
  t.equal((await server.call('POST', IMPACT, proposed)).body.replayed, 0, 'the recent checks are off: nothing in memory');

  await until(() => readFileSync(file, 'utf8').split('\n').length - 1 === 14, 'the 14 decisions logged');
  writeFileSync(file, '{"not":"a decision"}\n{"time": "2026-01-01T00:00:00Z", "request": {"principal": {}}}\n', { flag: 'a' });
  const fromLog = await server.call('POST', IMPACT, { ...proposed, source: 'decision_log' });
  t.equal(fromLog.status, 200, JSON.stringify(fromLog.body));
  t.match(fromLog.body, {
    source: 'decision_log',
    replayed: 13,
    changed: { allow_to_deny: 9, deny_to_allow: 4 },
    decision_log: { file, lines: 16, skipped: { masked: 1, refused: 0, unreadable: 2 } },
  });
  t.same(fromLog.body.by_rule.map((group: { before: string; after: string }) => [group.before, group.after]), [['access/readers', 'default deny'], ['default deny', 'access/guests']]);
  t.match(fromLog.body.sample[0].check, { principal: { uri: 'user:reader', attributes: { role: 'reader' } }, action: 'read' });

  const newest = await server.call('POST', IMPACT, { ...proposed, source: 'decision_log', limit: 3 });
  t.match(newest.body, { replayed: 0, decision_log: { lines: 3, skipped: { masked: 1, unreadable: 2 } } }, 'only the newest lines');
  const tooMany = await server.call('POST', IMPACT, { ...proposed, source: 'decision_log', limit: 100_001 });
  t.equal(tooMany.status, 422, 'a limit past 100,000 lines is refused');
});

t.test('source decision_log without a decision log file is refused with what to do instead', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const refused = await server.call('POST', IMPACT, { delete: [], policies: [policyOf('x', [])], source: 'decision_log' });
  t.equal(refused.status, 409);
  t.match(refused.body.detail, /--decision-log <path>.*recent_checks/);
});

t.test('the log reader: a line still being written is left out, an overlong line is counted unreadable, and only the newest lines are read', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-log-lines-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'log');
  const long = 'x'.repeat(3 * 1024 * 1024);
  writeFileSync(file, `first\n${long}\nthird\nfourth\nunfinished`);
  t.same(await newestLines(file, 2), { lines: ['third', 'fourth'] });
  const all = await newestLines(file, 10);
  t.same(all.lines.length, 4);
  t.same([all.lines[0], all.lines[2], all.lines[3]], ['first', 'third', 'fourth']);
  t.ok(all.lines[1]!.length < 1024, 'the long line is not held whole');
  writeFileSync(file, 'only\n');
  t.same(await newestLines(file, 10), { lines: ['only'] });
  writeFileSync(file, '');
  t.same(await newestLines(file, 10), { lines: [] });
});

t.test('a preview derives its set from the one in force, as a write does, and leaves the live set to derive its own changes after it', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const roles = ['reader', 'writer', 'guest'];
  for (const role of roles) t.equal((await server.call('POST', '/admin/policies', policyOf(`${role}s`, [roleRule(role)]))).status, 200);
  await sendEach(server, roles.map((role) => check(role)));
  const previewed = await server.call('POST', IMPACT, { policies: [policyOf('writers', [roleRule('nobody')]), policyOf('admins', [roleRule('admin')])], delete: ['guests'] });
  t.same(previewed.body.changed, { allow_to_deny: 2, deny_to_allow: 0 });
  t.same(await decideAll(server, [...roles, 'admin'].map((role) => check(role))), [true, true, true, false], 'nothing live moved');
  t.equal((await server.call('DELETE', '/admin/policies/readers')).status, 200);
  t.equal((await server.call('PUT', '/admin/policies/guests', policyOf('guests', [roleRule('admin')]))).status, 200);
  t.same(await decideAll(server, [...roles, 'admin'].map((role) => check(role))), [false, true, false, true], 'the writes after it are decided as written');
  const again = await server.call('POST', IMPACT, { delete: ['writers'] });
  t.same(again.body.by_rule.map((group: { before: string }) => group.before), ['writers/writers'], 'a preview after them starts from them');
});
