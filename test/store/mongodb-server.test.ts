import t from 'tap';
import { MongoClient } from 'mongodb';
import { MongoStore } from '../../src/store/mongodb/store.js';
import type { StoreChange } from '../../src/store/store.js';
import { StoreUnavailableError } from '../../src/store/errors.js';
import type { Policy } from '../../src/schemas/policy.js';
import { reachableMongo, reachableStandalone, throughLoopbackPort } from '../helpers/mongo.js';
import { tcpProxy } from '../helpers/tcp-proxy.js';
import { until } from '../helpers/until.js';
import { TEST_WRITER } from '../helpers/writer.js';

// The MongoDB store against a real server, for what only a server can show: a standalone refused,
// a change feed that outlives an outage, a dropped database reaching the follower.

const policy = (name: string): Policy => ({ version: '1.0', name, description: null, rules: [], default_effect: 'deny' });


const standalone = await reachableStandalone();
if ('skipped' in standalone) {
  console.log(`# standalone refused SKIPPED: ${standalone.skipped}`);
  t.test('mongodb: a standalone server is refused at start, in one line', { skip: standalone.skipped }, () => undefined);
} else {
  t.test('mongodb: a standalone server is refused at start, in one line', async (t) => {
    t.teardown(standalone.stop);
    const refused = await MongoStore.open({ uri: standalone.uri, database: 'verdict-refused' }).then(
      async (store) => {
        await store.close();
        return undefined;
      },
      (error: unknown) => error,
    );
    t.type(refused, StoreUnavailableError);
    t.match((refused as Error).message, /^cannot use MongoDB: it is a standalone server, and Verdict needs a replica set/);
    t.notMatch((refused as Error).message, /\n/);
  });
}

const mongo = await reachableMongo();
if ('skipped' in mongo) {
  console.log(`# MongoDB feed outages and drops SKIPPED: ${mongo.skipped}`);
  for (const name of [
    'mongodb: a feed outlives an outage longer than server selection, after an earlier event',
    'mongodb: a feed outlives an outage longer than server selection, with no event before it',
    'mongodb: a dropped database reaches the follower, which is told to reload everything and sets the database up again',
    'mongodb: counters dropped under running processes: writes go on, revisions and positions keep growing, the entity count stays exact',
  ]) {
    t.test(name, { skip: mongo.skipped }, () => undefined);
  }
} else {
  t.teardown(mongo.stop);

  for (const earlierEvent of [true, false]) {
    const when = earlierEvent ? 'after an earlier event' : 'with no event before it';
    t.test(`mongodb: a feed outlives an outage longer than server selection, ${when}`, async (t) => {
      const database = mongo.freshDatabase();
      // The follower reaches the server only through a proxy that the test cuts for 2 s, four times
      // its server-selection timeout, while another handle keeps writing directly.
      const proxy = await tcpProxy(throughLoopbackPort(mongo.uri, 0).target);
      const { uri: proxied } = throughLoopbackPort(mongo.uri, proxy.port);
      const writer = await MongoStore.open({ uri: mongo.uri, database });
      const follower = await MongoStore.open({ uri: proxied, database, serverSelectionTimeoutMS: 500 });
      const heard: StoreChange[] = [];
      const { feedPosition } = await follower.loadPolicies();
      const stop = follower.watch((change) => heard.push(change), feedPosition);
      t.teardown(async () => {
        stop();
        proxy.restore();
        await follower.close();
        await writer.close();
        await proxy.close();
        await mongo.dropDatabase(database);
      });
      const policyChanges = () => heard.filter((change) => change.kind === 'policies').length;
      if (earlierEvent) {
        await writer.createPolicy(policy('before'), TEST_WRITER);
        await until(() => policyChanges() === 1, 'the write before the outage');
      }
      proxy.cut();
      await until(() => heard.some((change) => change.kind === 'interrupted'), 'the follower to notice the outage', 20_000);
      await writer.createPolicy(policy('during'), TEST_WRITER);
      await new Promise((resolve) => setTimeout(resolve, 2000));
      proxy.restore();
      await until(() => policyChanges() === (earlierEvent ? 2 : 1), 'the write made during the outage', 20_000);
      t.ok(heard.some((change) => change.kind === 'resumed'), 'resumed');
      t.notOk(heard.some((change) => change.kind === 'everything'), 'nothing was lost, so nothing needs a full reload');
      t.equal((await follower.loadPolicies()).revision, earlierEvent ? 2 : 1);
    });
  }

  t.test('mongodb: a dropped database reaches the follower, which is told to reload everything and sets the database up again', async (t) => {
    const database = mongo.freshDatabase();
    const writer = await MongoStore.open({ uri: mongo.uri, database });
    const follower = await MongoStore.open({ uri: mongo.uri, database });
    const heard: StoreChange[] = [];
    const { feedPosition, epoch: firstEpoch } = await follower.loadPolicies();
    const indexesAtStart = await indexNames(database);
    const stop = follower.watch((change) => heard.push(change), feedPosition);
    t.teardown(async () => {
      stop();
      await follower.close();
      await writer.close();
      await mongo.dropDatabase(database);
    });
    await writer.createPolicy(policy('doomed'), TEST_WRITER);
    await until(() => heard.some((change) => change.kind === 'policies'), 'the first write');
    const client = await MongoClient.connect(mongo.uri);
    await client.db(database).dropDatabase();
    await client.close();
    await until(() => heard.some((change) => change.kind === 'everything'), 'the drop to be announced');
    // Following goes on after the invalidation: a write to the new, empty database is heard too.
    const before = heard.length;
    await writer.createPolicy(policy('reborn'), TEST_WRITER);
    await until(() => heard.slice(before).some((change) => change.kind === 'policies'), 'a write after the drop');
    t.same((await follower.loadPolicies()).policies.map((p) => p.name), ['reborn']);
    await eventually(async () => JSON.stringify(await indexNames(database)) === JSON.stringify(indexesAtStart), 'the indexes to be made again');
    await eventually(async () => (await follower.loadPolicies()).epoch !== undefined, 'an epoch for the new database');
    t.not((await follower.loadPolicies()).epoch, firstEpoch, 'another epoch than the dropped database had');
  });

  t.test('mongodb: counters dropped under running processes: writes go on, revisions and positions keep growing, the entity count stays exact', async (t) => {
    const database = mongo.freshDatabase();
    const writer = await MongoStore.open({ uri: mongo.uri, database });
    const follower = await MongoStore.open({ uri: mongo.uri, database });
    const heard: StoreChange[] = [];
    const stop = follower.watch((change) => heard.push(change), (await follower.loadPolicies()).feedPosition);
    t.teardown(async () => {
      stop();
      await follower.close();
      await writer.close();
      await mongo.dropDatabase(database);
    });
    for (const name of ['a', 'b', 'c']) await writer.createPolicy(policy(name), TEST_WRITER);
    for (const uri of ['user:1', 'user:2']) await writer.createEntity({ uri, type: null, attributes: [], registered_at: '2026-01-01T00:00:00.000Z' }, TEST_WRITER);
    const { revision, epoch } = await follower.loadPolicies();
    const client = await MongoClient.connect(mongo.uri);
    await client.db(database).collection('counters').drop();
    await client.close();
    await until(() => heard.some((change) => change.kind === 'everything'), 'the drop to be announced');
    // The writer follows nothing: only its own write can tell it that its counters are behind.
    await writer.createPolicy(policy('after'), TEST_WRITER);
    await writer.createEntity({ uri: 'user:3', type: null, attributes: [], registered_at: '2026-01-01T00:00:00.000Z' }, TEST_WRITER);
    const loaded = await follower.loadPolicies();
    t.equal(loaded.revision, revision + 1, 'the next revision, none handed out again');
    t.same(loaded.policies.map((p) => p.name), ['a', 'b', 'c', 'after'], 'the new policy after the others');
    t.equal(await follower.countEntities(), 3);
    t.same((await follower.listAudit({ target: 'policy:after', limit: 5 })).map((record) => 'version' in record && record.version), [1]);
    await eventually(async () => (await follower.loadPolicies()).epoch !== undefined, 'an epoch again');
    t.not((await follower.loadPolicies()).epoch, epoch, 'another epoch: a process that missed the drop reloads everything');
  });
}

/** The names of the indexes of the store's collections. */
async function indexNames(database: string): Promise<string[]> {
  const client = await MongoClient.connect((mongo as { uri: string }).uri);
  try {
    const names: string[] = [];
    for (const collection of ['policies', 'entities', 'audit']) {
      for (const index of await client.db(database).collection(collection).listIndexes().toArray()) names.push(`${collection}.${String(index.name)}`);
    }
    return names.sort();
  } finally {
    await client.close();
  }
}

/** Resolves once `condition()` resolves true, checking every 50 ms; throws after 20 s, naming `what`. */
async function eventually(condition: () => Promise<boolean>, what: string): Promise<void> {
  for (let waited = 0; waited < 20_000; waited += 50) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`gave up waiting for ${what}`);
}
