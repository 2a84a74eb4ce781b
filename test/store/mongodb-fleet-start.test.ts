import t from 'tap';
import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { ask, startVerdict } from '../helpers/child.js';

/**
 * A rollout of several processes at once on a database whose registry lacks its indexes (restored
 * from a dump, say): on a real MongoDB, ROWS entity rows are inserted without indexes, then PROCESSES
 * Verdicts start together. While they start, MongoDB's current operations are read every 50 ms: at
 * no moment does more than one index build run on the database (one process holds the maintenance
 * lease and builds; the others wait for the indexes to be listed), every process serves from the
 * start, and each is ready once the indexes are built.
 *
 * It loads ROWS rows into a database of its own, so it runs only where MONGODB_FLEET_START=1 asks
 * for it (the replica-set job of .github/workflows/ci.yml).
 */

const ROWS = Number(process.env.FLEET_START_ROWS ?? 300_000);
const PROCESSES = 3;
const BATCH = 10_000;

async function unsuitable(uri: string | undefined): Promise<string | undefined> {
  if (!uri) return 'MONGODB_URI is not set';
  if (process.env.MONGODB_FLEET_START !== '1') return `MONGODB_FLEET_START is not 1 (this test loads ${ROWS} rows into MongoDB)`;
  return undefined;
}

const uri = process.env.MONGODB_URI;
const skip = await unsuitable(uri);
if (skip !== undefined) {
  console.log(`# a fleet starting against an index build SKIPPED: ${skip}`);
  t.test('mongodb: processes started together on a registry without indexes build each index once', { skip }, () => undefined);
} else {
  t.test('mongodb: processes started together on a registry without indexes build each index once', { timeout: 600_000 }, async (t) => {
    const database = `verdict-fleet-start-${randomUUID().slice(0, 8)}`;
    const client = await MongoClient.connect(uri!);
    t.teardown(async () => {
      await client.db(database).dropDatabase();
      await client.close();
    });
    const entities = client.db(database).collection<{ _id: string; position: number; document: string; version: number }>('entities');
    for (let start = 0; start < ROWS; start += BATCH) {
      const rows = Array.from({ length: Math.min(BATCH, ROWS - start) }, (_, offset) => {
        const uri = `user:${String(start + offset).padStart(8, '0')}`;
        return { _id: uri, position: start + offset + 1, document: JSON.stringify({ uri, type: 'principal', attributes: [{ key: 'role', value: 'reader' }] }), version: 1 };
      });
      await entities.insertMany(rows, { ordered: false });
    }
    t.comment(`${ROWS} rows without indexes`);

    let starting = true;
    let mostBuildsAtOnce = 0;
    const buildsSeen = new Set<string>();
    const watching = (async () => {
      while (starting) {
        const builds = await client
          .db('admin')
          .aggregate([{ $currentOp: { allUsers: true } }, { $match: { 'command.createIndexes': { $exists: true }, 'command.$db': database } }])
          .toArray();
        mostBuildsAtOnce = Math.max(mostBuildsAtOnce, builds.length);
        for (const build of builds) buildsSeen.add(String(build.opid));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();

    const args = ['--store', 'mongodb', '--mongodb-uri', uri!, '--mongodb-db', database, '--workers', '1', '--log-level', 'warn', '--entity-cache-size', '1000'];
    const processes = await Promise.all(Array.from({ length: PROCESSES }, () => startVerdict(t, args)));
    for (const verdict of processes) {
      const check = await ask(verdict.url, 'POST', '/check', { principal: { uri: 'user:00000007' }, resource: { attributes: {} }, action: 'read' });
      t.equal(check.status, 200, 'serving while the indexes are built');
    }
    for (const [index, verdict] of processes.entries()) {
      let ready = await ask(verdict.url, 'GET', '/ready');
      for (let waited = 0; waited < 300_000 && ready.status !== 200; waited += 500) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        ready = await ask(verdict.url, 'GET', '/ready');
      }
      t.equal(ready.status, 200, `process ${index + 1} ready once the builds are done`);
    }
    starting = false;
    await watching;
    t.ok(mostBuildsAtOnce <= 1, `at most one index build at a time (${mostBuildsAtOnce} at most; ${buildsSeen.size} build operations seen)`);
    const indexes = (await entities.listIndexes().toArray()).map((index) => index.name as string);
    t.ok(indexes.includes('position_1') && indexes.includes('attributes_version_1__id_1'), `the entities' indexes built: ${indexes.join(', ')}`);
  });
}
