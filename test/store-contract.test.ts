import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { EmbeddedStore } from '../src/store/embedded.js';
import { MongoStore } from '../src/store/mongodb.js';
import { DuplicateKeyError, type Store, type StoreChange } from '../src/store/store.js';
import type { Policy } from '../src/schemas/policy.js';
import type { Entity } from '../src/schemas/entity.js';
import { temporaryDataDir } from './helpers/server.js';
import { reachableMongo } from './helpers/mongo.js';

/** Two handles on one backing store (two processes' view of it), and how to drop it afterwards. */
interface Backing {
  open(): Promise<Store>;
  drop(): Promise<void>;
}

const policy = (name: string, extra: Partial<Policy> = {}): Policy => ({
  version: '1.0',
  name,
  description: null,
  rules: [{ name: 'r', effect: 'allow', principal_conditions: [], resource_conditions: [], actions: ['read'] }],
  default_effect: 'deny',
  ...extra,
});

const entity = (uri: string, values: Record<string, unknown> = { a: 1 }): Entity => ({
  uri,
  type: 'principal',
  attributes: Object.entries(values).map(([key, value]) => ({ key, value, updated_at: 't1', registered_at: 't0' })),
  registered_at: 't0',
});

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let waited = 0; waited < 10_000; waited += 20) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`gave up waiting for ${what}`);
}

async function refusedAsDuplicate(t: Test, write: Promise<unknown>): Promise<void> {
  await write.then(
    () => t.fail('a duplicate was accepted'),
    (error: unknown) => t.type(error, DuplicateKeyError, 'refused as a duplicate'),
  );
}

/** The contract every store keeps; run on each driver. */
function contract(t: Test, name: string, backing: () => Promise<Backing>): void {
  t.test(`${name}: the store contract`, async (t) => {
    const { open, drop } = await backing();
    const store = await open();
    const other = await open();
    t.teardown(async () => {
      await store.close();
      await other.close();
      await drop();
    });

    const { revision: firstRevision, policies: firstPolicies } = await store.loadPolicies();
    t.same({ revision: firstRevision, policies: firstPolicies }, { revision: 0, policies: [] }, 'starts empty at revision 0');
    await store.createPolicy(policy('first'));
    await store.createPolicy(policy('second', { description: 'two', default_effect: 'allow' }));
    await refusedAsDuplicate(t, store.createPolicy(policy('first')));
    t.equal(await store.policyRevision(), 2, 'a refused duplicate does not move the revision');
    t.same(await store.getPolicy('second'), policy('second', { description: 'two', default_effect: 'allow' }));
    t.equal(await store.getPolicy('absent'), undefined);
    t.equal(await store.replacePolicy(policy('first', { description: 'replaced' })), true);
    t.equal(await store.replacePolicy(policy('absent')), false);
    const loaded = await other.loadPolicies();
    t.same(loaded.policies.map((p) => [p.name, p.description]), [['first', 'replaced'], ['second', 'two']], 'creation order kept by a replace');
    t.equal(loaded.revision, 3);
    t.equal(await store.deletePolicy('first'), true);
    t.equal(await store.deletePolicy('first'), false);
    t.same((await other.loadPolicies()).policies.map((p) => p.name), ['second']);

    const values = { number: 1.5, integer: 7, text: '123', flag: false, nothing: null, list: [1, 'a', [true]], nested: JSON.parse('{"__proto__":{"x":1},"a.b":{"$c":2}}') };
    await store.createEntity(entity('user:all-types', values));
    t.equal(JSON.stringify(await other.getEntity('user:all-types')), JSON.stringify(entity('user:all-types', values)), 'values keep their JSON types');
    await refusedAsDuplicate(t, store.createEntity(entity('user:all-types')));
    for (let index = 0; index < 5; index++) await store.createEntity(entity(`user:${index}`));
    t.equal(await other.countEntities(), 6);
    t.same((await other.listEntities(2, 3)).map((e) => e.uri), ['user:1', 'user:2', 'user:3'], 'registration order, paginated');
    t.same(await other.listEntities(100, 10), []);
    const updated = await store.updateEntity('user:1', (stored) => ({ ...stored, type: 'resource' }));
    t.equal(updated?.type, 'resource');
    t.equal((await other.getEntity('user:1'))?.type, 'resource');
    t.equal(await store.updateEntity('absent', (stored) => stored), undefined);
    t.equal(await store.deleteEntity('user:1'), true);
    t.equal(await store.deleteEntity('user:1'), false);
    t.equal(await other.getEntity('user:1'), undefined);

    // The feed follows from a load's position: a write between the load and the watch is heard too.
    const heard: StoreChange[] = [];
    const { feedPosition } = await other.loadPolicies();
    await store.createPolicy(policy('third'));
    const stop = other.watch((change) => heard.push(change), feedPosition);
    await store.createEntity(entity('user:new'));
    await store.deleteEntity('user:new');
    await until(() => heard.filter((change) => change.kind === 'entity').length >= 2 && heard.some((c) => c.kind === 'policies'), 'the changes');
    stop();
    t.same(
      heard.flatMap((change) => (change.kind === 'entity' ? [change.uri] : [])),
      ['user:new', 'user:new'],
    );
    t.ok(
      heard.every((change) => 'committedAt' in change && typeof change.committedAt === 'number'),
      'every change says when it was committed',
    );
    t.ok(heard.some((change) => change.kind === 'policies'), 'a policy change is announced');
  });
}

contract(t, 'embedded', async () => {
  const dataDir = temporaryDataDir();
  return { open: async () => new EmbeddedStore(dataDir), drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
});

const mongo = await reachableMongo();
if ('skipped' in mongo) {
  console.log(`# MongoDB store contract SKIPPED: ${mongo.skipped}`);
  t.test('mongodb: the store contract', { skip: mongo.skipped }, () => undefined);
} else {
  t.teardown(mongo.stop);
  contract(t, 'mongodb', async () => {
    const database = mongo.freshDatabase();
    return { open: () => MongoStore.open({ uri: mongo.uri, database }), drop: () => mongo.dropDatabase(database) };
  });
}
