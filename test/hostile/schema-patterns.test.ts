import t from 'tap';
import { ask, startVerdict } from '../helpers/child.js';
import { scratchDir } from '../helpers/server.js';

// Attribute schema patterns run against the strings any client sends. On a backtracking engine each
// pattern below takes exponential (or, the last, high polynomial) time on a short string that fails
// it: a public /check of a few dozen characters would hold the front thread for hours. They run on a
// linear-time engine, so each is taken, and each hostile check is answered while other checks go on.

/**
 * Each pattern, a string on which a backtracking engine would not finish, and whether the string
 * matches it (`(a|a)*$` matches every string, at its end, but only after trying every way before).
 */
const HOSTILE: [string, string, boolean][] = [
  ['^(\\w|\\d)+$', `${'1'.repeat(48)}!`, false],
  ['^(a|aa)+$', `${'a'.repeat(90)}b`, false],
  ['(a|a)*$', `${'a'.repeat(48)}b`, true],
  ['^(a|b|ab)*c$', `${'ab'.repeat(45)}`, false],
  ['^a*a*a*a*a*a*a*a*b$', 'a'.repeat(4000), false],
  ['^(a+)+$', `${'a'.repeat(48)}b`, false],
];
/** No check may wait this long for its answer, however loaded the machine; a backtracking engine would take hours. */
const ANSWER_BOUND_MS = 20_000;

const schemaOf = (pattern: string) => ({ principal: { attributes: { type: 'object', properties: { code: { type: 'string', pattern } } } } });
const checkWith = (code: string) => ({ principal: { attributes: { code } }, resource: { attributes: { kind: 'doc' } }, action: 'read' });

t.test('patterns a backtracking engine takes exponential time over are taken, and checks against them are answered', async (t) => {
  const verdict = await startVerdict(t, ['--store', 'embedded', '--data-dir', scratchDir(t), '--schema-enforcement', 'reject']);
  for (const [pattern, hostile, matches] of HOSTILE) {
    const written = await ask(verdict.url, 'PUT', '/admin/schemas', schemaOf(pattern));
    t.equal(written.status, 200, `${pattern}: taken (${JSON.stringify(written.body).slice(0, 200)})`);
    const [hostileCheck, other] = await Promise.all([
      ask(verdict.url, 'POST', '/check', checkWith(hostile), {}, ANSWER_BOUND_MS),
      ask(verdict.url, 'POST', '/check', { principal: { attributes: { role: 'x' } }, resource: { attributes: { kind: 'doc' } } }, {}, ANSWER_BOUND_MS),
    ]);
    if (matches) t.equal(hostileCheck.status, 200, `${pattern}: the string that matches it is decided`);
    else t.match(hostileCheck, { status: 400, body: { detail: /breaks the attribute schema/ } }, `${pattern}: the string that fails it is refused under reject`);
    t.equal(other.status, 200, `${pattern}: a check sent beside it is answered`);
  }
});

t.test('a pattern the linear-time engine does not take is a 422 naming it', async (t) => {
  const verdict = await startVerdict(t, ['--store', 'embedded', '--data-dir', scratchDir(t)]);
  for (const pattern of ['^(?=a)b', '(a)\\1', 'x'.repeat(1001)]) {
    const refused = await ask(verdict.url, 'PUT', '/admin/schemas', schemaOf(pattern));
    t.equal(refused.status, 422, `${pattern.slice(0, 20)}: 422`);
    t.match(JSON.stringify(refused.body.detail), /principal\.attributes has the pattern/, `${pattern.slice(0, 20)}: the detail names where`);
  }
});
