import t from 'tap';
import { compile, evaluate, explain, plan, policyWarnings } from '../../src/engine/index.js';
import type { Condition, ConditionItem, Policy } from '../../src/schemas/policy.js';
import { entity, policy, request, rule } from './helpers.js';

// A condition that cannot be evaluated on the value it reads (a network operator on what is not an
// address, a pattern on what is not a string, a time operator on what is not a date-time) is an
// evaluation error: the deny rule holding it applies, the allow rule holding it does not. A missing
// attribute keeps its own meaning (the condition is false).

/** For each operator that can meet a value it cannot evaluate: the condition, and values of the wrong kind. */
const UNDECIDABLE: [string, Condition, unknown[]][] = [
  ['not_in_cidr', { path: 'attributes.ip', operator: 'not_in_cidr', value: '10.0.0.0/8' }, ['office', '10.1.2.3 ', ['10.1.2.3'], 10, null, true, { ip: '10.1.2.3' }]],
  ['in_cidr', { path: 'attributes.ip', operator: 'in_cidr', value: '10.0.0.0/8' }, ['office', 167837955]],
  ['not_matches', { path: 'attributes.ip', operator: 'not_matches', value: '^10\\.' }, [10, ['10.1'], null, { a: 1 }]],
  ['matches', { path: 'attributes.ip', operator: 'matches', value: '^10\\.' }, [10, ['10.1']]],
  ['before', { path: 'attributes.ip', operator: 'before', value: '2026-01-01T00:00:00Z' }, ['yesterday', 1767225600, '2026-01-01']],
  ['after', { path: 'attributes.ip', operator: 'after', value: '2026-01-01T00:00:00Z' }, ['tomorrow', 1767225600]],
  ['during', { path: 'attributes.ip', operator: 'during', value: { days: ['mon', 'tue', 'wed', 'thu', 'fri'], zone: 'UTC' } }, ['monday', 0]],
  ['within', { path: 'attributes.ip', operator: 'within', value: { last: 'PT1H', of: '2026-01-01T00:00:00Z' } }, ['an hour ago', 3600]],
];

const denyAndAllow = (condition: ConditionItem, others: ConditionItem[] = []): Policy =>
  policy('p', [rule('blocked', { effect: 'deny', principal: [...others, condition] }), rule('everyone', { principal: [{ path: 'attributes.staff', operator: '==', value: true }] })]);

t.test('a deny rule applies to a value its condition cannot evaluate; an allow rule does not; a missing attribute still makes the condition false', async (t) => {
  for (const [operator, condition, values] of UNDECIDABLE) {
    const denying = compile([denyAndAllow(condition)], 1);
    const allowing = compile([policy('p', [rule('only', { principal: [condition] })])], 1);
    for (const value of values) {
      const principal = entity({ staff: true, ip: value });
      t.same(evaluate(denying, request(principal)), { allowed: false, reason: 'Rule blocked denied the action in policy p' }, `${operator} on ${JSON.stringify(value)}: the deny applies`);
      t.equal(evaluate(allowing, request(principal)).allowed, false, `${operator} on ${JSON.stringify(value)}: the allow does not`);
    }
    t.equal(evaluate(denying, request(entity({ staff: true }))).allowed, true, `${operator}: an attribute left out makes the condition false, as settled`);
  }
});

t.test("a deny rule's other conditions still decide: an undecidable condition counts as holding, never more", async (t) => {
  const [, condition] = UNDECIDABLE[0]!;
  const snapshot = compile([denyAndAllow(condition, [{ path: 'attributes.suspended', operator: '==', value: true }])], 1);
  t.equal(evaluate(snapshot, request(entity({ staff: true, suspended: false, ip: 'office' }))).allowed, true, 'not suspended: the deny does not apply, whatever the address');
  t.equal(evaluate(snapshot, request(entity({ staff: true, suspended: true, ip: 'office' }))).allowed, false);
});

t.test('the same condition in an allow and a deny rule is read by each as its effect says (conditions are shared between rules)', async (t) => {
  const [, condition] = UNDECIDABLE[0]!;
  const snapshot = compile([policy('p', [rule('allow-outside', { principal: [condition] })]), policy('q', [rule('deny-outside', { effect: 'deny', principal: [condition] })], 'allow')], 1);
  t.same(evaluate(snapshot, request(entity({ ip: 'office' }))), { allowed: false, reason: 'Rule deny-outside denied the action in policy q' });
  const allowOnly = compile([policy('p', [rule('allow-outside', { principal: [condition] })]), policy('q', [rule('deny-other', { effect: 'deny', principal: [{ ...condition, path: 'attributes.other' }] })], 'allow')], 1);
  t.same(evaluate(allowOnly, request(entity({ ip: 'office' }))), { allowed: false, reason: 'Action denied by default effect' });
});

t.test('groups: in any_of a deny applies on an undecidable alternative; in none_of the reading turns over, so the deny still applies', async (t) => {
  const [, condition] = UNDECIDABLE[0]!;
  const anyOf = compile([denyAndAllow({ any_of: [[condition], [{ path: 'attributes.suspended', operator: '==', value: true }]] })], 1);
  t.equal(evaluate(anyOf, request(entity({ staff: true, ip: 'office' }))).allowed, false, 'any_of');
  const inside: Condition = { path: 'attributes.ip', operator: 'in_cidr', value: '10.0.0.0/8' };
  const noneOf = compile([denyAndAllow({ none_of: [[inside]] })], 1);
  t.equal(evaluate(noneOf, request(entity({ staff: true, ip: 'office' }))).allowed, false, 'none_of: not being shown inside the network, the deny applies');
  t.equal(evaluate(noneOf, request(entity({ staff: true, ip: '10.1.2.3' }))).allowed, true);
  const allowNoneOf = compile([policy('p', [rule('outside', { principal: [{ none_of: [[inside]] }] })])], 1);
  t.equal(evaluate(allowNoneOf, request(entity({ ip: 'office' }))).allowed, false, 'an allow by none_of is not earned by a value none of its alternatives can evaluate');
});

t.test('a value_from that reads a value the operator cannot take is undecidable too', async (t) => {
  const condition: Condition = { path: 'attributes.ip', operator: 'not_in_cidr', value_from: 'resource.attributes.network' };
  const snapshot = compile([denyAndAllow(condition)], 1);
  t.equal(evaluate(snapshot, request(entity({ staff: true, ip: '10.1.2.3' }), entity({ network: 'the office' }))).allowed, false);
  t.equal(evaluate(snapshot, request(entity({ staff: true, ip: '10.1.2.3' }), entity({ network: '10.0.0.0/8' }))).allowed, true);
});

t.test('explain names the undecidable condition and why, on the deny that applied and on the allow that did not', async (t) => {
  const [, condition] = UNDECIDABLE[0]!;
  const snapshot = compile([denyAndAllow(condition)], 1);
  const checked = request(entity({ staff: true, ip: 'office' }));
  const explanation = explain(snapshot, checked, evaluate(snapshot, checked));
  t.match(explanation.policies[0]!.rules[0], { name: 'blocked', matched: true, undecidable: [{ side: 'principal', path: 'attributes.ip', operator: 'not_in_cidr', actual: 'office', why: /"office" is not an IP address/ }] });
  t.match(explanation.decided_by.why, /could not be evaluated/);
  const allowing = compile([policy('p', [rule('only', { principal: [{ path: 'attributes.ip', operator: 'matches', value: '^10' }] })])], 1);
  const numeric = request(entity({ ip: 10 }));
  t.match(explain(allowing, numeric, evaluate(allowing, numeric)).policies[0]!.rules[0]!.failed, { path: 'attributes.ip', actual: 10, undecidable: /not a string/ });
});

t.test('a plan agrees: a deny on an undecidable value of the principal denies everything', async (t) => {
  const [, condition] = UNDECIDABLE[0]!;
  const snapshot = compile([denyAndAllow(condition)], 1);
  t.equal(plan(snapshot, request(entity({ staff: true, ip: 'office' }))).condition, false);
  t.equal(plan(snapshot, request(entity({ staff: true, ip: '10.1.2.3' }))).condition, true);
});

t.test("validate no longer warns that a deny rule's negated operator is escaped by a value of the wrong kind", async (t) => {
  const policies = [denyAndAllow(UNDECIDABLE[0]![1])];
  const report = policyWarnings(policies, [0], (index) => ['body', index]);
  t.same(report.filter((warning) => JSON.stringify(warning).includes('not_in_cidr') && !/leaving|omit/i.test(warning.msg)), []);
});
