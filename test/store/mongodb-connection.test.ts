import t from 'tap';
import { MongoClient, ReadPreference } from 'mongodb';
import { clientOptions, MONGODB_TIMEOUTS, SIDECAR_POOL, topologyRefusal } from '../../src/store/mongodb/connection.js';

// What the MongoDB store decides about a server and a connection string before it uses them,
// checked without a server (none runs here): hello replies as MongoDB 7 sends them, and the
// driver's own parsing of the options (a MongoClient parses them when it is built).

const standalone = {
  isWritablePrimary: true,
  topologyVersion: { processId: '6650f0a2c1d2e3f4a5b6c7d8', counter: 0 },
  maxBsonObjectSize: 16777216,
  maxMessageSizeBytes: 48000000,
  maxWriteBatchSize: 100000,
  localTime: new Date(),
  logicalSessionTimeoutMinutes: 30,
  connectionId: 12,
  minWireVersion: 0,
  maxWireVersion: 21,
  readOnly: false,
  ok: 1,
};
const primary = { ...standalone, hosts: ['db-0:27017'], setName: 'rs0', setVersion: 1, secondary: false, primary: 'db-0:27017', me: 'db-0:27017' };
const secondary = { ...primary, isWritablePrimary: false, secondary: true };
const mongos = { ...standalone, msg: 'isdbgrid' };

t.test('a standalone server is refused in one line saying what to do; replica set members and mongos are accepted', async (t) => {
  const refusal = topologyRefusal(standalone);
  t.match(refusal, /standalone server.*needs a replica set.*--replSet/);
  t.notMatch(refusal, /\n/, 'one line');
  t.equal(topologyRefusal(primary), undefined, 'a primary');
  t.equal(topologyRefusal(secondary), undefined, 'a secondary (the driver finds the primary)');
  t.equal(topologyRefusal(mongos), undefined, 'a mongos');
});

t.test('a connection made directly to one member is refused unless that member is the primary', async (t) => {
  t.equal(topologyRefusal(primary, true), undefined, 'the primary');
  t.match(topologyRefusal(secondary, true), /^the URI connects directly \(directConnection=true\) to db-0:27017, a secondary of replica set rs0, not its primary, so every write would fail: name the replica set instead \(replicaSet=rs0/);
  t.match(topologyRefusal({ ...secondary, secondary: false, arbiterOnly: true }, true), /an arbiter of replica set rs0/);
  t.equal(topologyRefusal(mongos, true), undefined, 'a mongos');
  t.match(topologyRefusal(standalone, true), /standalone server/);
});

t.test('reads go to the primary, writes wait for a majority, and every wait is bounded, whatever the connection string asks', async (t) => {
  const uri = 'mongodb://127.0.0.1:1/?readPreference=secondaryPreferred&w=1&wtimeoutMS=0&readConcernLevel=local&socketTimeoutMS=0&waitQueueTimeoutMS=0';
  const client = new MongoClient(uri, clientOptions(MONGODB_TIMEOUTS, 10_000, uri));
  t.equal(client.readPreference.mode, ReadPreference.PRIMARY, 'a secondary may not hold a write this process acknowledged');
  t.equal(client.writeConcern?.w, 'majority');
  t.equal(client.writeConcern?.wtimeoutMS, MONGODB_TIMEOUTS.majority, 'a majority is waited for a bounded time');
  t.equal(client.readConcern?.level, 'majority');
  t.equal(client.options.socketTimeoutMS, MONGODB_TIMEOUTS.answer, 'an answer is waited for a bounded time');
  t.equal(client.options.waitQueueTimeoutMS, MONGODB_TIMEOUTS.answer, 'a connection is waited for a bounded time');
  t.ok(MONGODB_TIMEOUTS.answer > MONGODB_TIMEOUTS.majority, "MongoDB's own answer to a majority wait comes before the socket gives up");
  await client.close();
});

t.test('a connection pool sized for a sidecar, unless the connection string sizes it', async (t) => {
  const plain = 'mongodb://127.0.0.1:1/?replicaSet=rs0';
  const sized = new MongoClient(plain, clientOptions(MONGODB_TIMEOUTS, 10_000, plain));
  t.equal(sized.options.maxPoolSize, SIDECAR_POOL.maxPoolSize, `at most ${SIDECAR_POOL.maxPoolSize} connections to each member`);
  t.equal(sized.options.maxIdleTimeMS, SIDECAR_POOL.maxIdleTimeMS, 'an idle connection is closed');
  await sized.close();
  const chosen = 'mongodb://127.0.0.1:1/?replicaSet=rs0&maxPoolSize=3&maxIdleTimeMS=5000';
  const own = new MongoClient(chosen, clientOptions(MONGODB_TIMEOUTS, 10_000, chosen));
  t.same([own.options.maxPoolSize, own.options.maxIdleTimeMS], [3, 5000], "the connection string's own sizes win");
  await own.close();
});
