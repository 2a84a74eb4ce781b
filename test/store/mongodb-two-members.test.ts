import t from 'tap';
import { Timestamp, type Document } from 'mongodb';
import { MongoStore } from '../../src/store/mongodb/store.js';
import { found, primaryHello, scriptedMongo, type Received } from '../helpers/scripted-mongo.js';
import { until } from '../helpers/until.js';

// Item 1 of the third MongoDB round over two scripted members whose operation times differ: a primary
// that has applied a write (the role taken from user:x), and a secondary still behind it, catching up
// (a member restarted in a rollout, a cross-zone one). The change feed, followed on the primary, has
// delivered the write; the entity cache's warm-up then reads from the secondary. A member honours a
// read's `afterClusterTime` as MongoDB does: it answers once it has applied that time (the scripted
// one catches up at once); a read that asks for nothing is answered with what it holds.

const UNTIL_WRITTEN = { uri: 'user:x', type: 'principal', attributes: [{ key: 'role', value: 'admin', updated_at: 't0', registered_at: 't0' }], registered_at: 't0' };
const WRITTEN = { ...UNTIL_WRITTEN, attributes: [] };

const isEntityRead = (command: Received) => command.name === 'find' && command.body.find === 'entities';
const timeOf = (stamp: Timestamp) => stamp.t * 2 ** 32 + stamp.i;

t.test('a warm-up answered by a member behind the change feed never caches what the feed said was overwritten (two scripted members)', async (t) => {
  const now = Math.floor(Date.now() / 1000);
  const written = new Timestamp({ t: now, i: 5 });
  let secondaryApplied = new Timestamp({ t: now - 60, i: 1 });
  let secondaryReady = false;
  const hosts: string[] = [];

  const primary = await scriptedMongo((command) => (isEntityRead(command) ? found(command, [{ _id: 'user:x', document: JSON.stringify(WRITTEN) }]) : undefined), {
    hello: (host) => ({ ...primaryHello(host), hosts }),
    operationTime: () => written,
  });
  const secondary = await scriptedMongo(
    (command) => {
      if (!isEntityRead(command)) return undefined;
      const after = (command.body.readConcern as Document | undefined)?.afterClusterTime as Timestamp | undefined;
      if (after !== undefined && timeOf(after) > timeOf(secondaryApplied)) secondaryApplied = after;
      const holds = timeOf(secondaryApplied) >= timeOf(written) ? WRITTEN : UNTIL_WRITTEN;
      return found(command, [{ _id: 'user:x', document: JSON.stringify(holds) }]);
    },
    {
      // Until it is ready, a member still starting (neither primary nor secondary): nothing is read from it.
      hello: (host) => ({ ...primaryHello(host), hosts, ismaster: false, isWritablePrimary: false, secondary: secondaryReady, primary: primary.host }),
      operationTime: () => secondaryApplied,
    },
  );
  hosts.push(primary.host, secondary.host);
  const store = await MongoStore.open({ uri: `mongodb://${hosts.join(',')}/?replicaSet=rs0&heartbeatFrequencyMS=500`, database: 'verdict', serverSelectionTimeoutMS: 5000, maintenance: false });
  t.teardown(async () => {
    await store.close();
    await Promise.all([primary.close(), secondary.close()]);
  });

  const { feedPosition } = await store.loadPolicies();
  const heard: string[] = [];
  t.teardown(store.watch((change) => change.kind === 'entity' && heard.push(change.uri), feedPosition));
  await until(() => primary.received.some((command) => command.name === 'getMore'), 'the change stream to be live on the primary');
  primary.sendChanges({ _id: { _data: 'user-x' }, operationType: 'update', ns: { db: 'verdict', coll: 'entities' }, documentKey: { _id: 'user:x' }, clusterTime: written });
  await until(() => heard.includes('user:x'), 'the write to be delivered');

  secondaryReady = true;
  const hellosBefore = secondary.received.length;
  // Two hellos answered since: the driver has read at least the first.
  await until(() => secondary.received.slice(hellosBefore).filter((command) => command.name === 'hello' || command.name === 'ismaster').length >= 2, 'the driver to see the secondary ready');

  const page = await store.listEntitiesAfter('', 10);
  const warmUpRead = secondary.received.find(isEntityRead);
  t.ok(warmUpRead, 'the warm-up was answered by the secondary, behind the feed when it was asked');
  t.same(page, [WRITTEN], 'what it fills the cache with is the entity as written, never the role the write took away');
});
