/**
 * Differential test: the engine against a direct, unoptimized reading of the combining rules in
 * docs/evaluation.md, over many random policy sets and requests (seeded, so failures reproduce).
 */
import t from 'tap';
import { DEFAULT_CONFIG as LIMITS } from '../../src/config/config.js';
import { compile, deciderOf, evaluate, explain, policyIssues, type Decision, type DecisionRequest, type ResolvedEntity } from '../../src/engine/index.js';
import type { Snapshot } from '../../src/engine/compile.js';
import type { Condition, Operator, Policy, Rule } from '../../src/schemas/policy.js';
import { reference, ruleApplies } from './reference.js';

/** mulberry32: a small seeded generator. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const rand = random(20240601);
const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
const chance = (p: number) => rand() < p;

const ROLES = ['admin', 'user', 'guest'];
const DEPTS = ['it', 'sales'];
const LEVELS = [1, 2, 3];
const ACTIONS = ['read', 'write'];
const URIS = ['u:1', 'u:2'];

/** A value that fits `operator` (a list for in/not_in), drawn from `values`; sometimes of another JSON type. */
function valueFor(operator: Operator, values: readonly unknown[]): unknown {
  if (operator === 'in' || operator === 'not_in') {
    const list = values.filter(() => chance(0.5));
    return chance(0.2) ? [...list, 1, '1', null] : list;
  }
  return pick(values);
}

function randomCondition(): Condition {
  const kind = pick(['role', 'role', 'dept', 'level', 'level', 'tags', 'uri'] as const);
  let path: string;
  let operator: Operator;
  let value: unknown;
  switch (kind) {
    case 'role':
      path = 'attributes.role';
      operator = pick<Operator>(['==', 'equals', '!=', 'in', 'not_in', 'startswith', 'endswith']);
      value = operator === 'startswith' ? pick(ROLES).slice(0, 1) : operator === 'endswith' ? pick(ROLES).slice(-2) : valueFor(operator, ROLES);
      break;
    case 'dept':
      path = 'attributes.dept';
      operator = pick<Operator>(['==', '!=', 'not_equals', 'in']);
      value = valueFor(operator, chance(0.1) ? [1, null] : DEPTS);
      break;
    case 'level':
      path = 'attributes.level';
      operator = pick<Operator>(['==', 'gt', '>', 'gte', 'lt', '<=', 'in', 'not_in']);
      value = valueFor(operator, LEVELS);
      break;
    case 'tags':
      path = chance(0.5) ? 'attributes.tags' : 'attributes.tags.0';
      operator = pick<Operator>(['contains', 'not_contains', '==', 'in']);
      value = valueFor(operator, ['a', 'b']);
      break;
    case 'uri':
      path = 'uri';
      operator = pick<Operator>(['==', '!=', 'in', 'not_in']);
      value = valueFor(operator, URIS);
      break;
  }
  return { path, operator, value };
}

function randomRule(index: number): Rule {
  const conditions = (n: number) => Array.from({ length: Math.floor(rand() * n) }, randomCondition);
  return {
    name: `r${index}`,
    effect: chance(0.3) ? 'deny' : 'allow',
    principal_conditions: conditions(4),
    resource_conditions: conditions(3),
    actions: ACTIONS.filter(() => chance(0.6)).concat(chance(0.1) ? ['read'] : []).concat(chance(0.05) ? ['x'] : []),
  };
}

function randomPolicies(): Policy[] {
  return Array.from({ length: Math.floor(rand() * 5) }, (_, p) => ({
    version: '1.0',
    name: `p${p}`,
    description: null,
    rules: Array.from({ length: Math.floor(rand() * 6) }, (_, r) => randomRule(r)).filter((rule) => rule.actions.length > 0),
    default_effect: chance(0.3) ? 'allow' : 'deny',
  }));
}

function randomEntity(): ResolvedEntity {
  const attributes = new Map<string, unknown>();
  if (chance(0.85)) attributes.set('role', chance(0.1) ? 1 : pick(ROLES));
  if (chance(0.8)) attributes.set('dept', pick(DEPTS));
  if (chance(0.8)) attributes.set('level', chance(0.1) ? String(pick(LEVELS)) : pick(LEVELS));
  if (chance(0.5)) attributes.set('tags', ['a', 'b'].filter(() => chance(0.5)));
  return { uri: chance(0.5) ? pick(URIS) : undefined, attributes };
}

/**
 * Where the explanation of a decision disagrees with the literal reading, if anywhere: every rule
 * of the action must be listed with whether it applies, and the rule named as deciding must be the
 * one the reason names.
 */
function explanationDisagreement(policies: Policy[], snapshot: Snapshot, requests: DecisionRequest[], decisions: Decision[]) {
  for (const [index, request] of requests.entries()) {
    const decision = decisions[index]!;
    const explanation = explain(snapshot, request, decision);
    const expected = policies
      .map((policy) => ({ name: policy.name, rules: policy.rules.filter((rule) => rule.actions.includes(request.action)) }))
      .filter((policy) => policy.rules.length > 0)
      .map((policy) => ({ name: policy.name, rules: policy.rules.map((rule) => ({ name: rule.name, matched: ruleApplies(rule, request) })) }));
    const listed = explanation.policies.map((policy) => ({ name: policy.name, rules: policy.rules.map(({ name, matched }) => ({ name, matched })) }));
    const { kind, rule, policy } = explanation.decided_by;
    const named = kind === 'rule' ? `Rule ${rule} ${decision.allowed ? 'allowed' : 'denied'} the action in policy ${policy}` : decision.reason;
    if (JSON.stringify(listed) !== JSON.stringify(expected) || named !== decision.reason) return { request, decision, explanation, expected };
  }
  return undefined;
}

t.test('the engine agrees with a literal reading of docs/evaluation.md', async (t) => {
  const seen = new Map<string, number>();
  for (let set = 0; set < 600; set++) {
    const policies = randomPolicies();
    const issues = policies.flatMap((policy) => policyIssues(policy, [], LIMITS));
    if (!t.same(issues, [], `policy set ${set} is valid`)) break;
    const snapshot = compile(policies, set);
    const requests: DecisionRequest[] = Array.from({ length: 40 }, () => ({
      principal: randomEntity(),
      resource: randomEntity(),
      action: pick([...ACTIONS, 'other']),
    }));
    const expected = requests.map((request) => reference(policies, request));
    const found = requests.map((request) => evaluate(snapshot, request));
    const foundWithDeciders = found.map((decision) => ({ decision, decider: deciderOf(decision) }));
    if (!t.same(foundWithDeciders, expected, `policy set ${set}: decisions and what gave them`)) {
      t.comment(JSON.stringify(policies));
      break;
    }
    const disagreement = explanationDisagreement(policies, snapshot, requests, found);
    if (!t.equal(disagreement, undefined, `explanations of policy set ${set}`)) {
      t.comment(JSON.stringify(policies));
      break;
    }
    for (const { decision } of expected) {
      const kind = decision.reason.replace(/^Rule \S+ (allowed|denied) the action in policy \S+$/, 'rule $1');
      seen.set(kind, (seen.get(kind) ?? 0) + 1);
    }
  }
  // The random cases exercise every outcome, so the agreement above means something.
  t.same([...seen.keys()].sort(), [
    'Action allowed by default effect',
    'Action denied by default because there are no policies',
    'Action denied by default effect',
    'rule allowed',
    'rule denied',
  ]);
  for (const [kind, count] of seen) t.ok(count >= 100, `${kind}: ${count} cases`);
});
