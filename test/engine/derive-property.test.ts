import t from 'tap';
import fc from 'fast-check';
import { compile, derive, evaluate, explain, plan, type ChangedPolicy, type DecisionRequest, type Snapshot } from '../../src/engine/index.js';
import { deciderOf } from '../../src/engine/decisions.js';
import { lendersTo } from '../../src/engine/shared-sets.js';
import type { Condition, ConditionItem, Operator, Policy } from '../../src/schemas/policy.js';

/**
 * A snapshot derived change by change decides exactly as the whole set compiled afresh: for random
 * histories of creates, replaces, deletes and restores (applied one at a time, as the writing process
 * does, or several at once, as a process following the store does), every evaluate, explain and plan
 * on random requests agrees with `compile()` of the policies the history leaves, and the snapshot
 * each change was derived from still decides as before (it may be in use). DERIVE_RUNS sets the
 * number of histories; DERIVE_SEED replays a failure.
 */

const RUNS = Number(process.env.DERIVE_RUNS ?? 300);
const SEED = process.env.DERIVE_SEED === undefined ? undefined : Number(process.env.DERIVE_SEED);

const NAMES = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5'];
const ACTIONS = ['read', 'write', 'delete'];
const VALUES = ['a', 'b', 'c', '10.1.2.3', 0, 1, 2];
/** Equality first (it decides where rules are filed), then the other kinds of operator. */
const OPERATORS: Operator[] = ['==', '==', 'equals', 'in', 'in', '!=', 'not_in', 'gt', 'lte', 'startswith', 'exists', 'not_exists', 'matches', 'in_cidr'];

const value = fc.constantFrom(...VALUES);
const conditionOn = (paths: string[]): fc.Arbitrary<Condition> =>
  fc
    .record({ path: fc.constantFrom(...paths), operator: fc.constantFrom(...OPERATORS) })
    .chain(({ path, operator }): fc.Arbitrary<Condition> => {
      if (operator === 'in' || operator === 'not_in') return fc.array(value, { maxLength: 3 }).map((values): Condition => ({ path, operator, value: values }));
      if (operator === 'gt' || operator === 'lte') return fc.constantFrom(0, 1, 2).map((number): Condition => ({ path, operator, value: number }));
      if (operator === 'startswith') return fc.constantFrom('a', 'b').map((prefix): Condition => ({ path, operator, value: prefix }));
      if (operator === 'matches') return fc.constantFrom('^a', 'b|c').map((pattern): Condition => ({ path, operator, value: pattern }));
      if (operator === 'in_cidr') return fc.constantFrom<unknown>('10.0.0.0/8', ['192.0.2.0/24']).map((ranges): Condition => ({ path, operator, value: ranges }));
      if (operator === 'exists' || operator === 'not_exists') return fc.constant<Condition>({ path, operator });
      return value.map((chosen): Condition => ({ path, operator, value: chosen }));
    });

/** Now and then a reference to set `s` of a policy (which may not define it, or not be there): sets shared by policies. */
const principalItem: fc.Arbitrary<ConditionItem> = fc.oneof(
  { arbitrary: conditionOn(['attributes.role', 'attributes.level']), weight: 16 },
  { arbitrary: fc.constantFrom(...NAMES).map((from): ConditionItem => ({ set: 's', from })), weight: 1 },
  { arbitrary: fc.constantFrom(...NAMES).map((from): ConditionItem => ({ none_of: [[{ set: 's', from }]] })), weight: 1 },
);

const policyNamed = (name: string): fc.Arbitrary<Policy> =>
  fc.record({
    version: fc.constant('1.0'),
    name: fc.constant(name),
    description: fc.constant(null),
    default_effect: fc.constantFrom('allow' as const, 'deny' as const, 'none' as const),
    condition_sets: fc.option(fc.record({ s: fc.array(conditionOn(['attributes.role', 'attributes.level']), { minLength: 1, maxLength: 2 }) }), { nil: undefined }),
    rules: fc.array(
      fc.record({
        name: fc.constantFrom('r0', 'r1', 'r2'),
        description: fc.constant(null),
        effect: fc.constantFrom('allow' as const, 'deny' as const),
        principal_conditions: fc.array(principalItem, { maxLength: 2 }),
        resource_conditions: fc.array(conditionOn(['attributes.kind', 'attributes.owner', 'uri']), { maxLength: 2 }),
        actions: fc.subarray(ACTIONS, { minLength: 1 }),
      }),
      { maxLength: 4 },
    ),
  });

/** One step of a history: a write to a policy by name (what kind depends on whether it exists), and whether it ends a batch. */
const step = fc.record({
  name: fc.constantFrom(...NAMES),
  kind: fc.constantFrom('write', 'write', 'delete', 'restore'),
  content: fc.constantFrom(...NAMES).chain(policyNamed),
  endsBatch: fc.boolean(),
});

const attributes = (keys: string[]) => fc.dictionary(fc.constantFrom(...keys), value, { maxKeys: keys.length });
const request: fc.Arbitrary<DecisionRequest> = fc
  .record({
    principal: attributes(['role', 'level']),
    resource: attributes(['kind', 'owner']),
    uri: fc.option(fc.constantFrom('a', 'b1', 'c'), { nil: undefined }),
    action: fc.constantFrom(...ACTIONS, 'other'),
  })
  .map(({ principal, resource, uri, action }) => ({
    principal: { uri: undefined, attributes: new Map(Object.entries(principal)) },
    resource: { uri, attributes: new Map(Object.entries(resource)) },
    action,
  }));

/** What a decision says, without the identity of its object: who decided, and the answer. */
function decisionOf(snapshot: Snapshot, asked: DecisionRequest) {
  const decision = evaluate(snapshot, asked);
  const { revision: _, ...explained } = explain(snapshot, asked, decision);
  const planned = plan(snapshot, { ...asked, resource: { uri: undefined, attributes: new Map() } });
  return { allowed: decision.allowed, reason: decision.reason, decider: deciderOf(decision), explained, planned };
}

/** The policies a store would hold, in creation order, with the positions it gave them. */
interface Stored {
  policy: Policy;
  position: number;
}

t.test(`snapshots derived change by change decide as a fresh compile (${RUNS} histories)`, async (t) => {
  let derivedSteps = 0;
  let refusedSteps = 0;
  /** Batches that change a policy whose sets another takes: never derived (that change changes the other's rules). */
  let sharingSteps = 0;
  fc.assert(
    fc.property(fc.array(step, { minLength: 1, maxLength: 30 }), fc.array(request, { minLength: 8, maxLength: 8 }), (steps, requests) => {
      let stored: Stored[] = [];
      let nextPosition = 1;
      const history = new Map<string, Policy[]>();
      let snapshot = compile([], 0, []);
      let pending = new Map<string, ChangedPolicy>();
      let lenders = new Set<string>();
      let revision = 0;
      for (const { name, kind, content, endsBatch } of steps) {
        const at = stored.findIndex((entry) => entry.policy.name === name);
        const versions = history.get(name) ?? [];
        let written: Policy | null;
        if (kind === 'delete') {
          if (at === -1) continue;
          written = null;
        } else if (kind === 'restore') {
          if (versions.length === 0) continue;
          written = versions[content.rules.length % versions.length]!;
        } else {
          written = { ...content, name };
        }
        revision++;
        if (written === null) stored = stored.filter((_, index) => index !== at);
        else if (at !== -1) stored[at] = { policy: written, position: stored[at]!.position };
        else stored.push({ policy: written, position: nextPosition++ });
        if (written !== null) history.set(name, [...versions, written]);
        const now = stored.find((entry) => entry.policy.name === name);
        pending.set(name, { name, now: now === undefined ? null : { policy: now.policy, position: now.position } });
        if (!endsBatch) continue;

        const previous = snapshot;
        const before = requests.map((asked) => decisionOf(previous, asked));
        const derived = derive(previous, [...pending.values()], revision);
        const batchNames = new Set(pending.keys());
        // Another snapshot derived from the same one (a fork of the lineage) must not disturb either.
        const fork = derived !== undefined && endsBatch && kind === 'restore' ? derive(previous, [...pending.values()], revision) : undefined;
        pending = new Map();
        // A policy whose sets another takes, now or since the last full compile (the lineage forgets none until then).
        for (const lender of [...previous.policies, ...stored.map((entry) => entry.policy)].flatMap(lendersTo)) lenders.add(lender);
        const sharing = [...batchNames].some((changed) => lenders.has(changed));
        if (derived === undefined) lenders = new Set(stored.map((entry) => entry.policy).flatMap(lendersTo));
        if (sharing && derived !== undefined) throw new Error('a change of a policy whose sets another takes was derived');
        if (derived === undefined) {
          if (sharing) sharingSteps++;
          else refusedSteps++;
          snapshot = compile(stored.map((entry) => entry.policy), revision, stored.map((entry) => entry.position));
        } else {
          derivedSteps++;
          snapshot = derived;
        }
        const fresh = compile(stored.map((entry) => entry.policy), revision);
        if (JSON.stringify(snapshot.policies) !== JSON.stringify(fresh.policies)) throw new Error('the policies or their order differ');
        if (snapshot.revision !== revision) throw new Error(`revision ${snapshot.revision}, not ${revision}`);
        for (const asked of requests) {
          const got = decisionOf(snapshot, asked);
          const expected = decisionOf(fresh, asked);
          if (fork !== undefined && JSON.stringify(decisionOf(fork, asked)) !== JSON.stringify(expected)) throw new Error('a fork of the lineage decides otherwise');
          if (JSON.stringify(got) !== JSON.stringify(expected)) {
            throw new Error(`derived and fresh snapshots disagree on ${JSON.stringify({ ...asked, principal: [...asked.principal.attributes], resource: [...asked.resource.attributes], uri: asked.resource.uri })}:\n${JSON.stringify(got)}\n${JSON.stringify(expected)}\npolicies: ${JSON.stringify(stored)}`);
          }
        }
        const after = requests.map((asked) => decisionOf(previous, asked));
        if (JSON.stringify(after) !== JSON.stringify(before)) throw new Error('deriving a snapshot changed the one it was derived from');
      }
    }),
    { numRuns: RUNS, seed: SEED },
  );
  t.ok(derivedSteps > RUNS / 2, `most batches were derived (${derivedSteps}), not refused (${refusedSteps}), or compiled afresh where policies share sets (${sharingSteps})`);
  t.ok(sharingSteps > 0, 'some histories share sets between policies');
  t.equal(refusedSteps, 0, 'no change the store can make is refused where no policy takes sets of another');
});
