import t from 'tap';
import fc from 'fast-check';
import { compile, evaluate, mongoFilter, plan } from '../../src/engine/index.js';
import { noExactFilterAsDocumented, planCase, resourceEntity, storedDocument } from '../helpers/plan-cases.js';
import { reachableMongo } from '../helpers/mongo.js';

/**
 * The plan's property against a real MongoDB: for random cases, the filter run by `find()` on a
 * real collection selects exactly the resources `evaluate` allows. Catches what mingo cannot:
 * where MongoDB itself reads a filter differently (regular expressions, list matching, $expr).
 * Needs MONGODB_URI (or a mongod that mongodb-memory-server can start); PLAN_MONGODB_RUNS sets
 * the number of cases.
 */

const RUNS = Number(process.env.PLAN_MONGODB_RUNS ?? 300);

const mongo = await reachableMongo();
if ('skipped' in mongo) {
  console.log(`# plans against a real MongoDB SKIPPED: ${mongo.skipped}`);
  t.test('mongodb: plans select exactly what the engine allows', { skip: mongo.skipped }, () => undefined);
} else {
  t.teardown(mongo.stop);
  t.test(`mongodb: plans select exactly what the engine allows (${RUNS} cases)`, async (t) => {
    const { MongoClient } = await import('mongodb');
    const client = await MongoClient.connect(mongo.uri);
    const database = mongo.freshDatabase();
    t.teardown(async () => {
      await client.db(database).dropDatabase();
      await client.close();
    });
    const resources = client.db(database).collection('resources');
    // Keys starting with $ may not sit at the top level of a stored document: layouts that nest the attributes only.
    const examples = fc.sample(planCase, { numRuns: RUNS, seed: 17 }).filter((example) => example.layout.attributesPrefix !== '');
    let compared = 0;
    for (const example of examples) {
      const snapshot = compile(example.policies, 1);
      const principal = { uri: example.principal.uri, attributes: new Map(Object.entries(example.principal.attributes)) };
      const planned = plan(snapshot, { principal, resource: { uri: undefined, attributes: new Map(Object.entries(example.known)) }, action: example.action });
      const filter = mongoFilter(planned.condition, example.layout);
      if (!('filter' in filter)) {
        // An operator MongoDB cannot state: its refusal is held to the documented one by plan-property.test.ts.
        if (!noExactFilterAsDocumented(filter.unsupported)) t.fail(`no filter: ${filter.unsupported}`);
        continue;
      }
      await resources.deleteMany({});
      await resources.insertMany(example.resources.map((document, index) => ({ _id: index, ...storedDocument(document, example.layout) }) as never));
      const found = new Set((await resources.find(filter.filter, { projection: { _id: 1 } }).toArray()).map((document) => document._id as unknown as number));
      example.resources.forEach((document, index) => {
        const allowed = evaluate(snapshot, { principal, resource: resourceEntity(document, example.known), action: example.action }).allowed;
        if (found.has(index) !== allowed) {
          t.fail(`the filter ${JSON.stringify(filter.filter)} ${allowed ? 'misses' : 'selects'} ${JSON.stringify(storedDocument(document, example.layout))}`);
        }
        compared++;
      });
    }
    t.ok(compared > RUNS, `${compared} resources compared in ${examples.length} cases`);
  });
}
