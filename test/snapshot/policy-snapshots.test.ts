import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { EmbeddedStore } from '../../src/store/embedded.js';
import { PolicySnapshots } from '../../src/snapshot/policy-snapshots.js';
import type { Policy } from '../../src/schemas/policy.js';
import { temporaryDataDir } from '../helpers/server.js';
import { InjectedFaults, interceptedStore } from '../helpers/intercepted-store.js';
import { TEST_WRITER } from '../helpers/writer.js';

// The snapshot builder over a real embedded store whose policy loads fail on purpose (the faults
// are injected: SQLite cannot be made to fail a read on demand), while another connection writes.

const policy = (name: string): Policy => ({ version: '1.0', name, description: null, rules: [], default_effect: 'deny' });

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let waited = 0; waited < 10_000; waited += 10) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`gave up waiting for ${what}`);
}

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
  await faults.failed(3);
  await until(() => snapshots.current.revision === 1, 'the retries to reach revision 1');
  t.same(snapshots.policies.map((p) => p.name), ['first']);
  t.equal(snapshots.failing, undefined);
  t.equal(faults.failures, 3, 'it kept trying through every failure');
});
