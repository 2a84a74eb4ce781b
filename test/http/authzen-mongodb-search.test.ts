import t, { type Test } from 'tap';
import fc from 'fast-check';
import type { Document } from 'mongodb';
import { MongoStore } from '../../src/store/mongodb/store.js';
import { startServer, succeeded } from '../helpers/server.js';
import { found, scriptedMongo, type Received } from '../helpers/scripted-mongo.js';
import { reachableMongo } from '../helpers/mongo.js';
import { planCase } from '../helpers/plan-cases.js';
import type { Policy, Rule } from '../../src/schemas/policy.js';

// AuthZEN's resource search on the MongoDB store, where an exact plan's filter narrows the
// candidates in the database: what it asks the database (on a scripted primary, through the real
// driver), and that it answers as the embedded store does (on a real MongoDB, when one is reachable).

const SEARCH = '/access/v1/search/resource';
const REGISTER_MANY = '/admin/fetchers/registry/entities/$bulk';


const registered = (uri: string, attributes: Record<string, unknown>) => ({
  _id: uri,
  position: 1,
  version: 1,
  document: JSON.stringify({ uri, type: 'resource', attributes: Object.entries(attributes).map(([key, value]) => ({ key, value, updated_at: 't', registered_at: 't' })), registered_at: 't' }),
});

/** What the scripted primary holds: two documents, one at level 5 and one at level 1. */
const ROWS = [registered('doc:high', { level: 5 }), registered('doc:low', { level: 1 })];

/**
 * Whether a find's filter lists a range of a type's uris, rather than reading one uri, every row in
 * registration order, or every entity in uri order (the entity cache's warm-up, `{_id: {$gt}}`).
 */
const listsRange = (filter: Document) => filter.$and !== undefined || (typeof filter._id === 'object' && '$gte' in filter._id);

/** The finds on the entities collection that list a uri range. */
const rangeReads = (commands: Received[]) =>
  commands.filter((command) => command.name === 'find' && command.body.find === 'entities' && listsRange(command.body.filter as Document));

const policyAllowing = (rule: Partial<Rule>): Policy => ({
  version: '1.0',
  name: 'p',
  description: null,
  rules: [{ name: 'r', effect: 'allow', principal_conditions: [], resource_conditions: [], actions: ['read'], ...rule }],
  default_effect: 'deny',
});

/** Allows reading documents above level 3. */
const LEVELS = policyAllowing({ resource_conditions: [{ path: 'attributes.level', operator: 'gt', value: 3 }] });

/**
 * A server on a MongoDB store over a scripted primary that holds `policy` and, as entities, ROWS:
 * every listing of a range finds both (the primary runs no filter), a read of one uri finds its row.
 */
async function serverOnScriptedMongo(t: Test, policy: Policy = LEVELS, narrowedFindsTimeOut = false) {
  const mongo = await scriptedMongo((command) => {
    if (command.name === 'find' && command.body.find === 'policies') return found(command, [{ _id: policy.name, position: 1, version: 1, document: JSON.stringify(policy) }]);
    if (command.name !== 'find' || command.body.find !== 'entities') return undefined;
    const { _id, $and } = command.body.filter as Document;
    if (typeof _id === 'string') return found(command, ROWS.filter((row) => row._id === _id));
    if ($and !== undefined && narrowedFindsTimeOut) return { ok: 0, code: 50, codeName: 'MaxTimeMSExpired', errmsg: 'operation exceeded time limit' };
    return listsRange(command.body.filter as Document) ? found(command, ROWS) : undefined;
  });
  const store = await MongoStore.open({ uri: mongo.uri, database: 'verdict', serverSelectionTimeoutMS: 2000 });
  const server = await startServer({}, { store });
  t.teardown(async () => {
    await server.close();
    await mongo.close();
  });
  return { mongo, server };
}

const search = { subject: { type: 'user', id: 'alice' }, action: { name: 'read' }, resource: { type: 'doc' } };

t.test('a resource search sends the plan\'s filter in its find, and still decides what the database returns (scripted primary)', async (t) => {
  const { mongo, server } = await serverOnScriptedMongo(t);
  const before = mongo.received.length;
  const answer = await succeeded(server, 'POST', SEARCH, search);
  t.same(answer, { page: { next_token: '', count: 1, total: 1 }, results: [{ type: 'doc', id: 'high' }] }, 'doc:low, which the primary returned though the filter leaves it out, is not a result');
  const [read, ...more] = rangeReads(mongo.received.slice(before));
  t.equal(more.length, 0, 'one find lists the candidates');
  const filter = read!.body.filter as Document;
  t.same(filter.$and[0], { _id: { $gte: 'doc:', $lt: 'doc;', $gt: '' } }, 'the uri range of the type');
  t.same(filter.$and[1].$or[0], { 'attributes.level': { $gt: 3, $not: { $type: 'array' } } }, "the plan's filter, over the stored copy of the attributes");
  t.ok('$expr' in filter.$and[1].$or[1], 'with the rows whose copy cannot vouch for their attributes');
  t.same(read!.body.projection, { document: 1 }, 'reading the text of each row, not its copy');
});

t.test('with resource properties, which the database cannot see, the search sends no filter (scripted primary)', async (t) => {
  const { mongo, server } = await serverOnScriptedMongo(t);
  const before = mongo.received.length;
  const answer = await succeeded(server, 'POST', SEARCH, { ...search, resource: { type: 'doc', properties: { owner: 'alice' } } });
  t.same(answer.results, [{ type: 'doc', id: 'high' }], 'decided as before');
  const reads = rangeReads(mongo.received.slice(before));
  t.same(
    reads.map((command) => command.body.filter),
    [{ _id: { $gte: 'doc:', $lt: 'doc;', $gt: '' } }],
    'one find, of the uri range only',
  );
});

t.test('a plan allowing everything sends no filter (scripted primary)', async (t) => {
  const { mongo, server } = await serverOnScriptedMongo(t, policyAllowing({}));
  const before = mongo.received.length;
  t.same((await succeeded(server, 'POST', SEARCH, search)).results.map((result: { id: string }) => result.id), ['high', 'low']);
  t.same(rangeReads(mongo.received.slice(before)).map((command) => command.body.filter), [{ _id: { $gte: 'doc:', $lt: 'doc;', $gt: '' } }]);
});

t.test("a search decides its candidates from the rows it read: no second read of each, nothing pushed out of the checks' entity cache (scripted primary)", async (t) => {
  const { mongo, server } = await serverOnScriptedMongo(t);
  const before = mongo.received.length;
  t.same((await succeeded(server, 'POST', SEARCH, search)).results.map((result: { id: string }) => result.id), ['high']);
  const readsOfOne = mongo.received.slice(before).filter((command) => command.name === 'find' && command.body.find === 'entities' && typeof (command.body.filter as Document)._id === 'string');
  t.same(readsOfOne.map((command) => (command.body.filter as Document)._id), ['user:alice'], 'only the subject is read by its uri');
});

t.test('a narrowed find that runs out of its time in the database: the search reads the range whole and decides it (scripted primary)', async (t) => {
  const { mongo, server } = await serverOnScriptedMongo(t, LEVELS, true);
  const before = mongo.received.length;
  t.same((await succeeded(server, 'POST', SEARCH, search)).results.map((result: { id: string }) => result.id), ['high'], 'the same answer');
  const reads = rangeReads(mongo.received.slice(before));
  t.equal(reads.length, 2, 'the narrowed find, then the range without it');
  t.ok((reads[0]!.body.filter as Document).$and !== undefined && reads[0]!.body.maxTimeMS > 0, 'the narrowed find is bounded in the database');
  t.same(reads[1]!.body.filter, { _id: { $gte: 'doc:', $lt: 'doc;', $gt: '' } }, 'then the plain range');
});

const RUNS = 20;

const mongo = await reachableMongo();
if ('skipped' in mongo) {
  console.log(`# AuthZEN resource search on MongoDB SKIPPED: ${mongo.skipped}`);
  t.test('mongodb: resource search answers as on the embedded store', { skip: mongo.skipped }, () => undefined);
} else {
  t.teardown(mongo.stop);
  t.test(`mongodb: resource search answers as on the embedded store (${RUNS} cases, pages of 2)`, async (t) => {
    const database = mongo.freshDatabase();
    const onMongo = await startServer({ store: 'mongodb', mongodbUri: mongo.uri, mongodbDatabase: database });
    const embedded = await startServer();
    t.teardown(async () => {
      await onMongo.close();
      await embedded.close();
      await mongo.dropDatabase(database);
    });
    const servers = [onMongo, embedded];
    let compared = 0;
    for (const [index, example] of fc.sample(planCase, { numRuns: RUNS, seed: 2031 }).entries()) {
      const type = `doc${index}`;
      const entities = example.resources.map((document, position) => ({
        uri: `${type}:${position}`,
        type: 'resource',
        attributes: Object.keys(document.attributes).length === 0 ? { none: 1 } : document.attributes,
      }));
      for (const server of servers) {
        for (const policy of (await succeeded(server, 'GET', '/admin/policies')) as { name: string }[]) await succeeded(server, 'DELETE', `/admin/policies/${policy.name}`);
        for (const policy of example.policies) await succeeded(server, 'POST', '/admin/policies', policy);
        await succeeded(server, 'POST', REGISTER_MANY, entities);
      }
      const [subjectType, id] = (example.principal.uri ?? 'user:carol').split(':') as [string, string];
      const body = {
        subject: { type: subjectType, id, properties: example.principal.attributes },
        action: { name: example.action, properties: example.actionAttributes },
        resource: { type },
        context: example.context,
        page: { limit: 2 },
      };
      const [pagesOnMongo, pagesEmbedded] = await Promise.all(servers.map(async (server) => {
        const pages: unknown[] = [];
        let token: string | undefined;
        do {
          const page = (await succeeded(server, 'POST', SEARCH, { ...body, page: { limit: 2, ...(token === undefined ? {} : { token }) } })) as { page: { next_token: string }; results: unknown[] };
          pages.push(page.results);
          token = page.page.next_token;
        } while (token !== '' && pages.length < 50);
        return pages;
      }));
      t.same(pagesOnMongo, pagesEmbedded, `case ${index}: the same pages`);
      compared += entities.length;
    }
    t.ok(compared > RUNS, `${compared} candidates compared`);
  });
}
