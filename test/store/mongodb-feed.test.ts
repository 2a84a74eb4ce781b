import t from 'tap';
import { Aggregator } from 'mingo';
import type { Document } from 'mongodb';
import { feedPipeline } from '../../src/store/mongodb/feed.js';
import { scriptedMongo } from '../helpers/scripted-mongo.js';
import { MongoStore } from '../../src/store/mongodb/store.js';
import { until } from '../helpers/until.js';

// The change feed carries what followers read and nothing more: the pipeline the store asks the
// server for, run here on change events by mingo (a MongoDB query engine in JavaScript), and the
// pipeline the store sends, as a scripted primary receives it.

const ns = (coll: string) => ({ db: 'verdict', coll });
const time = { clusterTime: { t: 1, i: 1 }, wallTime: new Date(0) };
const big = 'x'.repeat(1000);

const EVENTS: [string, Document, boolean][] = [
  ['an entity inserted', { _id: 1, operationType: 'insert', ns: ns('entities'), documentKey: { _id: 'user:a' }, fullDocument: { _id: 'user:a', document: big, attributes: { a: big } }, ...time }, true],
  ['an entity updated', { _id: 2, operationType: 'update', ns: ns('entities'), documentKey: { _id: 'user:a' }, updateDescription: { updatedFields: { document: big, version: 2, attributes: { a: 1 }, attributes_version: 2 }, removedFields: [] }, ...time }, true],
  ['a backfilled copy', { _id: 3, operationType: 'update', ns: ns('entities'), documentKey: { _id: 'user:a' }, updateDescription: { updatedFields: { attributes: { a: 1 }, attributes_version: 1 }, removedFields: [] }, ...time }, false],
  ['a copy updated and a field removed', { _id: 4, operationType: 'update', ns: ns('entities'), documentKey: { _id: 'user:a' }, updateDescription: { updatedFields: { attributes: null }, removedFields: ['document'] }, ...time }, true],
  ['a policy replaced', { _id: 5, operationType: 'replace', ns: ns('policies'), documentKey: { _id: 'p' }, fullDocument: { document: big }, ...time }, true],
  ['an entity deleted', { _id: 6, operationType: 'delete', ns: ns('entities'), documentKey: { _id: 'user:a' }, ...time }, true],
  ['the counters dropped', { _id: 7, operationType: 'drop', ns: ns('counters'), ...time }, true],
  ['a collection renamed onto audit', { _id: 8, operationType: 'rename', ns: ns('scratch'), to: ns('audit'), ...time }, true],
  ['the database dropped', { _id: 9, operationType: 'dropDatabase', ns: { db: 'verdict' }, ...time }, true],
  ['an audit record inserted', { _id: 10, operationType: 'insert', ns: ns('audit'), documentKey: { _id: 4 }, fullDocument: { record: big }, ...time }, false],
  ['the attribute schemas replaced', { _id: 11, operationType: 'replace', ns: ns('schemas'), documentKey: { _id: 'schemas' }, fullDocument: { document: big }, ...time }, true],
  ['a policy change logged', { _id: 12, operationType: 'insert', ns: ns('policy_changes'), documentKey: { _id: 3 }, fullDocument: { name: 'p' }, ...time }, false],
];

t.test('the feed keeps the events followers act on, cut to what they read, and drops copy-only updates', async (t) => {
  const passed = new Aggregator(feedPipeline()).run(EVENTS.map(([, event]) => event)) as Document[];
  t.same(passed.map((event) => event._id), EVENTS.filter(([, , kept]) => kept).map(([, event]) => event._id), EVENTS.map(([what, , kept]) => `${what}: ${kept ? 'kept' : 'dropped'}`).join('; '));
  for (const event of passed) {
    t.notOk('fullDocument' in event || 'updateDescription' in event, `event ${String(event._id)}: no document and no update description`);
    t.ok(JSON.stringify(event).length < 300, `event ${String(event._id)}: small whatever the entity holds`);
  }
  t.same(Object.keys(passed[0]!).sort(), ['_id', 'clusterTime', 'documentKey', 'ns', 'operationType', 'wallTime'], 'what changeOf reads, and the resume token');
});

t.test('the store opens its change stream with that pipeline (scripted primary)', async (t) => {
  const server = await scriptedMongo();
  t.teardown(() => server.close());
  const store = await MongoStore.open({ uri: server.uri, database: 'verdict', serverSelectionTimeoutMS: 2000, maintenance: false });
  t.teardown(() => store.close());
  const stop = store.watch(() => undefined);
  t.teardown(stop);
  await until(() => server.received.some((command) => command.name === 'aggregate' && (command.body.pipeline as Document[])[0]?.$changeStream !== undefined), 'the stream to open');
  const opened = server.received.find((command) => command.name === 'aggregate' && (command.body.pipeline as Document[])[0]?.$changeStream !== undefined)!;
  const [, ...pipeline] = opened.body.pipeline as Document[];
  t.same(JSON.parse(JSON.stringify(pipeline)), JSON.parse(JSON.stringify(feedPipeline())));
  t.notOk('fullDocument' in (opened.body.pipeline as Document[])[0]!.$changeStream && (opened.body.pipeline as Document[])[0]!.$changeStream.fullDocument !== 'default', 'no full documents asked for');
  t.equal((opened.body.$readPreference as Document | undefined)?.mode, 'secondaryPreferred', 'read from a secondary when there is one: a fleet of streams off the primary');
});
