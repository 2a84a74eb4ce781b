import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { EmbeddedStore } from '../../src/store/embedded/store.js';
import { PolicySnapshots } from '../../src/snapshot/policy-snapshots.js';
import { BulkPool, type BulkObserver } from '../../src/pool/bulk-pool.js';
import { ClientError } from '../../src/errors.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { bulkLimitsOf } from '../../src/requests/bulk-request.js';
import { temporaryDataDir } from '../helpers/server.js';
import { TEST_WRITER } from '../helpers/writer.js';
import { interceptedStore } from '../helpers/intercepted-store.js';
import type { Policy } from '../../src/schemas/policy.js';
import { DEFAULT_MONGO_FILTER_OPTIONS } from '../../src/engine/index.js';
import { planAnswers } from '../../src/decide/plan-answers.js';

const ALLOW_A_1_TO_GO: Policy = {
  version: '1.0',
  name: 'p',
  description: null,
  default_effect: 'deny',
  rules: [{ name: 'r', effect: 'allow', principal_conditions: [{ path: 'attributes.a', operator: '==', value: 1 }], resource_conditions: [], actions: ['go'] }],
};

/**
 * A pool over a store that `reset()` replaces: loads then read `refilled` in place of `dropped` (as
 * when a database is dropped and filled again). `fill` writes each store's policies before the
 * snapshots first load.
 */
async function poolOverResetStore(t: Test, fill: (dropped: EmbeddedStore, refilled: EmbeddedStore) => Promise<void>) {
  const [before, after] = [temporaryDataDir(), temporaryDataDir()];
  const dropped = new EmbeddedStore(before);
  const refilled = new EmbeddedStore(after);
  let reset = false;
  const store = interceptedStore(dropped, { loadPolicies: (proceed) => (reset ? refilled.loadPolicies() : proceed()) });
  await fill(dropped, refilled);
  const snapshots = await PolicySnapshots.load(store);
  const pool = new BulkPool(snapshots, { workers: 1, limits: bulkLimitsOf(DEFAULT_CONFIG), timeoutMillis: 10_000 });
  t.teardown(async () => {
    snapshots.close();
    await pool.close();
    await dropped.close();
    await refilled.close();
    rmSync(before, { recursive: true, force: true });
    rmSync(after, { recursive: true, force: true });
  });
  const body = `[${JSON.stringify({ principal: { attributes: { a: 1 } }, resource: { attributes: { b: 2 } }, action: 'go' })}]`;
  return { snapshots, pool, body, reset: () => (reset = true) };
}

// The pool on its own, with real worker threads: proves bulks are decided in a worker (the HTTP
// tests in test/http/bulk-pool.test.ts could not tell a worker's answer from the front's fallback).

t.test('a worker decides a bulk at the revision the front holds, and hands back what it cannot decide', async (t) => {
  const dataDir = temporaryDataDir();
  const store = new EmbeddedStore(dataDir);
  const snapshots = await PolicySnapshots.load(store);
  const pool = new BulkPool(snapshots, { workers: 1, limits: bulkLimitsOf({ ...DEFAULT_CONFIG, bulkCheckMaxRequests: 10 }), timeoutMillis: 10_000 });
  t.teardown(async () => {
    await pool.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const item = JSON.stringify({ principal: { attributes: { a: 1 } }, resource: { attributes: { b: 2 } }, action: 'go' });
  const body = `[${item},${item}]`;
  t.equal(
    await pool.decide(body),
    JSON.stringify([
      { allowed: false, reason: 'Action denied by default because there are no policies' },
      { allowed: false, reason: 'Action denied by default because there are no policies' },
    ]),
  );

  await store.createPolicy(ALLOW_A_1_TO_GO, TEST_WRITER);
  await snapshots.refresh();
  // The worker still holds the empty snapshot: it must ask for the new one, never answer from the old.
  t.equal(JSON.parse((await pool.decide(body))!)[1].reason, 'Rule r allowed the action in policy p');

  const naming = JSON.stringify({ principal: { uri: 'user:x' }, resource: { attributes: { b: 2 } } });
  t.equal(await pool.decide(`[${naming}]`), undefined, 'an item naming a uri goes back to the front');
  await t.rejects(pool.decide('[]'), new ClientError(400, 'Empty request list'));
  await t.rejects(pool.decide(`[${Array(11).fill(item).join(',')}]`), new ClientError(400, 'Too many requests. Maximum allowed: 10'));
});

t.test('after a forced reload to a lower revision (the store was reset), workers decide with the new snapshot', async (t) => {
  const allowGo = {
    version: '1.0',
    name: 'p',
    description: null,
    default_effect: 'deny' as const,
    rules: [{ name: 'r', effect: 'allow' as const, principal_conditions: [], resource_conditions: [], actions: ['go'] }],
  };
  const { snapshots, pool, body, reset } = await poolOverResetStore(t, async (dropped) => {
    await dropped.createPolicy(allowGo, TEST_WRITER);
    await dropped.createPolicy({ ...allowGo, name: 'q' }, TEST_WRITER);
  });
  t.equal(JSON.parse((await pool.decide(body))!)[0].allowed, true, 'the worker holds revision 2');
  reset();
  await snapshots.refresh({ force: true });
  t.equal(snapshots.current.revision, 0);
  t.same(JSON.parse((await pool.decide(body))!), [{ allowed: false, reason: 'Action denied by default because there are no policies' }], 'never the dropped policies');
});

t.test("a worker tells the front what decided each bulk and its last denials, for the live view", async (t) => {
  const dataDir = temporaryDataDir();
  const store = new EmbeddedStore(dataDir);
  await store.createPolicy(ALLOW_A_1_TO_GO, TEST_WRITER);
  const snapshots = await PolicySnapshots.load(store);
  const seen: Parameters<BulkObserver>[0][] = [];
  // What the front's recent denials still want this second: two, then none.
  let wanted = 2;
  const pool = new BulkPool(snapshots, { workers: 1, limits: bulkLimitsOf(DEFAULT_CONFIG), timeoutMillis: 10_000, observe: (bulk) => seen.push(bulk), denialsWanted: () => wanted });
  t.teardown(async () => {
    await pool.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const items = [1, 2, 1, 3, 4].map((a) => ({ principal: { attributes: { a } }, resource: { attributes: { b: a } }, action: 'go' }));
  t.ok(await pool.decide(JSON.stringify(items)), 'decided in the worker');
  t.equal(seen.length, 1);
  const { tally, revision } = seen[0]!;
  t.equal(revision, 1);
  t.same([tally.allowed, tally.denied], [2, 3]);
  t.same(tally.deciders, [
    { decider: { kind: 'rule', policy: 'p', rule: 'r', effect: 'allow' }, decisions: 2 },
    { decider: { kind: 'default', effect: 'deny' }, decisions: 3 },
  ]);
  t.same(
    tally.denials.map(({ input, reason }) => [input.principal.attributes.get('a'), input.resource.attributes.get('b'), reason]),
    [
      [3, 3, 'Action denied by default effect'],
      [4, 4, 'Action denied by default effect'],
    ],
    'the last two denials, in order, as sent',
  );
  t.ok(pool.busyMilliseconds > 0, 'the worker time it took is counted');
  wanted = 0;
  t.ok(await pool.decide(JSON.stringify(items)));
  t.same([seen[1]!.tally.denied, seen[1]!.tally.denials.length], [3, 0], 'counted, but none sent back once the front wants none');
});

t.test('a worker a few writes behind is sent the policies they changed and derives its snapshot; further behind, the whole set', async (t) => {
  const dataDir = temporaryDataDir();
  const store = new EmbeddedStore(dataDir);
  await store.createPolicy(ALLOW_A_1_TO_GO, TEST_WRITER);
  const snapshots = await PolicySnapshots.load(store);
  // The real snapshots, with what they answer the pool about changes counted.
  const sent: ('changes' | 'none')[] = [];
  const watched = new Proxy(snapshots, {
    get(target, name, receiver) {
      if (name !== 'changesBetween') return Reflect.get(target, name, receiver);
      return (from: number, to: number, generation: number) => {
        const changes = target.changesBetween(from, to, generation);
        sent.push(changes === undefined ? 'none' : 'changes');
        return changes;
      };
    },
  });
  const pool = new BulkPool(watched, { workers: 1, limits: bulkLimitsOf(DEFAULT_CONFIG), timeoutMillis: 10_000 });
  t.teardown(async () => {
    await pool.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const reasons = async () =>
    (JSON.parse((await pool.decide(JSON.stringify([1, 2].map((a) => ({ principal: { attributes: { a } }, resource: { attributes: { b: 2 } }, action: 'go' })))))!) as { reason: string }[]).map(
      (decision) => decision.reason,
    );
  t.same(await reasons(), ['Rule r allowed the action in policy p', 'Action denied by default effect'], 'the worker loads revision 1 whole');

  await store.replacePolicy({ ...ALLOW_A_1_TO_GO, rules: [{ ...ALLOW_A_1_TO_GO.rules[0]!, principal_conditions: [{ path: 'attributes.a', operator: '==', value: 2 }] }] }, TEST_WRITER);
  await snapshots.refresh();
  await store.createPolicy({ ...ALLOW_A_1_TO_GO, name: 'q', default_effect: 'allow', rules: [] }, TEST_WRITER);
  await snapshots.refresh();
  t.same(await reasons(), ['Action denied by default effect', 'Rule r allowed the action in policy p'], 'two writes later, from the changes');
  t.same(sent, ['changes'], 'sent the changes, not the whole set');

  await store.deletePolicy('p', TEST_WRITER);
  await snapshots.refresh();
  t.same(await reasons(), ['Action allowed by default effect', 'Action allowed by default effect'], 'a deletion too');
  await snapshots.refresh({ force: true });
  await store.createPolicy({ ...ALLOW_A_1_TO_GO, name: 'r', rules: [] }, TEST_WRITER);
  await snapshots.refresh();
  t.same(await reasons(), ['Action denied by default effect', 'Action denied by default effect'], 'after a reload of the whole set, from the whole set');
  t.same(sent, ['changes', 'changes'], 'not even asked for changes: the worker holds another generation');
});

t.test('a worker behind two replacements of one policy, each applied by the front on its own, derives the last', async (t) => {
  const dataDir = temporaryDataDir();
  const store = new EmbeddedStore(dataDir);
  await store.createPolicy(ALLOW_A_1_TO_GO, TEST_WRITER);
  const snapshots = await PolicySnapshots.load(store);
  const pool = new BulkPool(snapshots, { workers: 1, limits: bulkLimitsOf(DEFAULT_CONFIG), timeoutMillis: 10_000 });
  t.teardown(async () => {
    await pool.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const allowing = (a: number): Policy => ({ ...ALLOW_A_1_TO_GO, rules: [{ ...ALLOW_A_1_TO_GO.rules[0]!, principal_conditions: [{ path: 'attributes.a', operator: '==', value: a }] }] });
  const allowedFor = async () =>
    (JSON.parse((await pool.decide(JSON.stringify([1, 2, 3].map((a) => ({ principal: { attributes: { a } }, resource: { attributes: { b: 2 } }, action: 'go' })))))!) as { allowed: boolean }[]).map(
      (decision) => decision.allowed,
    );
  t.same(await allowedFor(), [true, false, false], 'the worker holds revision 1');
  // Two steps on the front, one revision each: the worker, still at 1, is sent both steps' changes at once.
  for (const a of [2, 3]) {
    await store.replacePolicy(allowing(a), TEST_WRITER);
    await snapshots.refresh();
  }
  t.equal(snapshots.current.revision, 3);
  t.same(await allowedFor(), [false, false, true], 'the policy as its last write left it, not as the first did');
});

t.test('after a forced reload to the revision the worker holds, of another history (the store was reset and refilled), workers decide with the new snapshot', async (t) => {
  const { snapshots, pool, body, reset } = await poolOverResetStore(t, async (dropped, refilled) => {
    await dropped.createPolicy(ALLOW_A_1_TO_GO, TEST_WRITER);
    await refilled.createPolicy({ ...ALLOW_A_1_TO_GO, name: 'other', rules: [] }, TEST_WRITER);
  });
  t.equal(JSON.parse((await pool.decide(body))!)[0].allowed, true, 'the worker holds revision 1, with policy p');
  reset();
  await snapshots.refresh({ force: true });
  t.equal(snapshots.current.revision, 1, 'revision 1 again, of the refilled store');
  t.same(JSON.parse((await pool.decide(body))!), [{ allowed: false, reason: 'Action denied by default effect' }], "never the dropped store's policy p");
});

t.test('a worker makes plans at the revision the front holds, refusing what is too long as the front would', async (t) => {
  const dataDir = temporaryDataDir();
  const store = new EmbeddedStore(dataDir);
  const snapshots = await PolicySnapshots.load(store);
  const pool = new BulkPool(snapshots, { workers: 1, limits: bulkLimitsOf(DEFAULT_CONFIG), timeoutMillis: 10_000 });
  t.teardown(async () => {
    await pool.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const settings = { maxPlanSize: 1024, maxAnswerSize: 4096, operatorStyle: 'spec' as const };
  const request = { principal: { uri: undefined, attributes: new Map([['a', 1]]) }, resource: { uri: undefined, attributes: new Map() }, action: 'go' };
  const work = [{ request, layout: DEFAULT_MONGO_FILTER_OPTIONS }];
  t.same(JSON.parse((await pool.plans(work, settings, true))!), { kind: 'always_denied', condition: false, reason: 'Action denied by default because there are no policies', mongodb: { _id: { $in: [] } } });

  await store.createPolicy(ALLOW_A_1_TO_GO, TEST_WRITER);
  await snapshots.refresh();
  const both = [...work, { conflict: 'a conflict' }];
  t.equal(
    await pool.plans(both, settings, false),
    JSON.stringify(planAnswers(snapshots.current, both, settings, true)),
    'the bytes the front would write, at the revision it holds',
  );
  const grants: Policy = {
    ...ALLOW_A_1_TO_GO,
    name: 'grants',
    rules: Array.from({ length: 40 }, (_, index) => ({ ...ALLOW_A_1_TO_GO.rules[0]!, name: `r${index}`, resource_conditions: [{ path: `attributes.x${index}`, operator: '==', value: index }], actions: ['plan'] })),
  };
  await store.createPolicy(grants, TEST_WRITER);
  await snapshots.refresh();
  const tooLong = [{ request: { ...request, action: 'plan' }, layout: DEFAULT_MONGO_FILTER_OPTIONS }];
  await t.rejects(pool.plans(tooLong, settings, true), { message: /^The plan would be longer than 1024 characters/ });
  await t.rejects(pool.plans([...work, ...tooLong], settings, false), { message: /^Item 1: The plan would be longer than 1024 characters/ });
});

t.test('under warn a worker decides a bulk whose items break the attribute schemas and says what each broke; under reject it hands it back', async (t) => {
  const dataDir = temporaryDataDir();
  const store = new EmbeddedStore(dataDir);
  await store.createPolicy(ALLOW_A_1_TO_GO, TEST_WRITER);
  // The schemas travel with the policies, as a server's workers are sent them.
  await store.writeSchemas({ principal: { attributes: { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] } } }, TEST_WRITER);
  const snapshots = await PolicySnapshots.load(store);
  const seen: Parameters<BulkObserver>[0][] = [];
  const pool = (enforcement: 'warn' | 'reject') => new BulkPool(snapshots, { workers: 1, limits: bulkLimitsOf(DEFAULT_CONFIG), timeoutMillis: 10_000, observe: (bulk) => seen.push(bulk), denialsWanted: () => 2, schemaEnforcement: enforcement });
  const [warned, rejecting] = [pool('warn'), pool('reject')];
  t.teardown(async () => {
    await warned.close();
    await rejecting.close();
    snapshots.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const item = (principal: Record<string, unknown>) => ({ principal: { attributes: principal }, resource: { attributes: { b: 2 } }, action: 'go' });
  const body = JSON.stringify([item({ a: 1 }), item({ a: '1' }), item({ c: 1 })]);
  const notAllowed = { allowed: false, reason: 'Action denied by default effect' };
  t.same(JSON.parse((await warned.decide(body))!), [{ allowed: true, reason: 'Rule r allowed the action in policy p' }, notAllowed, notAllowed], 'decided in the worker, as without schemas');
  t.same(seen[0]!.violations, [
    { item: 1, violations: ["principal: attribute 'a' must be integer (type)"] },
    { item: 2, violations: ["principal: attribute 'a' is required (required)"] },
  ]);
  t.same(
    seen[0]!.tally.denials.map(({ violations }) => violations),
    [["principal: attribute 'a' must be integer (type)"], ["principal: attribute 'a' is required (required)"]],
    'the denials kept for the live view carry them',
  );
  const explained = JSON.parse((await warned.decide(body, true))!);
  t.same(explained.map((decision: { explain: { schema_violations?: string[] } }) => decision.explain.schema_violations), [undefined, ...seen[0]!.violations.map(({ violations }) => violations)]);
  const clean = JSON.stringify([item({ a: 1 })]);
  t.ok(await warned.decide(clean));
  t.same(seen.at(-1)!.violations, [], 'a bulk that keeps to them has none');

  t.equal(await rejecting.decide(body), undefined, 'under reject the front decides it, refusing the items as it refuses checks');
  t.ok(await rejecting.decide(clean), 'a bulk that keeps to them is decided in the worker');
});
