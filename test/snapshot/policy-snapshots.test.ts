import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { EmbeddedStore } from '../../src/store/embedded.js';
import { PolicySnapshots } from '../../src/snapshot/policy-snapshots.js';
import type { Policy } from '../../src/schemas/policy.js';
import { temporaryDataDir } from '../helpers/server.js';
import { InjectedFaults, interceptedStore } from '../helpers/intercepted-store.js';
import { TEST_WRITER } from '../helpers/writer.js';
import { until } from '../helpers/until.js';

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
