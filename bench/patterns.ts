/**
 * `npm run bench:patterns`: what the worst patterns a policy may hold cost a check, against a check
 * decided by an equality condition on the same values (the baseline, measured in the same run). Each
 * worst pattern has nearly MAX_PATTERN_PROGRAM instructions (a counted repetition of a large class,
 * which the engine's automaton handles worst) and is matched against values of random letters as long
 * as it takes (LinearRegExp.longestText), new for every check, as a hostile caller would send them:
 * the first check (the automaton cold) and the median of the next BENCH_CHECKS (default 200); then
 * against values a character longer (undecidable: never matched).
 */
import { compile, evaluate, type DecisionRequest } from '../src/engine/index.js';
import { linearRegExp, MAX_PATTERN_PROGRAM } from '../src/engine/linear-regexp.js';
import type { Condition } from '../src/schemas/policy.js';

const CHECKS = Number(process.env.BENCH_CHECKS ?? 200);
const WORST = [`\\pL{${MAX_PATTERN_PROGRAM - 3}}\\d`, `[a-zé]{${MAX_PATTERN_PROGRAM - 3}}\\d`, `(?i)[a-z]{${MAX_PATTERN_PROGRAM - 3}}\\d`];
const LETTERS = 'abcdefghijklmnopqrstuvwxyzéüöäßçñ';

const randomLetters = (length: number) => Array.from({ length }, () => LETTERS[Math.floor(Math.random() * LETTERS.length)]).join('');
const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Microseconds each of CHECKS + 1 checks by a deny on `condition` takes, each of a new value of `length` characters. */
function microsPerCheck(condition: Condition, length: number): { first: number; median: number } {
  const snapshot = compile([{ version: '1.0', name: 'p', description: null, default_effect: 'allow', rules: [{ name: 'r', effect: 'deny', principal_conditions: [condition], resource_conditions: [], actions: ['read'] }] }], 1);
  const values = Array.from({ length: CHECKS + 1 }, () => randomLetters(length));
  const took = values.map((value) => {
    const request: DecisionRequest = { principal: { uri: undefined, attributes: new Map([['name', value]]) }, resource: { uri: undefined, attributes: new Map() }, action: 'read' };
    const started = performance.now();
    evaluate(snapshot, request);
    return (performance.now() - started) * 1000;
  });
  return { first: took[0]!, median: median(took.slice(1)) };
}

for (const pattern of WORST) {
  const longest = linearRegExp(pattern).longestText;
  const baseline = microsPerCheck({ path: 'attributes.name', operator: '==', value: 'someone' }, longest).median;
  const atBound = microsPerCheck({ path: 'attributes.name', operator: 'not_matches', value: pattern }, longest);
  const pastBound = microsPerCheck({ path: 'attributes.name', operator: 'not_matches', value: pattern }, longest + 1).median;
  console.log(`${pattern}: values of at most ${longest} characters; baseline (== on such a value) ${baseline.toFixed(2)} µs per check`);
  console.log(`  at the longest value: first ${(atBound.first / 1000).toFixed(2)} ms, then a median of ${(atBound.median / 1000).toFixed(2)} ms per check (${(atBound.median / baseline).toFixed(0)} × the baseline)`);
  console.log(`  a character longer (undecidable, not matched): ${pastBound.toFixed(2)} µs per check (${(pastBound / baseline).toFixed(1)} × the baseline)`);
}
