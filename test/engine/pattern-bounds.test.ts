import t from 'tap';
import { RE2JS } from 're2js';
import { compile, evaluate } from '../../src/engine/index.js';
import { OPERATOR_DEFINITIONS } from '../../src/engine/operators/index.js';
import { linearRegExp, MAX_MATCH_WORK, MAX_PATTERN_PROGRAM } from '../../src/engine/linear-regexp.js';
import { estimatedProgramSize } from '../../src/engine/pattern-size.js';
import { entity, policy, request, rule } from './helpers.js';

// A pattern is bounded by the program it compiles to (counted repetitions multiplied out), not only
// by its length, and one match by the work it may take: a short pattern that compiles to thousands of
// instructions is refused before it is compiled, and a value too long for its pattern cannot be
// matched (an evaluation error: a deny on it applies, an allow does not).

t.test('patterns whose programs are too large are refused, naming the bound; the estimate is never below the program compiled', async (t) => {
  const { checkValue } = OPERATOR_DEFINITIONS.matches;
  for (const pattern of ['(?:ab|cd){1000}', '(?:ab|cd){1000}'.repeat(66), '\\pL{1000}', '[a-z]{300}', '((a{10}){10}){10}']) {
    t.match(checkValue(pattern), new RegExp(`program of about \\d+ instructions .*more than the ${MAX_PATTERN_PROGRAM} allowed`), pattern.slice(0, 40));
  }
  for (const pattern of ['^/projects/[a-z0-9-]+/reports/', '\\pL{100}', '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$', '(?i)^(admin|ops)-\\d{1,4}$']) {
    t.equal(checkValue(pattern), undefined, `${pattern} is taken`);
  }
  const samples = ['^/projects/[a-z0-9-]+/reports/', '\\pL{100}', '(?:ab|cd){10}', '(a|b|c)*d', 'x{2,5}', 'x{3,}', '(?P<n>a+)(b|c){2}', '\\Qa.b\\E+', '[]a]{3}', '[[:alpha:]]{4}', '\\x{41}{3}', '(.*a){20}x', 'a|b|c|d', '\\d{1,3}(\\.\\d{1,3}){3}', '(?s).{50}', '(?i:ab){7}'];
  for (const pattern of samples) t.ok(estimatedProgramSize(pattern, Infinity) >= RE2JS.compile(pattern).programSize(), `${pattern}: estimated at least as large as compiled`);
});

t.test('a pattern is compiled once, however often it is checked and built', async (t) => {
  t.equal(linearRegExp('^once-[0-9]+$'), linearRegExp('^once-[0-9]+$'));
});

t.test('a value longer than its pattern can be matched against is undecidable: a deny on it applies, an allow does not', async (t) => {
  const pattern = '\\pL{100}\\d';
  const longest = linearRegExp(pattern).longestText;
  t.equal(longest, Math.floor(MAX_MATCH_WORK / RE2JS.compile(pattern).programSize()));
  const condition = { path: 'attributes.name', operator: 'not_matches' as const, value: pattern };
  const denying = compile([policy('p', [rule('odd-names', { effect: 'deny', principal: [condition] }), rule('everyone', {})])], 1);
  const allowing = compile([policy('p', [rule('plain-names', { principal: [{ ...condition, operator: 'matches' as const }] })])], 1);
  const long = 'é'.repeat(65_536);
  t.equal(evaluate(denying, request(entity({ name: long }))).allowed, false, 'a 65,536-character value: the deny applies');
  t.equal(evaluate(allowing, request(entity({ name: `${long}7` }))).allowed, false, 'and an allow on it does not');
  t.equal(evaluate(denying, request(entity({ name: 'é'.repeat(longest) }))).allowed, false, 'at the bound it is matched: no match, so the not_matches deny holds');
  t.equal(evaluate(allowing, request(entity({ name: `${'é'.repeat(100)}7` }))).allowed, true, 'a short value is matched');
});
