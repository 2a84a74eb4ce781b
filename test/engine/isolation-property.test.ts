import t from 'tap';
import fc from 'fast-check';
import { compile, derive, evaluate, explain, plan, type DecisionRequest, type Snapshot } from '../../src/engine/index.js';
import { deciderOf } from '../../src/engine/decisions.js';
import type { Condition, ConditionItem, Operator, Policy, SetItem } from '../../src/schemas/policy.js';
import { flatConditions, ownSets } from '../../src/engine/condition-items.js';
import { takesSharedSets } from '../../src/engine/shared-sets.js';
import { reference } from './reference.js';
import { treeHolds } from '../helpers/plan-cases.js';

/**
 * No policy's decisions depend on another policy's condition text. Compiled conditions are shared
 * across policies under keys; for random policy sets whose condition paths are drawn from an
 * alphabet holding the characters keys are made of (U+0000, U+0001, quotes, commas, brackets,
 * backslashes) and paths spliced from other conditions as a joined key would spell them, every
 * snapshot (compiled at once, or derived policy by policy) decides each request as the reference
 * reading of docs/evaluation.md does; each policy's part of the explanation is the one it has compiled
 * alone; and the plan holds for the request's resource exactly when the request is allowed.
 * ISOLATION_RUNS sets the number of cases; ISOLATION_SEED replays a failure.
 */

const RUNS = Number(process.env.ISOLATION_RUNS ?? 500);
const SEED = process.env.ISOLATION_SEED === undefined ? undefined : Number(process.env.ISOLATION_SEED);

/** Attribute keys: plain ones, and ones holding what keys are made of. */
const KEYS = ['a', 'b', 'a\u0000', 'a\u0001b', '\u0000', 'a"', 'a,', '[a]', 'a\\', '"a","=="'];
const VALUES = ['x', 'y', '', 'x\u0000', '"x"', 0, 1, 2];
const OPERATORS: Operator[] = ['==', '==', 'in', '!=', 'not_in', '<', 'gt', 'startswith', 'contains', 'exists', 'not_exists'];
const ACTIONS = ['read', 'write'];

const value = fc.constantFrom(...VALUES);
const keyPath = fc.array(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 2 }).map((keys) => `attributes.${keys.join('.')}`);

function conditionValue(operator: Operator): fc.Arbitrary<unknown> {
  if (operator === 'in' || operator === 'not_in') return fc.array(value, { maxLength: 3 });
  if (operator === '<' || operator === 'gt') return fc.constantFrom(0, 1, 2);
  if (operator === 'startswith') return fc.constantFrom('x', '"', '');
  if (operator === 'exists' || operator === 'not_exists') return fc.constant(undefined);
  return value;
}

const condition: fc.Arbitrary<Condition> = fc
  .record({ path: keyPath, operator: fc.constantFrom(...OPERATORS) })
  .chain(({ path, operator }) => conditionValue(operator).map((chosen): Condition => (chosen === undefined ? { path, operator } : { path, operator, value: chosen })));

/**
 * A condition whose path spells `first` and the path of `second` as keys made by joining would
 * (`<path>\0<operator>\0<value>\1<path>` and the JSON-like `<path>","<operator>",<value>],["<path>`),
 * with `second`'s operator and value: a one-condition list that such keys would confuse with the
 * two-condition list [first, second].
 */
const spliced = (first: Condition, second: Condition, style: 'joined' | 'json'): Condition => {
  const text = JSON.stringify(first.value) ?? '';
  const path =
    style === 'joined'
      ? `${first.path}\u0000${first.operator}\u0000${text}\u0001${second.path}`
      : `${first.path}","${first.operator}",${text}],["${second.path}`;
  return second.value === undefined ? { path, operator: second.operator } : { path, operator: second.operator, value: second.value };
};

const group: fc.Arbitrary<SetItem> = fc
  .tuple(fc.boolean(), fc.array(fc.array(condition, { minLength: 1, maxLength: 2 }), { minLength: 1, maxLength: 2 }))
  .map(([any, alternatives]) => (any ? { any_of: alternatives } : { none_of: alternatives }));

/** Set names: the same in every policy (sets of one name differ between policies), one that is a property of every object. */
const SET_NAMES = ['s1', 's2', 'constructor'];

/** A reference to a set of the rule's policy, or of another (`from`, which may not define it, or not be there). */
const setReference = fc.oneof(
  { arbitrary: fc.constantFrom(...SET_NAMES).map((set) => ({ set })), weight: 3 },
  { arbitrary: fc.tuple(fc.constantFrom(...SET_NAMES), fc.constantFrom('p0', 'p1', 'p2', 'p3')).map(([set, from]) => ({ set, from })), weight: 1 },
);

/** A rule's group: its alternatives of conditions and references to sets (a set's own groups refer to none). */
const ruleGroup: fc.Arbitrary<ConditionItem> = fc
  .tuple(fc.boolean(), fc.array(fc.array(fc.oneof({ arbitrary: condition, weight: 3 }, { arbitrary: setReference, weight: 1 }), { minLength: 1, maxLength: 2 }), { minLength: 1, maxLength: 2 }))
  .map(([any, alternatives]) => (any ? { any_of: alternatives } : { none_of: alternatives }));

/** A condition, or now and then a group of alternatives made of them and of references to sets, or a reference to a set (all interned by their keys). */
const item: fc.Arbitrary<ConditionItem> = fc.oneof(
  { arbitrary: condition, weight: 5 },
  { arbitrary: ruleGroup, weight: 1 },
  { arbitrary: setReference, weight: 1 },
);

/** A policy's condition sets, if any: each of conditions and groups. */
const conditionSets = fc.option(
  fc.dictionary(fc.constantFrom(...SET_NAMES), fc.array(fc.oneof({ arbitrary: condition, weight: 3 }, { arbitrary: group, weight: 1 }), { minLength: 1, maxLength: 2 }), { minKeys: 1 }),
  { nil: undefined },
);

const rule = fc.record({
  name: fc.constantFrom('r0', 'r1', 'r2'),
  description: fc.constant(null),
  effect: fc.constantFrom('allow' as const, 'deny' as const),
  principal_conditions: fc.array(item, { maxLength: 2 }),
  resource_conditions: fc.array(item, { maxLength: 2 }),
  actions: fc.subarray(ACTIONS, { minLength: 1 }),
});

/** Most policies unscoped, some scoped to one or two resource types. */
const scope = fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: fc.constantFrom<string[]>(['doc'], ['img'], ['doc', 'img']), weight: 2 });

/** Resource uris: of the scoped types, of another, without a type, and none. */
const RESOURCE_URIS = [undefined, 'doc:1', 'img:2', 'txt:3', 'plain', ':x'];

/** Policies p0..pn, some of whose rules get a spliced condition made from another rule's two conditions. */
const policySet: fc.Arbitrary<Policy[]> = fc
  .tuple(
    fc.array(fc.tuple(fc.array(rule, { minLength: 1, maxLength: 3 }), fc.constantFrom('allow' as const, 'deny' as const, 'none' as const), scope, conditionSets), { minLength: 1, maxLength: 4 }),
    fc.array(fc.tuple(fc.nat(), fc.nat(), fc.constantFrom('joined' as const, 'json' as const), fc.boolean()), { maxLength: 3 }),
  )
  .map(([drawn, splices]) => {
    const policies: Policy[] = drawn.map(([rules, defaultEffect, types, sets], index) => ({
      version: '1.0',
      name: `p${index}`,
      description: null,
      ...(types === undefined ? {} : { resource_types: types }),
      ...(sets === undefined ? {} : { condition_sets: sets }),
      rules: rules.map((drawnRule, ruleIndex) => ({ ...drawnRule, name: `r${ruleIndex}` })),
      default_effect: defaultEffect,
    }));
    const allRules = policies.flatMap((policy) => policy.rules);
    for (const [from, into, style, principalSide] of splices) {
      const source = allRules[from % allRules.length]!;
      const side = principalSide ? 'principal_conditions' : 'resource_conditions';
      if (flatConditions(source[side]).length < 2) continue;
      const target = allRules[into % allRules.length]!;
      target[side] = [spliced(flatConditions(source[side])[0]!, flatConditions(source[side])[1]!, style)];
    }
    return policies;
  });

/** An entity holding values at some of the paths the policies test, and at random keys. */
function entityFor(policies: readonly Policy[], side: 'principal_conditions' | 'resource_conditions'): fc.Arbitrary<Map<string, unknown>> {
  const paths = policies.flatMap((policy) => policy.rules.flatMap((each) => flatConditions(each[side], ownSets(policy)).map((tested) => tested.path)));
  const aimed = paths.length === 0 ? fc.constant([]) : fc.array(fc.tuple(fc.constantFrom(...paths), value), { maxLength: 3 });
  return fc.tuple(fc.dictionary(fc.constantFrom(...KEYS), value, { maxKeys: 3 }), aimed).map(([random, atPaths]) => {
    const attributes = new Map<string, unknown>(Object.entries(random));
    for (const [path, leaf] of atPaths) {
      const [first, ...rest] = path.split('.').slice(1) as [string, ...string[]];
      attributes.set(first, rest.reduceRight<unknown>((inner, key) => ({ [key]: inner }), leaf));
    }
    return attributes;
  });
}

const requestsFor = (policies: readonly Policy[]): fc.Arbitrary<DecisionRequest[]> =>
  fc.array(
    fc
      .record({ principal: entityFor(policies, 'principal_conditions'), resource: entityFor(policies, 'resource_conditions'), uri: fc.constantFrom(...RESOURCE_URIS), action: fc.constantFrom(...ACTIONS) })
      .map(({ principal, resource, uri, action }) => ({ principal: { uri: undefined, attributes: principal }, resource: { uri, attributes: resource }, action })),
    { minLength: 1, maxLength: 6 },
  );

const cases = policySet.chain((policies) => fc.record({ policies: fc.constant(policies), requests: requestsFor(policies) }));

/**
 * A snapshot derived from the one before, or where policies share sets (which are never derived:
 * one policy's change changes another's rules) the set so far compiled afresh, as the process does.
 */
function derivedOrCompiled(derived: Snapshot | undefined, policies: readonly Policy[], revision: number, positions: number[]): Snapshot {
  if (derived !== undefined) return derived;
  if (!policies.some(takesSharedSets)) throw new Error('the change could not be derived');
  return compile(policies, revision, positions);
}

/** The policies added one at a time to an empty snapshot, each change derived from the snapshot before. */
function derivedOneByOne(policies: readonly Policy[]): Snapshot {
  let snapshot = compile([], 0);
  policies.forEach((policy, index) => {
    const derived = derive(snapshot, [{ name: policy.name, now: { policy, position: index } }], index + 1);
    const sofar = policies.slice(0, index + 1);
    snapshot = derivedOrCompiled(derived, sofar, index + 1, sofar.map((_, at) => at));
  });
  return snapshot;
}

/** The policies in reverse creation order of compilation: the last ones compiled first, the first ones derived into them. */
function derivedBackwards(policies: readonly Policy[]): Snapshot {
  const half = Math.floor(policies.length / 2);
  let snapshot = compile(policies.slice(half), 1, policies.slice(half).map((_, index) => half + index));
  for (let index = half - 1; index >= 0; index--) {
    const derived = derive(snapshot, [{ name: policies[index]!.name, now: { policy: policies[index]!, position: index } }], snapshot.revision + 1);
    const sofar = policies.slice(index);
    snapshot = derivedOrCompiled(derived, sofar, snapshot.revision + 1, sofar.map((_, at) => index + at));
  }
  return snapshot;
}

/** Whether the rule that decided refers to a set its policy defines. */
const refersToSet = (policies: readonly Policy[], { policy, rule }: { policy: string; rule: string }) => {
  const source = policies.find((each) => each.name === policy)!;
  const decided = source.rules.find((each) => each.name === rule)!;
  return [...decided.principal_conditions, ...decided.resource_conditions].some((item) => 'set' in item && Object.hasOwn(source.condition_sets ?? {}, item.set));
};

/** Whether a rule of `borrower` refers to a set of `lender`. */
const lendsTo = (lender: Policy, borrower: Policy) => JSON.stringify(borrower.rules).includes(`"from":${JSON.stringify(lender.name)}`);

const show = (asked: DecisionRequest) => JSON.stringify({ principal: [...asked.principal.attributes], resource: [asked.resource.uri, ...asked.resource.attributes], action: asked.action });

t.test(`policies compiled together decide as each one's own text says (${RUNS} sets)`, async (t) => {
  let spliceSeen = 0;
  let denials = 0;
  let uncovered = 0;
  let bySets = 0;
  fc.assert(
    fc.property(cases, ({ policies, requests }) => {
      if (policies.some((policy) => policy.rules.some((each) => flatConditions([...each.principal_conditions, ...each.resource_conditions]).some((tested) => tested.path.includes('\u0001') || tested.path.includes('],["'))))) spliceSeen++;
      // Alone: with only the policies whose sets it takes, if any.
      const alone = policies.map((policy) => compile([policy, ...policies.filter((other) => other !== policy && lendsTo(other, policy))], 1));
      const snapshots = { together: compile(policies, 1), 'derived one by one': derivedOneByOne(policies), 'derived backwards': derivedBackwards(policies) };
      for (const asked of requests) {
        const expected = reference(policies, asked);
        if (!expected.decision.allowed) denials++;
        if (expected.decision.reason.startsWith('Action denied by default:')) uncovered++;
        if (expected.decider.kind === 'rule' && refersToSet(policies, expected.decider)) bySets++;
        for (const [how, snapshot] of Object.entries(snapshots)) {
          const decision = evaluate(snapshot, asked);
          if (decision.reason !== expected.decision.reason || JSON.stringify(deciderOf(decision)) !== JSON.stringify(expected.decider)) {
            throw new Error(`${how}: '${decision.reason}', not '${expected.decision.reason}', for ${show(asked)}\npolicies: ${JSON.stringify(policies)}`);
          }
          // Each policy's rules are traced (matched, or the condition that failed) as when it is compiled alone (with the policies it takes sets from).
          const traced = explain(snapshot, asked, decision).policies;
          policies.forEach((policy, index) => {
            const own = explain(alone[index]!, asked, evaluate(alone[index]!, asked)).policies.filter((trace) => trace.name === policy.name);
            const together = traced.filter((trace) => trace.name === policy.name);
            if (JSON.stringify(together) !== JSON.stringify(own)) throw new Error(`${how}: policy ${policy.name} is traced as ${JSON.stringify(together)}, alone as ${JSON.stringify(own)}`);
          });
          const planned = plan(snapshot, { ...asked, resource: { uri: undefined, attributes: new Map() } });
          if (treeHolds(planned.condition, asked.resource) !== decision.allowed) throw new Error(`${how}: the plan ${JSON.stringify(planned.condition)} disagrees for ${show(asked)}`);
        }
      }
    }),
    { numRuns: RUNS, seed: SEED },
  );
  t.ok(spliceSeen > RUNS / 10, `${spliceSeen} sets held a spliced path`);
  t.ok(denials > 0, `${denials} requests denied`);
  t.ok(uncovered > 0, `${uncovered} requests on resources no policy speaks for`);
  t.ok(bySets > 0, `${bySets} requests decided by a rule that refers to a condition set`);
});
