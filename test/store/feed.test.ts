import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { EmbeddedStore } from '../../src/store/embedded/store.js';
import { MongoStore } from '../../src/store/mongodb/store.js';
import type { Store, StoreChange } from '../../src/store/store.js';
import type { Policy } from '../../src/schemas/policy.js';
import { temporaryDataDir } from '../helpers/server.js';
import { reachableMongo } from '../helpers/mongo.js';
import { until } from '../helpers/until.js';
import { TEST_WRITER } from '../helpers/writer.js';

// Two handles on one store stand for two processes: what one commits, the other's feed reports,
// in commit order. The suite runs on the embedded store and, where one is reachable, on MongoDB.

const policy = (name: string, description: string | null = null): Policy => ({ version: '1.0', name, description, rules: [], default_effect: 'deny' });
const entity = (uri: string) => ({ uri, type: null, attributes: [], registered_at: '2026-01-01T00:00:00.000Z' });


/** Opens handles on one fresh backing store; `drop` removes it. */
interface Backing {
  open(): Promise<Store>;
  drop(): Promise<unknown>;
}

/** A writer and a follower whose feed runs from its first load on. */
async function pair(t: Test, backing: () => Promise<Backing>) {
  const { open, drop } = await backing();
  const writer = await open();
  const follower = await open();
  const heard: StoreChange[] = [];
  const { feedPosition } = await follower.loadPolicies();
  const stop = follower.watch((change) => heard.push(change), feedPosition);
  t.teardown(async () => {
    stop();
    await writer.close();
    await follower.close();
    await drop();
  });
  return { writer, follower, heard, feedPosition };
}

/** A change without its commit time, so that changes compare by what they name. */
const untimed = (change: StoreChange) => ('committedAt' in change ? { ...change, committedAt: undefined } : change);
const entityChange = (uri: string) => ({ kind: 'entity', uri, committedAt: undefined });
const policyChanges = (heard: StoreChange[]) => heard.filter((change) => change.kind === 'policies').length;

function feedSuite(name: string, backing: () => Promise<Backing>): void {
  t.test(`${name}: every write of another connection reaches the feed, in order, with its commit time`, async (t) => {
    const { writer, follower, heard } = await pair(t, backing);
    const since = Date.now() - 1000; // MongoDB's clock may trail this one's by a little
    await writer.createEntity(entity('user:a'), TEST_WRITER);
    await until(() => heard.length === 1, 'the entity registration');
    t.same(heard.map(untimed), [entityChange('user:a')]);
    const committedAt = (heard[0] as { committedAt: number }).committedAt;
    t.ok(committedAt >= since && committedAt <= Date.now() + 1000, 'committed during the test');
    await writer.createPolicy(policy('p'), TEST_WRITER);
    await writer.replacePolicy(policy('p'), TEST_WRITER);
    await writer.updateEntity('user:a', (stored) => stored, TEST_WRITER);
    await writer.deleteEntity('user:a', TEST_WRITER);
    await writer.deletePolicy('p', TEST_WRITER);
    await until(() => heard.some((change) => change.kind === 'policies') && heard.filter((change) => change.kind === 'entity').length >= 3, 'the later writes');
    const entityChanges = heard.filter((change) => change.kind === 'entity');
    t.same(entityChanges.map(untimed), [entityChange('user:a'), entityChange('user:a'), entityChange('user:a')]);
    t.ok(
      heard.every((change) => 'committedAt' in change && change.committedAt! >= since),
      'every change says when it was committed',
    );
    t.equal(await follower.policyRevision(), await writer.policyRevision(), 'both see one revision');
    t.equal(await follower.policyRevision(), 3);
  });

  t.test(`${name}: writes that change nothing are not announced`, async (t) => {
    const { writer, heard } = await pair(t, backing);
    t.equal(await writer.deletePolicy('absent', TEST_WRITER), false);
    t.equal(await writer.replacePolicy(policy('absent'), TEST_WRITER), false);
    await writer.createEntity(entity('user:marker'), TEST_WRITER);
    await until(() => heard.length > 0, 'the marker');
    t.same(heard.map(untimed), [entityChange('user:marker')]);
  });

  t.test(`${name}: a replace that leaves a policy as it was still moves the revision, and the feed says so`, async (t) => {
    const { writer, follower, heard } = await pair(t, backing);
    await writer.createPolicy(policy('same', 'unchanged'), TEST_WRITER);
    await until(() => policyChanges(heard) === 1, 'the creation');
    t.equal(await writer.replacePolicy(policy('same', 'unchanged'), TEST_WRITER), true);
    t.equal(await follower.policyRevision(), 2, 'the revision moved');
    await until(() => policyChanges(heard) === 2, 'the identical replace to be announced');
    t.pass('followers hear it, so they reach revision 2 as well');
  });

  t.test(`${name}: two watchers on one handle; stopping one leaves the other following, undisturbed`, async (t) => {
    const { writer, follower, heard, feedPosition } = await pair(t, backing);
    const stopped: StoreChange[] = [];
    const stopOther = follower.watch((change) => stopped.push(change), feedPosition);
    await writer.createEntity(entity('user:1'), TEST_WRITER);
    await until(() => heard.length === 1 && stopped.length === 1, 'both to hear the first write');
    stopOther();
    await writer.createEntity(entity('user:2'), TEST_WRITER);
    await until(() => heard.length >= 2, 'the second write');
    t.same(heard.map(untimed), [entityChange('user:1'), entityChange('user:2')], 'heard in order, never interrupted');
    t.same(stopped.map(untimed), [entityChange('user:1')], 'the stopped watcher heard nothing more');
  });

  t.test(`${name}: a load during concurrent creates holds exactly the policies of its revision`, async (t) => {
    const { writer, follower } = await pair(t, backing);
    const first = await follower.loadPolicies();
    const creates = Promise.all(Array.from({ length: 30 }, (_, index) => writer.createPolicy(policy(`p-${index}`), TEST_WRITER)));
    let loads = 0;
    let done = false;
    void creates.then(() => (done = true));
    while (!done || loads === 0) {
      const loaded = await follower.loadPolicies();
      t.equal(loaded.policies.length - first.policies.length, loaded.revision - first.revision, `load ${++loads}: ${loaded.revision}`);
    }
    await creates;
    const last = await follower.loadPolicies();
    t.equal(last.revision - first.revision, 30);
    t.same(last.policies.map((p) => p.name).sort(), Array.from({ length: 30 }, (_, index) => `p-${index}`).sort());
  });
}

feedSuite('embedded', async () => {
  const dataDir = temporaryDataDir();
  return { open: async () => new EmbeddedStore(dataDir), drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
});

t.test('embedded: a follower that fell behind the kept history is told to reload everything', async (t) => {
  const dataDir = temporaryDataDir();
  const writer = new EmbeddedStore(dataDir, { changesKept: 3 });
  const follower = new EmbeddedStore(dataDir, { changesKept: 3 });
  const heard: StoreChange[] = [];
  const stop = follower.watch((change) => heard.push(change));
  t.teardown(async () => {
    stop();
    await writer.close();
    await follower.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  // The writes run synchronously inside the calls, all before the follower's next poll: by then
  // only the last three changes are kept, and the follower cannot know what it missed.
  await Promise.all(Array.from({ length: 10 }, (_, index) => writer.createEntity(entity(`user:${index}`), TEST_WRITER)));
  await until(() => heard.length > 0, 'any change');
  t.same(heard, [{ kind: 'everything' }]);
  // After the reload it follows again, change by change.
  await writer.createEntity(entity('user:after'), TEST_WRITER);
  await until(() => heard.length > 1, 'the next change');
  t.same(untimed(heard[1]!), entityChange('user:after'));
});

const mongo = await reachableMongo();
if ('skipped' in mongo) {
  console.log(`# store feed on MongoDB SKIPPED: ${mongo.skipped}`);
  t.test('mongodb: the store feed suite', { skip: mongo.skipped }, () => undefined);
} else {
  t.teardown(mongo.stop);
  feedSuite('mongodb', async () => {
    const database = mongo.freshDatabase();
    return { open: () => MongoStore.open({ uri: mongo.uri, database }), drop: () => mongo.dropDatabase(database) };
  });
}
