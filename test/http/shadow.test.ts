import t from 'tap';
import fc from 'fast-check';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { startServer, temporaryDataDir } from '../helpers/server.js';
import { interceptedStore } from '../helpers/intercepted-store.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { TEST_WRITER } from '../helpers/writer.js';
import { EmbeddedStore } from '../../src/store/embedded/store.js';
import { reference } from '../engine/reference.js';
import { shadowSet } from '../../src/snapshot/policy-snapshots.js';
import type { Policy } from '../../src/schemas/policy.js';
import type { DecisionRequest } from '../../src/engine/index.js';

// Shadow policies over real HTTP: decided beside the live ones on every check, never changing an
// answer, their disagreements counted exactly; promoted by an audited write.

const roleRule = (role: string, effect = 'allow') => ({ name: `${role}s`, effect, principal_conditions: [{ path: 'attributes.role', operator: '==', value: role }], actions: ['read'] });
const LIVE = { name: 'access', rules: [roleRule('reader'), roleRule('banned', 'deny')] };
const NO_IMAGES = { name: 'no-images', effect: 'deny', resource_conditions: [{ path: 'uri', operator: 'startswith', value: 'img:' }], actions: ['read'] };
const NEXT = { name: 'access-next', shadow: 'access', rules: [NO_IMAGES, roleRule('reader'), roleRule('guest'), roleRule('banned', 'deny')] };
const check = (role: string, resource = 'doc:1') => ({ principal: { attributes: { role } }, resource: { uri: resource }, action: 'read' });
const asRequest = (role: string, resource: string): DecisionRequest => ({ principal: { uri: undefined, attributes: new Map([['role', role]]) }, resource: { uri: resource, attributes: new Map() }, action: 'read' });

t.test('under load, the shadow counts exactly the disagreements a reference reading finds, and changes no answer', async (t) => {
  const server = await startServer({ evaluation: 'inline' });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', LIVE)).status, 200);
  const written = await server.call('POST', '/admin/policies', NEXT);
  t.equal(written.status, 200);
  t.equal(written.body.shadow, 'access', 'stored and answered with its shadow field, last');
  t.same(Object.keys(written.body).at(-1), 'shadow');

  const roles = fc.sample(fc.constantFrom('reader', 'guest', 'banned', 'other'), { numRuns: 400 });
  const checks = roles.map((role, index) => check(role, index % 3 === 0 ? 'img:1' : 'doc:1'));
  // Half alone, half in bulks of 20, all at once.
  const alone = checks.slice(0, 200).map((each) => server.call('POST', '/check', each));
  const bulks = Array.from({ length: 10 }, (_, index) => server.call('POST', '/check/bulk', checks.slice(200 + index * 20, 220 + index * 20)));
  const answers = [...(await Promise.all(alone)).map((answer) => answer.body), ...(await Promise.all(bulks)).flatMap((answer) => answer.body)];

  const live = (await server.call('GET', '/admin/policies')).body as Policy[];
  const liveSet = live.filter((policy) => policy.shadow === undefined);
  const expected = { agree: 0, allow_to_deny: 0, deny_to_allow: 0 };
  roles.forEach((role, index) => {
    const request = asRequest(role, index % 3 === 0 ? 'img:1' : 'doc:1');
    const now = reference(liveSet, request).decision;
    const shadowed = reference(shadowSet(liveSet, live.filter((policy) => policy.shadow !== undefined)), request).decision;
    if (JSON.stringify(answers[index]) !== JSON.stringify(now)) throw new Error(`answer ${index} ${JSON.stringify(answers[index])}, the live policies say ${JSON.stringify(now)}`);
    expected[now.allowed === shadowed.allowed ? 'agree' : now.allowed ? 'allow_to_deny' : 'deny_to_allow']++;
  });
  t.ok(expected.deny_to_allow > 30 && expected.allow_to_deny > 10 && expected.agree > 100, JSON.stringify(expected));
  const report = (await server.call('GET', '/admin/shadow')).body;
  t.same(report.decided, expected, 'counted as the reference reading counts them');
  const history = report.history as { at: string; agree: number; allow_to_deny: number; deny_to_allow: number }[];
  t.ok(history.length >= 1 && history.length <= 2, `the checks fell in one minute or two: ${history.length}`);
  t.ok(history.every(({ at }) => Date.parse(at) % 60_000 === 0), 'each count is of a whole minute');
  const summed = { agree: 0, allow_to_deny: 0, deny_to_allow: 0 };
  for (const minute of history) for (const outcome of Object.keys(summed) as (keyof typeof summed)[]) summed[outcome] += minute[outcome];
  t.same(summed, expected, 'the minutes add up to the counts since the start');
  t.same(report.policies, [{ name: 'access-next', in_place_of: 'access', source: 'admin API' }]);
  t.equal(report.disagreements.length, Math.min(100, expected.allow_to_deny + expected.deny_to_allow), 'the latest disagreements, a hundred at most');
  const guest = report.disagreements.find((each: { check: { principal: { attributes: { role: string } } } }) => each.check.principal.attributes.role === 'guest');
  t.match(guest, { check: { resource: { uri: 'doc:1' } }, live: { allowed: false, explain: { decided_by: { kind: 'default' } } }, shadow: { allowed: true, explain: { decided_by: { rule: 'guests' } } } });
  const metrics = (await server.call('GET', '/metrics')).body as string;
  for (const [outcome, count] of Object.entries(expected)) if (count > 0) t.match(metrics, `verdict_shadow_decisions_total{outcome="${outcome}"} ${count}`);
});

t.test("the shadow's history counts each minute of its clock apart and keeps the last hour of them", async (t) => {
  const clock = new ManualClock();
  clock.advance(60_000 - (clock.now() % 60_000));
  const server = await startServer({ evaluation: 'inline' }, { clock });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', LIVE)).status, 200);
  t.equal((await server.call('POST', '/admin/policies', NEXT)).status, 200);
  const first = clock.now();
  const decide = (checks: unknown[]) => server.call('POST', '/check/bulk', checks);
  await decide([check('guest'), check('reader')]);
  clock.advance(59_999);
  await decide([check('reader')]);
  clock.advance(1);
  await decide([check('guest')]);
  const minutes = async () => ((await server.call('GET', '/admin/shadow')).body as { history: unknown[] }).history;
  t.same(await minutes(), [
    { at: new Date(first).toISOString(), agree: 2, allow_to_deny: 0, deny_to_allow: 1 },
    { at: new Date(first + 60_000).toISOString(), agree: 0, allow_to_deny: 0, deny_to_allow: 1 },
  ]);
  const { disagreements } = (await server.call('GET', '/admin/shadow')).body as { disagreements: { at: string }[] };
  t.same(disagreements.map(({ at }) => at), [new Date(first + 60_000).toISOString(), new Date(first).toISOString()], 'each disagreement dated by the clock');
  clock.advance(60 * 60_000);
  await decide([check('reader')]);
  t.same(await minutes(), [{ at: new Date(first + 61 * 60_000).toISOString(), agree: 1, allow_to_deny: 0, deny_to_allow: 0 }], 'an hour later the minutes before it are gone');
});

t.test('promote: a shadow in place of a live policy replaces its rules and goes; one added beside them is written live; both audited', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', LIVE)).status, 200);
  t.equal((await server.call('POST', '/admin/policies', NEXT)).status, 200);
  t.equal((await server.call('POST', '/check', check('guest'))).body.allowed, false, 'a shadow never changes an answer');
  const promoted = await server.call('POST', '/admin/policies/access-next/promote');
  t.equal(promoted.status, 200, JSON.stringify(promoted.body));
  t.same([promoted.body.name, promoted.body.shadow, promoted.body.rules.length], ['access', undefined, 4]);
  t.equal((await server.call('POST', '/check', check('guest'))).body.allowed, true, 'live now');
  t.equal((await server.call('GET', '/admin/policies/access-next')).status, 404, 'the shadow is gone');
  t.same((await server.call('GET', '/admin/shadow')).body.policies, []);

  const added = { name: 'auditors', shadow: true, rules: [roleRule('auditor')] };
  t.equal((await server.call('POST', '/admin/policies', added)).status, 200);
  t.equal((await server.call('POST', '/check', check('auditor'))).body.allowed, false);
  t.same((await server.call('POST', '/admin/policies/auditors/promote')).body.shadow, undefined);
  t.equal((await server.call('POST', '/check', check('auditor'))).body.allowed, true);
  t.equal((await server.call('POST', '/admin/policies/auditors/promote')).status, 409, 'a live policy is not promoted');
  const operations = ((await server.call('GET', '/admin/audit?limit=100')).body.records as { operation: string; target: string }[]).map((record) => `${record.operation} ${record.target}`);
  t.same(operations.slice(0, 4), ['policy.replace policy:auditors', 'policy.create policy:auditors', 'policy.delete policy:access-next', 'policy.replace policy:access']);

  const self = await server.call('POST', '/admin/policies', { name: 'loop', shadow: 'loop', rules: [] });
  t.match([self.status, self.body.detail[0].msg], [422, /a shadow stands in for another policy/]);
});

t.test('--shadow-sample-percent 0: the shadows decide nothing', async (t) => {
  const server = await startServer({ shadowSamplePercent: 0 });
  t.teardown(server.close);
  for (const policy of [LIVE, NEXT]) t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
  for (let index = 0; index < 20; index++) await server.call('POST', '/check', check('guest'));
  t.same((await server.call('GET', '/admin/shadow')).body.decided, { agree: 0, allow_to_deny: 0, deny_to_allow: 0 });
});

t.test('an impact preview of writing a shadow changes no live decision; a shadow written over a live policy takes it out of the live set', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', LIVE)).status, 200);
  for (const role of ['reader', 'guest', 'banned']) await server.call('POST', '/check', check(role));
  const beside = await server.call('POST', '/admin/policies/impact', { policies: [NEXT] });
  t.same(beside.body.changed, { allow_to_deny: 0, deny_to_allow: 0 }, 'a shadow beside the live policies decides nothing live');
  const over = await server.call('POST', '/admin/policies/impact', { policies: [{ ...LIVE, shadow: true }] });
  t.same(over.body.changed, { allow_to_deny: 1, deny_to_allow: 0 }, 'access as a shadow leaves the live set: the reader is denied by no policy');
});


t.test('bulks the worker pool decides are decided by the shadow policies there too: every check counted, the disagreements kept with both explanations, every check kept for previews', async (t) => {
  const server = await startServer({ evaluation: 'pool', workers: 1, recentChecksRate: 0 });
  t.teardown(server.close);
  for (const policy of [LIVE, NEXT]) t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
  // No uri: the front would not keep such a bulk for itself.
  const bulk = Array.from({ length: 300 }, (_, index) => ({ principal: { attributes: { role: index % 2 === 0 ? 'guest' : 'reader' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' }));
  const answered = await server.call('POST', '/check/bulk', bulk);
  t.equal(answered.status, 200);
  t.match((await server.call('GET', '/metrics')).body, /verdict_worker_pool_threads 1\b/, 'decided in the pool, a shadow written or not');
  const report = (await server.call('GET', '/admin/shadow')).body;
  t.same(report.decided, { agree: 150, allow_to_deny: 0, deny_to_allow: 150 }, 'every item decided by the shadows too');
  t.equal(report.disagreements.length, 100, 'the latest hundred disagreements kept');
  t.match(report.disagreements[0], {
    check: { principal: { attributes: { role: 'guest' } } },
    live: { allowed: false, explain: { decided_by: { kind: 'default' } } },
    shadow: { allowed: true, explain: { decided_by: { rule: 'guests' } } },
  });
  t.match((await server.call('GET', '/metrics')).body, 'verdict_shadow_decisions_total{outcome="deny_to_allow"} 150');
  t.equal((await server.call('POST', '/admin/policies/impact', { delete: ['access'] })).body.replayed, 300, 'and kept for previews');

  // The shadow changes: the worker is sent the new shadow set before it decides again.
  t.equal((await server.call('PUT', '/admin/policies/access-next', { ...NEXT, rules: NEXT.rules.filter((rule) => rule.name !== 'guests') })).status, 200);
  t.equal((await server.call('POST', '/check/bulk', bulk)).status, 200);
  t.same((await server.call('GET', '/admin/shadow')).body.decided, { agree: 450, allow_to_deny: 0, deny_to_allow: 150 }, 'decided by the changed shadow: all agree now');
  t.equal((await server.call('DELETE', '/admin/policies/access-next')).status, 200);
  t.equal((await server.call('POST', '/check/bulk', bulk)).status, 200);
  t.same((await server.call('GET', '/admin/shadow')).body.decided, { agree: 450, allow_to_deny: 0, deny_to_allow: 150 }, 'with no shadow, nothing more is counted');
  t.equal((await server.call('POST', '/admin/policies/impact', { delete: ['access'] })).body.replayed, 900, 'every bulk kept for previews');
});

t.test('a PUT never turns a live policy into a shadow: 409 saying how to try a change of it; the policy keeps deciding', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const live = { name: 'readers', rules: [{ name: 'read', effect: 'allow', actions: ['read'] }] };
  t.equal((await server.call('POST', '/admin/policies', live)).status, 200);
  for (const shadow of [true, 'other']) {
    const demoted = await server.call('PUT', '/admin/policies/readers', { ...live, shadow });
    t.equal(demoted.status, 409, JSON.stringify(demoted.body));
    t.match(demoted.body.detail, /Policy 'readers' is live: written with 'shadow' it would stop deciding.*"shadow": "readers"/);
  }
  t.same((await server.call('POST', '/check', { principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } }, action: 'read' })).body.allowed, true, 'it still decides');
  t.equal((await server.call('PUT', '/admin/policies/nobody', { ...live, name: 'nobody', shadow: true })).status, 404, 'an unknown name is still 404');
});

t.test('a shadow named in place of a live policy decides instead of it, not beside it: a rule it drops no longer allows', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const live = { name: 'readers', rules: [{ name: 'readers-read', effect: 'allow', principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'reader' }], actions: ['read'] }] };
  t.equal((await server.call('POST', '/admin/policies', live)).status, 200);
  t.equal((await server.call('POST', '/admin/policies', { name: 'readers-next', shadow: 'readers', rules: [] })).status, 200);
  const answer = await server.call('POST', '/check', { principal: { attributes: { role: 'reader' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' });
  t.equal(answer.body.allowed, true, 'the live policy decides the answer');
  t.same((await server.call('GET', '/admin/shadow')).body.decided, { agree: 0, allow_to_deny: 1, deny_to_allow: 0 }, 'the shadow set, without the live rule, denies');
});

t.test('a promote never loses an edit of the shadow made while it runs: 409, nothing written, and the edit kept (both kinds of shadow)', async (t) => {
  for (const shadowOf of ['readers', true] as const) {
    const dataDir = temporaryDataDir();
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    const other = new EmbeddedStore(dataDir);
    t.teardown(() => other.close());
    const edited = { version: '1.0', name: 'readers-next', description: 'edited meanwhile', shadow: shadowOf, rules: [], default_effect: 'deny' as const };
    // Another process edits the shadow after this one read it, before its promote's transaction.
    const store = interceptedStore(new EmbeddedStore(dataDir), {
      promotePolicy: async (proceed) => {
        await other.replacePolicy(edited, TEST_WRITER);
        return proceed();
      },
    });
    const server = await startServer({ dataDir }, { store });
    t.teardown(server.close);
    t.equal((await server.call('POST', '/admin/policies', { name: 'readers', rules: [{ name: 'read', effect: 'allow', actions: ['read'] }] })).status, 200);
    t.equal((await server.call('POST', '/admin/policies', { name: 'readers-next', shadow: shadowOf, rules: [{ name: 'read', effect: 'allow', actions: ['read'] }] })).status, 200);
    const promoted = await server.call('POST', '/admin/policies/readers-next/promote');
    t.equal(promoted.status, 409, `${String(shadowOf)}: ${JSON.stringify(promoted.body)}`);
    t.match(promoted.body.detail, /was changed while it was being promoted: nothing was promoted; promote it again/);
    t.match((await server.call('GET', '/admin/policies/readers-next')).body, { description: 'edited meanwhile', shadow: shadowOf }, 'the edit is kept, still a shadow');
  }
});

t.test('shadows written as files (--policies) are listed with their file, read by name, and decided beside the live ones', async (t) => {
  const dir = temporaryDataDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'access.yaml'), YAML.stringify([LIVE]));
  writeFileSync(join(dir, 'access-next.json'), JSON.stringify(NEXT));
  const server = await startServer({ policiesDir: dir, evaluation: 'inline' });
  t.teardown(server.close);
  const report = (await server.call('GET', '/admin/shadow')).body;
  t.same(report.policies, [{ name: 'access-next', in_place_of: 'access', source: 'file access-next.json' }], 'listed, with the file it is written in');
  const read = await server.call('GET', '/admin/policies/access-next');
  t.equal(read.status, 200, 'read by its name');
  t.equal(read.body.shadow, 'access');
  t.same((await server.call('GET', '/admin/policies')).body.map((policy: Policy) => policy.name).sort(), ['access', 'access-next'], 'listed with the policies, as a written shadow is');
  t.equal((await server.call('POST', '/check', check('guest'))).body.allowed, false, 'the live policies decide');
  t.same((await server.call('GET', '/admin/shadow')).body.decided, { agree: 0, allow_to_deny: 0, deny_to_allow: 1 }, 'and the shadow beside them');
});
