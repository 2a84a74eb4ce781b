import t, { type Test } from 'tap';
import { Timestamp, type Document } from 'mongodb';
import { MongoStore } from '../../src/store/mongodb/store.js';
import { StoreUnavailableError } from '../../src/store/errors.js';
import type { Policy } from '../../src/schemas/policy.js';
import { found, primaryHello, scriptedMongo, type Answer, type Received } from '../helpers/scripted-mongo.js';
import { TEST_WRITER } from '../helpers/writer.js';
import { until } from '../helpers/until.js';

// What the MongoDB store does about its own set-up (indexes, the epoch, the counters) and the
// server it is given, checked on a scripted stand-in for a primary (no MongoDB server runs here)
// through the real driver: by what it asks the server and what it answers.

const policy = (name: string): Policy => ({ version: '1.0', name, description: null, rules: [], default_effect: 'deny' });

async function openOn(t: Test, answer: Answer = () => undefined, maintenance = true) {
  const server = await scriptedMongo(answer);
  const store = await MongoStore.open({ uri: server.uri, database: 'verdict', serverSelectionTimeoutMS: 2000, maintenance });
  t.teardown(async () => {
    await store.close();
    await server.close();
  });
  return { server, store };
}

/** The set-up a store asks for: which indexes it creates, and whether it makes sure of the epoch. */
function setUpIn(commands: Received[]) {
  return {
    indexes: commands.filter((command) => command.name === 'createIndexes').map((command) => `${command.body.createIndexes}:${Object.keys((command.body.indexes as Document[])[0]!.key).join(',')}`),
    epoch: commands.some((command) => command.name === 'update' && (command.body.updates as Document[]).some((update) => update.q._id === 'store-epoch')),
  };
}

t.test('a dropped database reaching the follower makes the store set itself up again: indexes and epoch (scripted primary)', async (t) => {
  const { server, store } = await openOn(t);
  // The indexes are built in the background (see test/store/mongodb-maintenance.test.ts).
  await until(() => setUpIn(server.received).indexes.length >= 7, 'the index builds to be asked for');
  const atStart = setUpIn(server.received);
  t.ok(atStart.indexes.length >= 7 && atStart.epoch, 'set up at start');
  const { feedPosition } = await store.loadPolicies();
  const heard: string[] = [];
  const stop = store.watch((change) => heard.push(change.kind), feedPosition);
  t.teardown(stop);
  await until(() => server.received.some((command) => command.name === 'getMore'), 'the stream to be live');
  const before = server.received.length;
  server.sendChanges({ _id: { _data: 'drop' }, operationType: 'dropDatabase', ns: { db: 'verdict' }, clusterTime: new Timestamp({ t: 1, i: 1 }) });
  await until(() => heard.includes('everything'), 'the drop to be announced');
  await until(() => setUpIn(server.received.slice(before)).epoch && setUpIn(server.received.slice(before)).indexes.length >= atStart.indexes.length, 'the set-up to run again', 20_000);
  t.same(setUpIn(server.received.slice(before)), atStart, 'the same indexes and the epoch again');
});

t.test("a policy write whose revision the counters hand out again (they were reset) is not an error: they are raised past what is taken, and it is written (scripted primary)", async (t) => {
  let refused = 0;
  const { server, store } = await openOn(t, (command) => {
    // The revisions kept reach 1: the revision counter, reset, hands out 1 again.
    if (command.name === 'find' && command.body.find === 'policy_changes') return found(command, [{ _id: 1 }]);
    if (command.name !== 'insert' || command.body.insert !== 'policy_changes' || refused++ > 0) return undefined;
    const duplicate = { index: 0, code: 11000, errmsg: 'E11000 duplicate key error collection: verdict.policy_changes index: _id_ dup key: { _id: 1 }', keyPattern: { _id: 1 }, keyValue: { _id: 1 } };
    return { n: 0, writeErrors: [duplicate], ok: 1 };
  });
  const before = server.received.length;
  await store.createPolicy(policy('p'), TEST_WRITER).then(
    () => t.pass('written'),
    (error: Error) => t.fail(`refused: ${error.constructor.name}: ${error.message}`),
  );
  const raised = server.received
    .slice(before)
    .filter((command) => command.name === 'update' && command.body.update === 'counters')
    .flatMap((command) => (command.body.updates as Document[]).filter((update) => update.u.$max !== undefined).map((update) => update.q._id));
  t.ok(raised.includes('policy-revision'), 'the revision counter raised to the greatest revision kept');
  t.equal(server.received.slice(before).filter((command) => command.name === 'insert' && command.body.insert === 'policy_changes').length, 2, 'then the write made again');
});

t.test('$count reads the count kept with every registration, not the collection (scripted primary)', async (t) => {
  const { server, store } = await openOn(t, (command) =>
    command.name === 'find' && command.body.find === 'counters' && (command.body.filter as Document)._id === 'entity-count' ? found(command, [{ _id: 'entity-count', value: 42, exact: true }]) : undefined,
    // No background maintenance: only what $count reads is asked.
    false,
  );
  const before = server.received.length;
  t.equal(await store.countEntities(), 42);
  const read = server.received.slice(before).filter((command) => !['hello', 'ismaster', 'endSessions'].includes(command.name));
  t.same(read.map((command) => `${command.name}:${String(command.body[command.name])}`), ['find:counters'], 'one counter document read');
});

t.test('a connection string that connects directly to a secondary is refused at start, in one line (scripted secondary)', async (t) => {
  const server = await scriptedMongo((command) =>
    ['hello', 'ismaster', 'isMaster'].includes(command.name) ? { ...primaryHello(server.host), ismaster: false, isWritablePrimary: false, secondary: true, primary: '127.0.0.1:1' } : undefined,
  );
  t.teardown(() => server.close());
  const refused = await MongoStore.open({ uri: `mongodb://${server.host}/?directConnection=true`, database: 'verdict', serverSelectionTimeoutMS: 2000 }).then(
    async (store) => {
      await store.close();
      return undefined;
    },
    (error: Error) => error,
  );
  t.type(refused, StoreUnavailableError);
  t.match(refused?.message, /^cannot use MongoDB: .*directConnection.*secondary of replica set rs0.*not its primary/);
  t.notMatch(refused?.message, /\n/, 'one line');
});
