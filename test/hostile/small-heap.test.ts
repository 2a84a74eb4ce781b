import t, { type Test } from 'tap';
import { join } from 'node:path';
import { open } from 'node:fs/promises';
import { ask, startVerdict, type Answer, type RunningVerdict } from '../helpers/child.js';
import { scratchDir } from '../helpers/server.js';

// The requests a security review found to exhaust a Verdict's memory or stall it, each sent to a
// real Verdict started with a small heap (as a container caps it): every one must get a 4xx or an
// answer no larger than the answer budget, and the server must still decide checks afterwards.

const HEAP_MB = 128;
/** The default --max-answer-size: what one answer's plans or explanations may hold together. */
const ANSWER_BUDGET = 1024 * 1024;
/** An answer within the budget, with room for what surrounds the plans or explanations. */
const BOUNDED = 2 * ANSWER_BUDGET;

async function smallHeapVerdict(t: Test, args: string[] = []): Promise<RunningVerdict> {
  const dir = scratchDir(t);
  return startVerdict(t, ['--store', 'embedded', '--data-dir', join(dir, 'data'), '--log-level', 'warn', ...args], {
    env: { NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}` },
  });
}

/** The answer, or what went wrong on the connection (a crashed server resets it). */
async function answerOf(server: RunningVerdict, method: string, path: string, body?: unknown): Promise<Answer & { size: number }> {
  const answer = await ask(server.url, method, path, body, {}, 120_000);
  return { ...answer, size: typeof answer.body === 'string' ? answer.body.length : JSON.stringify(answer.body).length };
}

async function stillDeciding(t: Test, server: RunningVerdict): Promise<void> {
  t.equal(server.process.exitCode, null, 'the server is still running');
  t.equal(server.process.signalCode, null, 'and was not killed');
  const check = await ask(server.url, 'POST', '/check', { principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } }, action: 'read' });
  t.equal(check.status, 200, 'it still answers /check');
  t.equal(typeof check.body.allowed, 'boolean');
}

/** A 4xx with a detail, or a 200 within the budget. */
function boundedOrRefused(t: Test, answer: Answer & { size: number }, what: string): void {
  if (answer.status >= 400) {
    t.ok(answer.status < 500, `${what}: refused with a 4xx (${answer.status})`);
    t.ok(typeof answer.body?.detail === 'string' || Array.isArray(answer.body?.detail), `whose detail says why: ${JSON.stringify(answer.body).slice(0, 300)}`);
  } else {
    t.equal(answer.status, 200, what);
    t.ok(answer.size <= BOUNDED, `${what}: ${answer.size} characters, within ${BOUNDED}`);
  }
}

/** One policy of 300 allow rules followed by 30 deny rules: a plan's deny conditions once grew as their product. */
const ALLOWS_THEN_DENIES = {
  name: 'grants-then-denials',
  rules: [
    ...Array.from({ length: 300 }, (_, index) => ({
      name: `grant-${index}`,
      effect: 'allow',
      resource_conditions: [
        { path: 'attributes.owner', operator: '==', value: `user-${index}` },
        { path: 'attributes.kind', operator: '!=', value: `kind-${index}` },
      ],
      actions: ['read'],
    })),
    ...Array.from({ length: 30 }, (_, index) => ({
      name: `denial-${index}`,
      effect: 'deny',
      resource_conditions: [{ path: `attributes.flag${index}`, operator: '==', value: true }],
      actions: ['read'],
    })),
  ],
};

t.test('plans of 300 allow rules followed by 30 deny rules: one /plan and a /plan/bulk of 200 stay bounded', async (t) => {
  const server = await smallHeapVerdict(t);
  t.equal((await ask(server.url, 'POST', '/admin/policies', ALLOWS_THEN_DENIES)).status, 200, 'the policy');
  const question = { principal: { attributes: { team: 'any' } }, action: 'read' };
  const one = await answerOf(server, 'POST', '/plan', question);
  boundedOrRefused(t, one, 'one /plan');
  const bulk = await answerOf(server, 'POST', '/plan/bulk', Array.from({ length: 200 }, () => question));
  boundedOrRefused(t, bulk, 'a /plan/bulk of 200 (a 12 KB request)');
  await stillDeciding(t, server);
});

t.test('/check/bulk?explain=true of a 115 KB body stays bounded', async (t) => {
  const server = await smallHeapVerdict(t);
  const rules = Array.from({ length: 300 }, (_, index) => ({
    name: `rule-with-a-long-name-${index}`,
    effect: 'allow',
    principal_conditions: [{ path: 'attributes.team', operator: '==', value: `team-${index}` }],
    resource_conditions: [{ path: 'attributes.owner', operator: '==', value: `user-${index}` }],
    actions: ['read'],
  }));
  t.equal((await ask(server.url, 'POST', '/admin/policies', { name: 'teams', rules })).status, 200, 'the policy');
  const checks = Array.from({ length: 1000 }, (_, index) => ({ principal: { attributes: { team: `t${index}` } }, resource: { attributes: { owner: 'nobody' } }, action: 'read' }));
  const explained = await answerOf(server, 'POST', '/check/bulk?explain=true', checks);
  boundedOrRefused(t, explained, 'explaining 1000 checks against 300 rules');
  await stillDeciding(t, server);
});
t.test("validate's did-you-mean over two 8,000-character actions", async (t) => {
  const server = await smallHeapVerdict(t);
  const policy = (name: string, action: string) => ({ name, rules: [{ name: 'r', effect: 'allow', actions: [action] }] });
  const stored = await answerOf(server, 'POST', '/admin/policies', policy('one', 'x'.repeat(8000)));
  boundedOrRefused(t, stored, 'storing an 8,000-character action');
  const validated = await answerOf(server, 'POST', '/admin/policies/validate', policy('two', 'y'.repeat(8000)));
  boundedOrRefused(t, validated, 'validating another');
  await stillDeciding(t, server);
});

t.test('explanations of groups and condition sets whose every alternative fails on 28 KB values stay bounded, one at a time and in a bulk', async (t) => {
  const server = await smallHeapVerdict(t);
  const big = (index: number) => `${'x'.repeat(28_000)}${index}`;
  const alternatives = Array.from({ length: 16 }, (_, index) => [{ path: `attributes.a${index}`, operator: '==', value: big(index) }]);
  const policy = {
    name: 'many-alternatives',
    condition_sets: { wide: [{ any_of: alternatives.slice(0, 4) }] },
    rules: [{ name: 'r', effect: 'allow', principal_conditions: [{ any_of: alternatives }], resource_conditions: [{ set: 'wide' }], actions: ['read'] }],
  };
  t.equal((await answerOf(server, 'POST', '/admin/policies', policy)).status, 200, 'a policy just under the body limit');
  const principal = { attributes: Object.fromEntries(alternatives.map((_, index) => [`a${index}`, big(index + 100)])) };
  const check = { principal, resource: { attributes: Object.fromEntries(alternatives.map((_, index) => [`a${index}`, big(index + 200)])) }, action: 'read' };
  const answers = await Promise.all(Array.from({ length: 4 }, () => answerOf(server, 'POST', '/check?explain=true', check)));
  for (const answer of answers) boundedOrRefused(t, answer, 'one explained check');
  // Two that fit in one body: the principal's values alone, which every alternative's failure repeats.
  const lighter = { ...check, resource: { attributes: { kind: 'memo' } } };
  boundedOrRefused(t, await answerOf(server, 'POST', '/check/bulk?explain=true', [lighter, lighter]), 'an explained bulk of two');
  await stillDeciding(t, server);
});

t.test("sets in a group's alternatives, each set failing on a value of 28 KB: explained checks stay bounded or are refused, the server decides on", async (t) => {
  const server = await smallHeapVerdict(t);
  const big = (index: number) => `${'y'.repeat(28_000)}${index}`;
  const sets = Object.fromEntries(Array.from({ length: 16 }, (_, index) => [`s${index}`, [{ path: `attributes.a${index}`, operator: '==', value: big(index) }]]));
  const policy = {
    name: 'sets-in-groups',
    condition_sets: sets,
    rules: [{ name: 'r', effect: 'allow', principal_conditions: [{ any_of: Object.keys(sets).map((set) => [{ set }]) }], actions: ['read'] }],
  };
  t.equal((await answerOf(server, 'POST', '/admin/policies', policy)).status, 200, 'a policy of sixteen large sets in one group');
  const check = { principal: { attributes: Object.fromEntries(Object.keys(sets).map((_, index) => [`a${index}`, big(index + 100)])) }, resource: { uri: 'doc:1' }, action: 'read' };
  const answers = await Promise.all(Array.from({ length: 4 }, () => answerOf(server, 'POST', '/check?explain=true', check)));
  for (const answer of answers) boundedOrRefused(t, answer, 'one explained check, every alternative failing on its set');
  await stillDeciding(t, server);
});

t.test('checks of nearly a megabyte that the shadow policies disagree on: neither the disagreements nor the recent checks keep them', async (t) => {
  const server = await smallHeapVerdict(t);
  const rule = (effect: string) => ({ name: 'r', effect, actions: ['read'] });
  t.equal((await answerOf(server, 'POST', '/admin/policies', { name: 'live', rules: [rule('allow')] })).status, 200);
  t.equal((await answerOf(server, 'POST', '/admin/policies', { name: 'next', shadow: 'live', rules: [rule('deny')] })).status, 200);
  // Fifteen strings of 60,000 characters: about 900 KB, under the body limit, each check disagreed on.
  const heavy = (index: number) => ({ principal: { attributes: Object.fromEntries(Array.from({ length: 15 }, (_, key) => [`k${key}`, `${index}${'x'.repeat(60_000)}`])) }, resource: { uri: 'doc:1' }, action: 'read' });
  for (let index = 0; index < 150; index++) {
    const answer = await answerOf(server, 'POST', '/check', heavy(index));
    if (answer.status !== 200 || answer.body.allowed !== true) t.fail(`check ${index}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
  }
  const shadow = await answerOf(server, 'GET', '/admin/shadow');
  t.equal(shadow.status, 200);
  t.same(shadow.body.decided, { agree: 0, allow_to_deny: 150, deny_to_allow: 0 });
  t.same(shadow.body.disagreements[0].check, { omitted: 'larger than 16384 bytes' });
  t.ok(shadow.size <= BOUNDED, `the shadow report: ${shadow.size} characters`);
  const impact = await answerOf(server, 'POST', '/admin/policies/impact', { delete: ['live'] });
  t.match(impact.body, { replayed: 0, recent_checks: { skipped_for_size: 150 } }, 'none kept for impact previews either');
  await stillDeciding(t, server);
});

t.test('an impact preview replaying a decision log of 64 MB, its lines of 60 KB to 2 MB: read to a bound, nothing kept whole', async (t) => {
  const log = join(scratchDir(t), 'decisions.ndjson');
  // Lines the server would not write: too long to replay, or not decisions at all; a few real ones last.
  const filler = Buffer.from(`{"time":"2026-01-01T00:00:00Z","padding":"${'x'.repeat(2 * 1024 * 1024)}"}\n`);
  const medium = Buffer.from(`${'y'.repeat(60 * 1024)}\n`);
  const file = await open(log, 'w');
  for (let index = 0; index < 20; index++) await file.write(filler);
  for (let index = 0; index < 400; index++) await file.write(medium);
  await file.close();
  const server = await smallHeapVerdict(t, ['--decision-log', log]);
  t.equal((await answerOf(server, 'POST', '/admin/policies', { name: 'live', rules: [{ name: 'r', effect: 'allow', actions: ['read'] }] })).status, 200);
  for (let index = 0; index < 5; index++) await answerOf(server, 'POST', '/check', { principal: { attributes: { a: index } }, resource: { uri: 'doc:1' }, action: 'read' });
  await new Promise((resolve) => setTimeout(resolve, 500));
  const impact = await answerOf(server, 'POST', '/admin/policies/impact', { delete: ['live'], source: 'decision_log', limit: 100_000 });
  t.equal(impact.status, 200, JSON.stringify(impact.body).slice(0, 300));
  t.match(impact.body, { replayed: 5, changed: { allow_to_deny: 5 }, decision_log: { cut: /only the newest 16 MiB/ } });
  t.ok(impact.body.decision_log.skipped.unreadable >= 200, `${impact.body.decision_log.skipped.unreadable} lines not replayed`);
  t.ok(impact.size <= BOUNDED, `the answer: ${impact.size} characters`);
  await stillDeciding(t, server);
});

t.test('short patterns that compile to huge programs: a write, a validation and an impact preview of them are refused, naming the bound, while /health answers', async (t) => {
  const server = await smallHeapVerdict(t);
  const hostile = '(?:ab|cd){1000}';
  const policy = (name: string, copies: number) => ({
    name,
    rules: Array.from({ length: copies }, (_, index) => ({ name: `r${index}`, effect: 'deny', resource_conditions: [{ path: 'attributes.path', operator: 'matches', value: hostile.repeat(66) }], actions: ['read'] })),
  });
  const [stored, validated, previewed, health] = await Promise.all([
    answerOf(server, 'POST', '/admin/policies', policy('one', 6)),
    answerOf(server, 'POST', '/admin/policies/validate', policy('two', 6)),
    answerOf(server, 'POST', '/admin/policies/impact', { policies: [policy('three', 2)] }),
    answerOf(server, 'GET', '/health'),
  ]);
  for (const [what, answer] of [['stored', stored], ['validated', validated], ['previewed', previewed]] as const) {
    t.equal(answer.status, 422, `${what}: ${JSON.stringify(answer.body).slice(0, 300)}`);
    t.match(JSON.stringify(answer.body), /program of about \d+ instructions/, `${what}: the detail names the bound`);
  }
  t.equal(health.status, 200, '/health answered beside them');
  await stillDeciding(t, server);
});

t.test('a 1 MB bulk of 65,536-character values against the largest pattern allowed is answered, each denied by the deny it cannot escape', async (t) => {
  const server = await smallHeapVerdict(t);
  const largest = { name: 'names', default_effect: 'allow', rules: [{ name: 'odd', effect: 'deny', principal_conditions: [{ path: 'attributes.name', operator: 'not_matches', value: '\\pL{250}\\d' }], actions: ['read'] }] };
  t.equal((await answerOf(server, 'POST', '/admin/policies', largest)).status, 200);
  const checks = Array.from({ length: 7 }, () => ({ principal: { attributes: { name: 'é'.repeat(65_536) } }, resource: { attributes: { kind: 'doc' } }, action: 'read' }));
  const [bulk, check] = await Promise.all([answerOf(server, 'POST', '/check/bulk', checks), answerOf(server, 'POST', '/check', { principal: { attributes: { name: 'ada7' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' })]);
  t.equal(bulk.status, 200, JSON.stringify(bulk.body).slice(0, 300));
  t.ok(Array.isArray(bulk.body) && bulk.body.every((answer: { allowed: boolean }) => answer.allowed === false), 'every value too long to match is denied by the deny on it');
  t.equal(check.status, 200, 'a check sent beside it is answered');
  await stillDeciding(t, server);
});

t.test('two hundred denied checks of 900 KB each (the live view keeps the last 200 denials): none is held whole, and the server goes on deciding', async (t) => {
  const server = await smallHeapVerdict(t);
  // Fifteen values of 60,000 characters (a value may have 65,536): 900 KB, within the 1 MiB body limit.
  const notes = Object.fromEntries(Array.from({ length: 15 }, (_, index) => [`note${index}`, String.fromCharCode(97 + index).repeat(60_000)]));
  const large = { principal: { attributes: notes }, resource: { attributes: { kind: 'doc' } }, action: 'read' };
  for (let sent = 0; sent < 200; sent++) {
    const answer = await answerOf(server, 'POST', '/check', large);
    if (answer.status !== 200) {
      t.fail(`check ${sent + 1}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
      break;
    }
  }
  const denials = await answerOf(server, 'GET', '/admin/live');
  t.equal(denials.status, 200);
  t.same(denials.body.recent_denials.denials, [], 'none of them kept: each larger than a denial may hold');
  await stillDeciding(t, server);
});
