import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { EmbeddedStore } from '../../src/store/embedded/store.js';
import { PolicySnapshots } from '../../src/snapshot/policy-snapshots.js';
import type { Policy } from '../../src/schemas/policy.js';
import { temporaryDataDir } from '../helpers/server.js';
import { InjectedFaults, interceptedStore } from '../helpers/intercepted-store.js';
import { TEST_WRITER } from '../helpers/writer.js';
import { until } from '../helpers/until.js';
import { evaluate } from '../../src/engine/index.js';
import type { LoadedPolicyChanges } from '../../src/store/store.js';
import { entity } from '../engine/helpers.js';

// The snapshot builder over a real embedded store whose policy loads fail on purpose (the faults
// are injected: SQLite cannot be made to fail a read on demand), while another connection writes.

const policy = (name: string): Policy => ({ version: '1.0', name, description: null, rules: [], default_effect: 'deny' });


async function setUp(t: Test) {
  const dataDir = temporaryDataDir();
  const writer = new EmbeddedStore(dataDir);
  const faults = new InjectedFaults();
  const own = new EmbeddedStore(dataDir);
  const snapshots = await PolicySnapshots.load(interceptedStore(own, { loadPolicies: faults.around }));
  t.teardown(async () => {
    snapshots.close();
    await writer.close();
    await own.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { writer, faults, snapshots };
}

t.test('after a rebuild failed once, the next refresh applies every write (injected store fault)', async (t) => {
  const { writer, faults, snapshots } = await setUp(t);
  await writer.createPolicy(policy('first'), TEST_WRITER);
  faults.failing = 1;
  await t.rejects(snapshots.refresh(), /injected store fault/, 'the failed rebuild is reported to its caller');
  t.equal(snapshots.failing?.failures, 1, 'the failure is on record');
  await writer.createPolicy(policy('second'), TEST_WRITER);
  const snapshot = await snapshots.refresh();
  t.equal(snapshot.revision, 2, 'the next refresh reaches the store');
  t.same(snapshots.policies.map((p) => p.name), ['first', 'second']);
  t.equal(snapshots.failing, undefined, 'and the failure is cleared');
});

t.test('after N failed rebuilds, the builder retries on its own and catches up without another write (injected store fault)', async (t) => {
  const { writer, faults, snapshots } = await setUp(t);
  await writer.createPolicy(policy('first'), TEST_WRITER);
  faults.failing = 3;
  const before = Date.now();
  await t.rejects(snapshots.refresh(), /injected store fault/);
  t.ok(snapshots.failing !== undefined && snapshots.failing.since >= before, 'failing since the first failure');
  await until(() => snapshots.current.revision === 1, 'the retries to reach revision 1');
  t.same(snapshots.policies.map((p) => p.name), ['first']);
  t.equal(snapshots.failing, undefined);
  t.equal(faults.failures, 3, 'it kept trying through every failure');
});

t.test('a forced reload replaces the snapshot even when the revision went back (the database was dropped and refilled)', async (t) => {
  const before = temporaryDataDir();
  const after = temporaryDataDir();
  const dropped = new EmbeddedStore(before);
  const refilled = new EmbeddedStore(after);
  let reset = false;
  // One store's history for the first load, another's once it "was dropped": the two stores are real.
  const store = interceptedStore(dropped, {
    loadPolicies: (proceed) => (reset ? refilled.loadPolicies() : proceed()),
    policyRevision: (proceed) => (reset ? refilled.policyRevision() : proceed()),
  });
  t.teardown(async () => {
    await dropped.close();
    await refilled.close();
    rmSync(before, { recursive: true, force: true });
    rmSync(after, { recursive: true, force: true });
  });
  await dropped.createPolicy(policy('old-1'), TEST_WRITER);
  await dropped.createPolicy(policy('old-2'), TEST_WRITER);
  const snapshots = await PolicySnapshots.load(store);
  t.teardown(() => snapshots.close());
  await refilled.createPolicy(policy('new'), TEST_WRITER);
  reset = true;
  t.equal((await snapshots.refresh()).revision, 2, 'an ordinary refresh never goes back');
  const reloaded = await snapshots.refresh({ force: true });
  t.equal(reloaded.revision, 1);
  t.same(snapshots.policies.map((p) => p.name), ['new'], 'the forced reload holds what the store holds now');
});

/** A snapshot builder over `store` (its own connection) that counts the loads of the whole set. */
async function countingWholeLoads(t: Test, dataDir: string) {
  const own = new EmbeddedStore(dataDir);
  let wholeLoads = 0;
  const snapshots = await PolicySnapshots.load(
    interceptedStore(own, {
      loadPolicies: async (proceed) => {
        const loaded = (await proceed()) as LoadedPolicyChanges;
        if (!('changes' in loaded)) wholeLoads++;
        return loaded;
      },
    }),
  );
  t.teardown(async () => {
    snapshots.close();
    await own.close();
  });
  return { snapshots, wholeLoads: () => wholeLoads };
}

const keyedPolicy = (name: string, value: string, description: string | null = null): Policy => ({
  ...policy(name),
  description,
  rules: [{ name: 'r', effect: 'allow', principal_conditions: [], resource_conditions: [{ path: 'attributes.id', operator: '==', value }], actions: ['read'] }],
});

t.test("another connection's writes are applied by the policies they wrote, never by loading the whole set again", async (t) => {
  const dataDir = temporaryDataDir();
  const writer = new EmbeddedStore(dataDir);
  t.teardown(async () => {
    await writer.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  for (let index = 0; index < 20; index++) await writer.createPolicy(keyedPolicy(`p${index}`, `doc-${index}`), TEST_WRITER);
  const { snapshots, wholeLoads } = await countingWholeLoads(t, dataDir);
  t.equal(wholeLoads(), 1, 'the first load');
  await writer.replacePolicy(keyedPolicy('p3', 'doc-x', 'replaced'), TEST_WRITER);
  await writer.deletePolicy('p7', TEST_WRITER);
  t.equal((await snapshots.refresh()).revision, 22, 'two writes at once');
  await writer.createPolicy(keyedPolicy('p20', 'doc-20'), TEST_WRITER);
  await writer.restorePolicy(keyedPolicy('p7', 'doc-7'), 1, TEST_WRITER);
  t.equal((await snapshots.refresh()).revision, 24);
  t.equal(wholeLoads(), 1, 'no load of the whole set since');
  t.same(snapshots.policies, (await writer.loadPolicies()).policies, 'the policies the store holds, in its order');
  const reads = (id: string) => evaluate(snapshots.current, { principal: entity(), resource: entity({ id }), action: 'read' });
  t.equal(reads('doc-x').reason, 'Rule r allowed the action in policy p3', 'the replaced policy decides by its new rule');
  t.equal(reads('doc-3').allowed, false, 'and no longer by its old one');
  t.equal(reads('doc-7').reason, 'Rule r allowed the action in policy p7', 'the restored policy decides again');
  t.equal(reads('doc-20').reason, 'Rule r allowed the action in policy p20');
});

t.test('a builder that fell behind the kept log of policy writes loads the whole set', async (t) => {
  const dataDir = temporaryDataDir();
  const writer = new EmbeddedStore(dataDir, { changesKept: 2 });
  t.teardown(async () => {
    await writer.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { snapshots, wholeLoads } = await countingWholeLoads(t, dataDir);
  for (let index = 0; index < 3; index++) await writer.createPolicy(policy(`p${index}`), TEST_WRITER);
  t.equal((await snapshots.refresh()).revision, 3);
  t.equal(wholeLoads(), 2, 'three writes behind, two kept: the whole set');
  t.same(snapshots.policies.map((p) => p.name), ['p0', 'p1', 'p2']);
  await writer.deletePolicy('p1', TEST_WRITER);
  t.equal((await snapshots.refresh()).revision, 4);
  t.equal(wholeLoads(), 2, 'one write behind: by the change');
  t.same(snapshots.policies.map((p) => p.name), ['p0', 'p2']);
});
