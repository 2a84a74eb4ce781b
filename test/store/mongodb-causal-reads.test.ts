import t from 'tap';
import { Timestamp, type Document } from 'mongodb';
import { MongoStore } from '../../src/store/mongodb/store.js';
import { MAX_STALENESS_SECONDS } from '../../src/store/mongodb/entities.js';
import { scriptedMongo, type Received } from '../helpers/scripted-mongo.js';
import { until } from '../helpers/until.js';

// A read that fills a cache is causally after the change feed's position, on whichever member
// answers it: the store asks for it (readConcern afterClusterTime, the cluster time of the last event
// the feed delivered), and never reads from a secondary further behind than MAX_STALENESS_SECONDS, the
// stream included. Checked on a scripted stand-in for a primary through the real driver, by what the
// store asks (no MongoDB server runs here; the replica-set job runs it against a delayed secondary).

const readOf = (commands: Received[], filter: (body: Document) => boolean) => commands.filter((command) => command.name === 'find' && command.body.find === 'entities' && filter(command.body));
const sameTime = (found: unknown, wanted: Timestamp) => found instanceof Timestamp && found.t === wanted.t && found.i === wanted.i;

t.test("an entity read after the feed delivered a change is asked to be after that change's cluster time; no member more than 90 s behind is read (scripted primary)", async (t) => {
  const server = await scriptedMongo();
  const store = await MongoStore.open({ uri: server.uri, database: 'verdict', serverSelectionTimeoutMS: 2000, maintenance: false });
  t.teardown(async () => {
    await store.close();
    await server.close();
  });
  const { feedPosition } = await store.loadPolicies();
  const heard: string[] = [];
  t.teardown(store.watch((change) => heard.push(change.kind), feedPosition));
  await until(() => server.received.some((command) => command.name === 'getMore'), 'the stream to be live');
  const stream = server.received.find((command) => command.name === 'aggregate')!;
  t.same(stream.body.$readPreference, { mode: 'secondaryPreferred', maxStalenessSeconds: MAX_STALENESS_SECONDS }, 'the stream follows a member no more than 90 s behind');

  // A change far ahead of any time the stand-in reports itself, so that the read can only have it from the feed.
  const written = new Timestamp({ t: Math.floor(Date.now() / 1000) + 100_000, i: 7 });
  server.sendChanges({ _id: { _data: 'user-x' }, operationType: 'update', ns: { db: 'verdict', coll: 'entities' }, documentKey: { _id: 'user:x' }, clusterTime: written });
  await until(() => heard.includes('entity'), 'the change to be delivered');

  await store.getEntity('user:x');
  const [checkRead] = readOf(server.received, (body) => (body.filter as Document)._id === 'user:x');
  t.ok(sameTime(checkRead?.body.readConcern?.afterClusterTime, written), `a check's read is after the change: ${JSON.stringify(checkRead?.body.readConcern)}`);
  t.same(checkRead?.body.$readPreference, { mode: 'primaryPreferred', maxStalenessSeconds: MAX_STALENESS_SECONDS });

  await store.listEntitiesAfter('', 10);
  const [warmUp] = readOf(server.received, (body) => (body.filter as Document)._id?.$gt !== undefined);
  t.ok(sameTime(warmUp?.body.readConcern?.afterClusterTime, written), `the warm-up's pages too: ${JSON.stringify(warmUp?.body.readConcern)}`);
  t.same(warmUp?.body.$readPreference, { mode: 'secondaryPreferred', maxStalenessSeconds: MAX_STALENESS_SECONDS });
});
