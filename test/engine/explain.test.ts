import t from 'tap';
import fc from 'fast-check';
import { AnswerBudget, compile, evaluate, explain, ExplanationTooLarge, type DecisionRequest } from '../../src/engine/index.js';
import { planCase, resourceEntity } from '../helpers/plan-cases.js';
import { OPERATORS, PRESENCE_OPERATORS, type Condition, type Operator, type Policy } from '../../src/schemas/policy.js';
import { cond, entity, policy, request, rule } from './helpers.js';

function explained(policies: Policy[], decisionRequest: DecisionRequest) {
  const snapshot = compile(policies, 7);
  const decision = evaluate(snapshot, decisionRequest);
  return { decision, explanation: explain(snapshot, decisionRequest, decision) };
}

type ValueOperator = Exclude<Operator, (typeof PRESENCE_OPERATORS)[number]>;

/** For each operator that takes a value: a condition and an attribute value that fails it, and one that satisfies it. */
const FAILING_AND_HOLDING: Record<ValueOperator, [unknown, unknown, unknown]> = {
  '==': ['it', 'hr', 'it'],
  equals: [3, '3', 3],
  '!=': ['it', 'it', 'hr'],
  not_equals: [true, true, false],
  contains: ['b', ['a'], ['a', 'b']],
  not_contains: ['lap', 'laptop', 'desk'],
  startswith: ['lap', 'desktop', 'laptop'],
  endswith: ['top', 'tablet', 'laptop'],
  gt: [18, 18, 19],
  '>': [18, 17, 19],
  gte: [18, 17, 18],
  '>=': [18, 17.5, 18],
  lt: [18, 18, 17],
  '<': [18, 19, 17],
  lte: [18, 19, 18],
  '<=': [18, 18.5, 18],
  in: [['it', 'hr'], 'sales', 'hr'],
  not_in: [['it', 'hr'], 'it', 'sales'],
  matches: ['^/projects/[a-z0-9-]+/reports/', '/projects/x/notes/1', '/projects/x/reports/1'],
  not_matches: ['^tmp-', 'tmp-1', 'data-1'],
  in_cidr: [['10.16.0.0/12', '2001:db8::/32'], '10.32.0.1', '2001:db8::7'],
  not_in_cidr: ['10.16.0.0/12', '10.16.0.1', '192.0.2.1'],
  before: ['2026-12-31T00:00:00Z', '2027-01-01T00:00:00Z', '2026-12-30T21:00:00-02:00'],
  after: ['2026-12-31T00:00:00Z', '2026-12-31T01:00:00+01:00', '2026-12-31T00:00:00.001Z'],
  during: [{ zone: 'Europe/Berlin', days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '09:00', to: '18:00' }, '2026-11-28T10:00:00Z', '2026-11-27T08:00:00Z'],
  within: [{ last: 'P1D', of: '2026-12-31T00:00:00Z' }, '2026-12-31T00:00:00.001Z', '2026-12-30T00:00:00Z'],
};

t.test('every operator: the failed condition with its expected and actual values, or matched', async (t) => {
  const valueOperators = OPERATORS.filter((operator): operator is ValueOperator => !(PRESENCE_OPERATORS as readonly Operator[]).includes(operator));
  t.same(Object.keys(FAILING_AND_HOLDING).sort(), [...valueOperators].sort(), 'every wire operator that takes a value is covered');
  for (const operator of valueOperators) {
    const [value, failing, holding] = FAILING_AND_HOLDING[operator];
    const policies = [policy('p', [rule('r', { principal: [cond(operator, value)] })])];
    const failed = explained(policies, request(entity({ x: failing }))).explanation;
    t.same(
      failed.policies,
      [{ name: 'p', default_effect: 'deny', rules: [{ name: 'r', effect: 'allow', matched: false, failed: { side: 'principal', path: 'attributes.x', operator, expected: value, actual: failing } }] }],
      `${operator} fails on ${JSON.stringify(failing)}`,
    );
    const held = explained(policies, request(entity({ x: holding }))).explanation;
    t.same(held.policies[0]!.rules, [{ name: 'r', effect: 'allow', matched: true }], `${operator} holds on ${JSON.stringify(holding)}`);
    t.same(held.decided_by, { kind: 'rule', effect: 'allow', why: "Rule r is the first rule of policy p to match, and it allows: no policy's first matching rule denies", policy: 'p', rule: 'r' });
  }
});

t.test('exists fails on a missing attribute, not_exists on a present one: the failure has no expected value', async (t) => {
  const explainedFor = (operator: Operator, principal: ReturnType<typeof entity>) =>
    explained([policy('p', [rule('r', { principal: [{ path: 'attributes.x', operator }] })])], request(principal)).explanation.policies[0]!.rules[0];
  t.same(explainedFor('exists', entity({ y: 1 })), { name: 'r', effect: 'allow', matched: false, failed: { side: 'principal', path: 'attributes.x', operator: 'exists', missing: true } });
  t.same(explainedFor('exists', entity({ x: null })), { name: 'r', effect: 'allow', matched: true });
  t.same(explainedFor('not_exists', entity({ x: null })), { name: 'r', effect: 'allow', matched: false, failed: { side: 'principal', path: 'attributes.x', operator: 'not_exists', actual: null } });
  t.same(explainedFor('not_exists', entity({ y: 1 })), { name: 'r', effect: 'allow', matched: true });
});

t.test('a missing attribute (even for != and not_in), a missing nested step and a missing uri', async (t) => {
  const cases: [Condition, string][] = [
    [cond('!=', 'it', 'attributes.department'), 'attributes.department'],
    [cond('not_in', ['it'], 'attributes.department'), 'attributes.department'],
    [cond('==', 'Paris', 'attributes.address.city'), 'attributes.address.city'],
    [cond('==', 'user:alice', 'uri'), 'uri'],
  ];
  for (const [condition, path] of cases) {
    const { decision, explanation } = explained([policy('p', [rule('r', { resource: [condition] })])], request(entity({ x: 1 }), entity({ address: {} })));
    t.equal(decision.allowed, false);
    t.same(explanation.policies[0]!.rules[0]!.failed, { side: 'resource', path, operator: condition.operator, expected: condition.value, missing: true }, path);
  }
});

t.test('the first failing condition is reported, principal side before resource side', async (t) => {
  const policies = [
    policy('p', [
      rule('r', {
        principal: [cond('==', 'it', 'attributes.department'), cond('gte', 3, 'attributes.level')],
        resource: [cond('==', 'laptop', 'attributes.kind')],
      }),
    ]),
  ];
  const principal = entity({ department: 'it', level: 2 });
  const { explanation } = explained(policies, request(principal, entity({ kind: 'desk' })));
  t.same(explanation.policies[0]!.rules[0]!.failed, { side: 'principal', path: 'attributes.level', operator: 'gte', expected: 3, actual: 2 });
  const onResource = explained(policies, request(entity({ department: 'it', level: 3 }), entity({ kind: 'desk' }))).explanation;
  t.same(onResource.policies[0]!.rules[0]!.failed, { side: 'resource', path: 'attributes.kind', operator: '==', expected: 'laptop', actual: 'desk' });
});

t.test('deny over allow: both rules listed as matched, the deny rule decides', async (t) => {
  const policies = [
    policy('allowing', [rule('readers', { principal: [cond('==', 'reader', 'attributes.role')] })]),
    policy('denying', [rule('suspended', { effect: 'deny', principal: [cond('==', true, 'attributes.suspended')] })]),
  ];
  const { decision, explanation } = explained(policies, request(entity({ role: 'reader', suspended: true })));
  t.same(decision, { allowed: false, reason: 'Rule suspended denied the action in policy denying' });
  t.same(
    explanation.policies.map((p) => p.rules),
    [[{ name: 'readers', effect: 'allow', matched: true }], [{ name: 'suspended', effect: 'deny', matched: true }]],
  );
  t.same(explanation.decided_by, {
    kind: 'rule',
    effect: 'deny',
    why: 'Rule suspended is the first rule of policy denying to match, and it denies: a deny wins over any allow',
    policy: 'denying',
    rule: 'suspended',
  });
});

t.test('within a policy the first matching rule decides; rules of other actions are not listed', async (t) => {
  const policies = [
    policy('p', [
      rule('writers', { actions: ['write'] }),
      rule('first', { principal: [cond('==', 'it', 'attributes.department')] }),
      rule('second', {}),
    ]),
  ];
  const { explanation } = explained(policies, request(entity({ department: 'it' })));
  t.same(explanation.policies[0]!.rules.map((r) => r.name), ['first', 'second']);
  t.equal(explanation.decided_by.rule, 'first');
});

t.test('defaults: deny names the policies with rules for the action and the first whose default is deny, saying when it has none for it; allow; no policies; no rule for the action', async (t) => {
  const unmatched = [rule('r', { principal: [cond('==', 'it', 'attributes.department')] })];
  const hr = request(entity({ department: 'hr' }));
  const deny = explained([policy('open', unmatched, 'allow'), policy('closed', [], 'deny'), policy('shut', [], 'deny')], hr);
  t.same(deny.decision, { allowed: false, reason: 'Action denied by default effect' });
  t.same(deny.explanation.decided_by, {
    kind: 'default',
    effect: 'deny',
    why: "No rule for action 'access' matched in the policies with rules for it (open); so the default effects decide, and a deny default anywhere denies: policy closed is the first with default_effect deny (it has no rule for 'access')",
    policy: 'closed',
  });
  t.same(deny.explanation.policies.map((p) => p.name), ['open'], 'only policies with a rule for the action are listed');
  const covers = explained([policy('open', unmatched, 'deny')], hr).explanation.decided_by.why;
  t.equal(covers, "No rule for action 'access' matched in the policies with rules for it (open); so the default effects decide, and a deny default anywhere denies: policy open is the first with default_effect deny");
  const many = explained(Array.from({ length: 8 }, (_, index) => policy(`p${index}`, unmatched, 'deny')), hr).explanation.decided_by.why;
  t.match(many, /\(p0, p1, p2, p3, p4 and 3 more\)/, 'a long list of policies is cut');
  const allow = explained([policy('open', unmatched, 'allow')], hr).explanation.decided_by;
  t.same(allow, {
    kind: 'default',
    effect: 'allow',
    why: "No rule for action 'access' matched in the policies with rules for it (open); so the default effects decide: none of the policies has default_effect deny, and policy open is the first with default_effect allow",
    policy: 'open',
  });
  // A policy without a default of its own (`none`) leaves the others' defaults as they are; alone, nothing allows.
  const baseline = policy('suspended', [rule('suspended users', { effect: 'deny', principal: [cond('==', true, 'attributes.suspended')] })], 'none');
  const beside = explained([baseline, policy('open', unmatched, 'allow')], hr);
  t.same([beside.decision.allowed, beside.explanation.decided_by.policy], [true, 'open'], "a none default leaves another policy's allow default as it was");
  const alone = explained([baseline], hr);
  t.same(alone.decision, { allowed: false, reason: 'Action denied by default effect' });
  t.same(alone.explanation.decided_by, {
    kind: 'default',
    effect: 'deny',
    why: "No rule for action 'access' matched in the policies with rules for it (suspended); and none of the policies has a default effect of its own (each is default_effect none), so it is denied",
  });
  const none = explained([], hr);
  t.same(none.decision, { allowed: false, reason: 'Action denied by default because there are no policies' });
  t.same(none.explanation.decided_by, { kind: 'no_policies', effect: 'deny', why: 'There are no policies' });
  t.same(none.explanation.policies, []);
  const otherAction = explained([policy('p', unmatched)], request(entity({ department: 'it' }), entity(), 'delete')).explanation;
  t.equal(otherAction.decided_by.why, "No policy has a rule for action 'delete'; so the default effects decide, and a deny default anywhere denies: policy p is the first with default_effect deny (it has no rule for 'delete')");
});

t.test('the attributes decided on, the uri and the revision', async (t) => {
  const { explanation } = explained([], request(entity([['__proto__', 1], ['tags', ['a']]], 'user:alice'), entity({ kind: 'laptop' }), 'read'));
  t.equal(explanation.revision, 7);
  t.equal(explanation.action, 'read');
  t.equal(JSON.stringify(explanation.principal), '{"uri":"user:alice","attributes":{"__proto__":1,"tags":["a"]}}');
  t.same(explanation.resource, { uri: null, attributes: { kind: 'laptop' } });
});

t.test('rules found through the index (equality-keyed) are explained with all their conditions', async (t) => {
  const policies = [
    policy('p', [
      rule('by-kind', { principal: [cond('==', 'it', 'attributes.department')], resource: [cond('==', 'laptop', 'attributes.kind')] }),
    ]),
  ];
  const { explanation } = explained(policies, request(entity({ department: 'sales' }), entity({ kind: 'laptop' })));
  t.same(explanation.policies[0]!.rules[0]!.failed, { side: 'principal', path: 'attributes.department', operator: '==', expected: 'it', actual: 'sales' });
});

t.test('an explanation is held to the budget it is given: never longer once made, refused when it would be', async (t) => {
  const checked = { within: 0, refused: 0 };
  fc.assert(
    fc.property(planCase, fc.integer({ min: 0, max: 200 }), (example, percent) => {
      const snapshot = compile(example.policies, 3);
      const principal = { uri: example.principal.uri, attributes: new Map(Object.entries(example.principal.attributes)) };
      const decisionRequest = { principal, resource: resourceEntity(example.resources[0]!), action: example.action };
      const decision = evaluate(snapshot, decisionRequest);
      const length = JSON.stringify(explain(snapshot, decisionRequest, decision)).length;
      const budget = new AnswerBudget(Math.floor((length * percent) / 100));
      try {
        explain(snapshot, decisionRequest, decision, budget);
      } catch (error) {
        if (!(error instanceof ExplanationTooLarge)) throw error;
        checked.refused++;
        return;
      }
      checked.within++;
      if (length > budget.maxLength) throw new Error(`an explanation of ${length} characters within ${budget.maxLength}`);
    }),
    { numRuns: 1000 },
  );
  t.ok(checked.within > 100 && checked.refused > 100, JSON.stringify(checked));
  const spent = new AnswerBudget(4096);
  const snapshot = compile([policy('p', [rule('r', { principal: [cond('==', 'it')] })])], 1);
  const decisionRequest = request(entity({ x: 'sales' }));
  const decision = evaluate(snapshot, decisionRequest);
  t.throws(() => {
    for (;;) explain(snapshot, decisionRequest, decision, spent);
  }, new ExplanationTooLarge(4096), 'explanations of one answer share its budget');
});
