import t from 'tap';
import { MongoStore } from '../../src/store/mongodb/store.js';
import { scriptedMongo, type Received } from '../helpers/scripted-mongo.js';
import { startServer } from '../helpers/server.js';
import { until } from '../helpers/until.js';

// A process whose change stream MongoDB refuses says so in /ready and in a metric, and starts
// over once MongoDB takes it again: a real Verdict over HTTP on a scripted stand-in for a primary
// (no MongoDB server runs here), through the real driver.

const unauthorized = { ok: 0, errmsg: 'not authorized on verdict to execute command { aggregate: 1 }', code: 13, codeName: 'Unauthorized' };
const isChangeStream = (command: Received) => command.name === 'aggregate' && (command.body.pipeline as Array<Record<string, unknown>>)[0]?.$changeStream !== undefined;
const interruptedSeconds = (metrics: string) => Number(/^verdict_change_feed_interrupted_seconds (\S+)$/m.exec(metrics)?.[1]);

t.test('a change stream MongoDB keeps refusing makes /ready degraded and the metric count, until it is taken again (scripted primary)', async (t) => {
  let refusing = false;
  const mongo = await scriptedMongo((command) => (refusing && (isChangeStream(command) || command.name === 'getMore') ? unauthorized : undefined));
  const store = await MongoStore.open({ uri: mongo.uri, database: 'verdict', serverSelectionTimeoutMS: 2000 });
  const server = await startServer({}, { store });
  t.teardown(async () => {
    await server.close();
    await mongo.close();
  });
  const ready = async () => (await server.call('GET', '/ready')).body;
  t.same((await ready()).checks.feed, 'ok', 'following');

  // The credentials lose their right to read the change stream: its next batch and every reopen are refused.
  const streamsBefore = mongo.received.filter(isChangeStream).length;
  refusing = true;
  let degraded = await ready();
  for (let tries = 0; tries < 200 && degraded.checks.feed === 'ok'; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    degraded = await ready();
  }
  t.equal(degraded.status, 'ready', 'still serving decisions');
  t.equal(degraded.degraded, true, 'but degraded');
  t.match(degraded.checks.feed, /^interrupted since \d{4}-\d\d-\d\dT.*Z, retrying: not authorized on verdict/);
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  t.ok(interruptedSeconds(metrics) > 0, 'verdict_change_feed_interrupted_seconds counts the time since');

  await until(() => mongo.received.filter(isChangeStream).length >= streamsBefore + 4, 'three refusals and a fresh start', 20_000);
  const lastOpen = mongo.received.filter(isChangeStream).at(-1)!.body.pipeline[0].$changeStream as Record<string, unknown>;
  t.notOk('resumeAfter' in lastOpen || 'startAtOperationTime' in lastOpen, 'after three refusals it starts over, from a new stream');

  const wholeLoads = () => mongo.received.filter((command) => command.name === 'find' && command.body.find === 'policies' && command.body.filter && Object.keys(command.body.filter).length === 0).length;
  const loadsBefore = wholeLoads();
  refusing = false;
  let recovered = await ready();
  for (let tries = 0; tries < 400 && recovered.degraded; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    recovered = await ready();
  }
  t.same(recovered.checks.feed, 'ok', 'following again');
  await until(() => wholeLoads() > loadsBefore, 'the policies to be loaded again: what was written meanwhile is not known', 20_000);
  t.equal(interruptedSeconds(await (await fetch(`${server.url}/metrics`)).text()), 0);
});
