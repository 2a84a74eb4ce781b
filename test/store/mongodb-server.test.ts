import t from 'tap';
import { MongoClient } from 'mongodb';
import { MongoStore } from '../../src/store/mongodb.js';
import { StoreUnavailableError, type StoreChange } from '../../src/store/store.js';
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
    'mongodb: a dropped database reaches the follower, which is told to reload everything',
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

  t.test('mongodb: a dropped database reaches the follower, which is told to reload everything', async (t) => {
    const database = mongo.freshDatabase();
    const writer = await MongoStore.open({ uri: mongo.uri, database });
    const follower = await MongoStore.open({ uri: mongo.uri, database });
    const heard: StoreChange[] = [];
    const { feedPosition } = await follower.loadPolicies();
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
  });
}
