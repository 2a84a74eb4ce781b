import t, { type Test } from 'tap';
import fc from 'fast-check';
import { Query } from 'mingo';
import type { Collection, Document } from 'mongodb';
import { compile, mongoFilter, type ConditionTree, type DecisionRequest } from '../../src/engine/index.js';
import { plan } from '../../src/engine/plan.js';
import { conditionTest } from '../../src/services/condition-test.js';
import { MongoStore } from '../../src/store/mongodb/store.js';
import { BACKFILL_BATCH } from '../../src/store/mongodb/maintenance.js';
import { until } from '../helpers/until.js';
import { ENTITY_ROW_LAYOUT, MAX_COPIED_TEXT_BYTES, NARROWED_NESTING, narrowedRange, queryableFields } from '../../src/store/mongodb/queryable.js';
import type { Entity } from '../../src/schemas/entity.js';
import { planCase, type PlanCase } from '../helpers/plan-cases.js';
import { found, scriptedMongo } from '../helpers/scripted-mongo.js';
import { reachableMongo, type ReachableMongo } from '../helpers/mongo.js';
import { TEST_WRITER } from '../helpers/writer.js';

// The queryable copy of an entity's attributes that MongoDB rows hold beside their text, and the
// listing it narrows: which attributes are copied, that a narrowed listing leaves out only rows the
// condition does not hold for (mingo here, a real MongoDB when one is reachable), and the backfill
// of rows written before copies were kept.

const entityOf = (uri: string, attributes: Record<string, unknown>): Entity => ({
  uri,
  type: 'resource',
  attributes: Object.entries(attributes).map(([key, value]) => ({ key, value, updated_at: 't', registered_at: 't' })),
  registered_at: 't',
});

const copyOf = (attributes: Record<string, unknown>) => {
  const entity = entityOf('doc:1', attributes);
  return queryableFields(entity, JSON.stringify(entity), 3).attributes;
};

t.test('the copy holds the attributes as JSON holds them, or is null where MongoDB could not', async (t) => {
  t.same(queryableFields(entityOf('doc:1', { a: 1 }), '{}', 7), { attributes: { a: 1 }, attributes_version: 7 }, 'with the version it is of');
  const nested = { level: 2, tags: ['x', { k: null }], addr: { city: 'é😀', '0': [1.5, true] } };
  t.same(copyOf(nested), nested, 'nested documents and lists, digit keys');
  const prototypeKey = copyOf(JSON.parse('{"__proto__": {"admin": true}}') as Record<string, unknown>)!;
  t.ok(Object.hasOwn(prototypeKey, '__proto__') && Object.getPrototypeOf(prototypeKey) === Object.prototype, '__proto__ is a key like any other');
  for (const [why, attributes] of [
    ['an empty key', { '': 1 }],
    ['a dot in a key', { 'a.b': 1 }],
    ['a leading $', { $x: 1 }],
    ['a NUL in a key', { 'a\u0000': 1 }],
    ['a dot in a nested key', { a: [{ 'x.y': 1 }] }],
    ['a leading $ in a nested key', { a: { $in: [1] } }],
    ['a lone surrogate in a text', { a: ['ok', 'x\uD800'] }],
    ['a lone surrogate in a key', { 'x\uDC00': 1 }],
  ] as const) {
    t.equal(copyOf(attributes), null, `no copy: ${why}`);
  }
  t.same(copyOf({ a: '$x.y', b: 'x\uD83D\uDE00' }), { a: '$x.y', b: 'x\uD83D\uDE00' }, 'dots and dollars in texts, and whole surrogate pairs, are copied');
  const large = entityOf('doc:1', { a: 'x'.repeat(MAX_COPIED_TEXT_BYTES) });
  t.equal(queryableFields(large, JSON.stringify(large), 1).attributes, null, 'no copy of text too large to hold twice');
});

/** A row as the store writes it, made stale (`version` moved past the copy) or older (no copy) when asked. */
function rowOf(entity: Entity, shape: 'current' | 'stale' | 'older', staleCopyOf: Entity): Document {
  const document = JSON.stringify(entity);
  if (shape === 'older') return { _id: entity.uri, document };
  if (shape === 'stale') return { _id: entity.uri, document, version: 2, ...queryableFields(staleCopyOf, JSON.stringify(staleCopyOf), 1) };
  return { _id: entity.uri, document, version: 1, ...queryableFields(entity, document, 1) };
}

/** The plan of a case and Verdict's test of it, when the plan is exact and has a filter for entity rows. */
function planned(example: PlanCase): { filter: Document; holds: (entity: Entity) => boolean } | undefined {
  const snapshot = compile(example.policies, 1);
  const principal = { uri: example.principal.uri, attributes: new Map(Object.entries(example.principal.attributes)) };
  const asked = { principal, action: example.action, actionAttributes: new Map(Object.entries(example.actionAttributes)), context: new Map(Object.entries(example.context)) };
  let condition: ConditionTree;
  try {
    const made = plan(snapshot, { ...asked, resource: { uri: undefined, attributes: new Map() } });
    if (made.exact === false) return undefined;
    condition = made.condition;
  } catch {
    // A plan that cannot be stated: the search checks each candidate.
    return undefined;
  }
  const filter = mongoFilter(condition, ENTITY_ROW_LAYOUT, Infinity, NARROWED_NESTING);
  if (!('filter' in filter)) return undefined;
  const test = conditionTest(condition);
  const holds = (entity: Entity) => test({ ...asked, resource: { uri: entity.uri, attributes: new Map(entity.attributes.map(({ key, value }) => [key, value])) } } as DecisionRequest);
  return { filter: filter.filter, holds };
}

const entitiesOf = (example: PlanCase) => example.resources.map((document, position) => entityOf(document.uri === undefined ? `doc:${position}` : `doc:${position}${document.uri}`, document.attributes));

t.test('a narrowed range selects every row the condition holds for, exactly those where the copy vouches, and every row where it cannot (mingo, 200 cases)', async (t) => {
  let [held, vouched, unvouched] = [0, 0, 0];
  for (const [index, example] of fc.sample(planCase, { numRuns: 200, seed: 41 }).entries()) {
    const made = planned(example);
    if (made === undefined) continue;
    const entities = entitiesOf(example);
    const rows = entities.map((entity, position) => rowOf(entity, (['current', 'current', 'stale', 'older'] as const)[position % 4]!, entities[(position + 1) % entities.length]!));
    const query = new Query(narrowedRange({ _id: { $gte: 'doc:', $lt: 'doc;' } }, made.filter), {});
    rows.forEach((row, position) => {
      const selected = query.test(row);
      const holds = made.holds(entities[position]!);
      const canVouch = row.attributes !== null && row.attributes !== undefined && row.attributes_version === row.version;
      if (holds) held++;
      if (canVouch) vouched++;
      else unvouched++;
      if (canVouch ? selected !== holds : !selected) t.fail(`case ${index}: ${selected ? 'selects' : 'leaves out'} ${JSON.stringify(row)} (the condition ${holds ? 'holds' : 'does not hold'}): ${JSON.stringify(made.filter)}`);
    });
  }
  t.ok(held > 50 && vouched > 100 && unvouched > 50, `${held} rows the condition holds for, ${vouched} whose copy vouches, ${unvouched} whose copy cannot`);
});

t.test('the backfill gives rows without a copy theirs, a bounded batch at a time, each update naming the text and version it read (scripted primary)', async (t) => {
  const older = Array.from({ length: BACKFILL_BATCH + 3 }, (_, index) => {
    const entity = entityOf(`doc:${String(index).padStart(4, '0')}`, { level: index, ...(index === 1 ? { $x: 1 } : {}) });
    return { _id: entity.uri, document: JSON.stringify(entity), ...(index % 2 === 0 ? { version: 4 } : {}) };
  });
  const mongo = await scriptedMongo((command) => {
    if (command.name !== 'find' || command.body.find !== 'entities') return undefined;
    const filter = command.body.filter as Document;
    if (filter.attributes_version === undefined) return undefined;
    const after = (filter._id as { $gt?: string } | undefined)?.$gt ?? '';
    return found(command, older.filter((row) => row._id > after).slice(0, command.body.limit as number));
  });
  const store = await MongoStore.open({ uri: mongo.uri, database: 'verdict', serverSelectionTimeoutMS: 2000 });
  t.teardown(async () => {
    await store.close();
    await mongo.close();
  });
  // The backfill runs in the background once the store is open (see mongodb-maintenance.ts).
  await until(() => mongo.received.filter((command) => command.name === 'update' && command.body.update === 'entities').length === 2, 'the backfill to write both batches');
  const reads = mongo.received.filter((command) => command.name === 'find' && command.body.find === 'entities' && (command.body.filter as Document).attributes_version !== undefined);
  t.same(
    reads.map((command) => [command.body.filter, command.body.limit]),
    [
      [{ attributes_version: { $exists: false } }, 1],
      [{ attributes_version: { $exists: false } }, BACKFILL_BATCH],
      [{ attributes_version: { $exists: false }, _id: { $gt: older[BACKFILL_BATCH - 1]!._id } }, BACKFILL_BATCH],
    ],
    'a look for one row left without its copy, then two reads of a batch each, the second after the first',
  );
  const updates = mongo.received.filter((command) => command.name === 'update' && command.body.update === 'entities').map((command) => command.body.updates as Document[]);
  t.same(updates.map((batch) => batch.length), [BACKFILL_BATCH, 3], 'one batch of updates per read');
  const [first, second] = updates.flat();
  t.same(first, {
    q: { _id: older[0]!._id, document: older[0]!.document, version: 4, attributes_version: { $exists: false } },
    u: { $set: { attributes: { level: 0 }, attributes_version: 4 } },
  }, 'the copy, of the version read, where the row is still as read');
  t.same(second!.q.version, { $exists: false }, 'a row without a version: still without one');
  t.same(second!.u.$set, { attributes: null, attributes_version: 0 }, 'attributes MongoDB cannot hold as written: a null copy');
  t.ok(mongo.received.some((command) => command.name === 'createIndexes' && (command.body.indexes as Document[]).some((index) => index.key.attributes_version === 1)), 'found by an index, not a collection scan');
});

t.test('every entity write sends the copy in the same write as the text, of the version it writes (scripted primary)', async (t) => {
  const stored = entityOf('doc:old', { level: 1 });
  const mongo = await scriptedMongo((command) =>
    command.name === 'find' && command.body.find === 'entities' && (command.body.filter as Document)._id === 'doc:old'
      ? found(command, [{ _id: 'doc:old', position: 1, version: 3, document: JSON.stringify(stored) }])
      : undefined,
  );
  const store = await MongoStore.open({ uri: mongo.uri, database: 'verdict', serverSelectionTimeoutMS: 2000 });
  t.teardown(async () => {
    await store.close();
    await mongo.close();
  });
  const writes = () => mongo.received.filter((command) => ['insert', 'update'].includes(command.name) && command.body[command.name] === 'entities');
  await store.createEntity(entityOf('doc:one', { level: 1 }), TEST_WRITER);
  await store.createEntities([entityOf('doc:two', { level: 2 }), entityOf('doc:three', { $x: 3 })], TEST_WRITER);
  await store.updateEntity('doc:old', () => entityOf('doc:old', { level: 4 }), TEST_WRITER);
  const [one, many, update] = writes();
  const copies = (documents: Document[]) => documents.map(({ _id, version, attributes, attributes_version }) => ({ _id, version, attributes, attributes_version }));
  t.same(copies(one!.body.documents as Document[]), [{ _id: 'doc:one', version: 1, attributes: { level: 1 }, attributes_version: 1 }], 'a registration');
  t.same(
    copies(many!.body.documents as Document[]),
    [
      { _id: 'doc:two', version: 1, attributes: { level: 2 }, attributes_version: 1 },
      { _id: 'doc:three', version: 1, attributes: null, attributes_version: 1 },
    ],
    'a batch, each row with its own copy (or none)',
  );
  const [{ u }] = update!.body.updates as [{ u: Document }];
  t.same(u.$set, { document: JSON.stringify(entityOf('doc:old', { level: 4 })), version: 4, attributes: { level: 4 }, attributes_version: 4 }, 'an update, at the version after the one read');
});

const mongo = await reachableMongo();
const skip = 'skipped' in mongo ? mongo.skipped : false;
if ('skipped' in mongo) console.log(`# narrowed listings and the backfill on MongoDB SKIPPED: ${mongo.skipped}`);
else t.teardown(mongo.stop);

/** A store on a fresh database of the real MongoDB, a collection handle on its entities, and how to open another store on it. */
async function withMongoStores(t: Test, use: (store: MongoStore, raw: Collection<Document>, open: () => Promise<MongoStore>) => Promise<void>) {
  const reached = mongo as ReachableMongo;
  const { MongoClient } = await import('mongodb');
  const database = reached.freshDatabase();
  const client = await MongoClient.connect(reached.uri);
  const stores: MongoStore[] = [];
  // The stores first: one that saw its database dropped would make its set-up again there.
  t.teardown(async () => {
    for (const store of stores) await store.close();
    await client.db(database).dropDatabase();
    await client.close();
  });
  const raw = client.db(database).collection<Document>('entities');
  const open = async () => {
    const opened = await MongoStore.open({ uri: reached.uri, database });
    stores.push(opened);
    return opened;
  };
  await use(await open(), raw, open);
}

t.test('mongodb: a narrowed listing leaves out only entities the condition does not hold for, in pages as the whole listing (60 cases)', { skip }, async (t) => {
  await withMongoStores(t, async (store) => {
    let [listed, heldFor] = [0, 0];
    for (const [index, example] of fc.sample(planCase, { numRuns: 60, seed: 43 }).entries()) {
      const made = planned(example);
      if (made === undefined) continue;
      const prefix = `case${index}:`;
      const entities = entitiesOf(example).map((entity) => ({ ...entity, uri: prefix + entity.uri }));
      await store.createEntities(entities, TEST_WRITER);
      const whole = (await store.listEntitiesUnder(prefix, '', 1000)).map((entity) => entity.uri);
      const narrowed = (await store.listEntitiesUnder(prefix, '', 1000, made.filter)).map((entity) => entity.uri);
      const allowed = entities.filter(made.holds).map((entity) => entity.uri);
      const copied = new Set(entities.filter((entity) => queryableFields(entity, JSON.stringify(entity), 1).attributes !== null).map((entity) => entity.uri));
      const expected = whole.filter((uri) => allowed.includes(uri) || !copied.has(uri));
      t.same(narrowed, expected, `case ${index}: those the condition holds for, and those without a copy, in uri order`);
      const paged: string[] = [];
      for (let page = await store.listEntitiesUnder(prefix, '', 2, made.filter); page.length > 0; page = await store.listEntitiesUnder(prefix, paged.at(-1)!, 2, made.filter)) {
        paged.push(...page.map((entity) => entity.uri));
      }
      t.same(paged, narrowed, `case ${index}: the same, two at a time`);
      listed += whole.length;
      heldFor += allowed.length;
    }
    t.ok(listed > 100 && heldFor > 10, `${listed} entities listed, ${heldFor} of them held for`);
  });
});

t.test('mongodb: rows written before copies were kept are listed by every narrowed listing, and given a copy at the next start', { skip }, async (t) => {
  await withMongoStores(t, async (store, raw, open) => {
    const high = entityOf('doc:high', { level: 5 });
    const low = entityOf('doc:low', { level: 1 });
    await raw.insertMany([high, low].map((entity, position) => ({ _id: entity.uri as never, position: 1000 + position, document: JSON.stringify(entity) })));
    const filter = { 'attributes.level': { $gt: 3 } };
    const narrowed = async (on: MongoStore) => (await on.listEntitiesUnder('doc:', '', 10, filter)).map((entity) => entity.uri);
    t.same(await narrowed(store), ['doc:high', 'doc:low'], 'without a copy, both are candidates');
    const [restarted, alongside] = await Promise.all([open(), open()]);
    t.same(await narrowed(restarted), ['doc:high'], 'backfilled at start, by two processes at once: only the one the filter selects');
    t.same(await narrowed(alongside), ['doc:high'], 'the same for both');
    t.same(await raw.findOne({ _id: 'doc:low' as never }, { projection: { _id: 0, attributes: 1, attributes_version: 1 } }), { attributes: { level: 1 }, attributes_version: 0 }, 'the copy of the row as it was');
    await raw.updateOne({ _id: 'doc:low' as never }, { $set: { document: JSON.stringify(entityOf('doc:low', { level: 9 })) }, $inc: { version: 1 } });
    t.same(await narrowed(restarted), ['doc:high', 'doc:low'], 'a row rewritten as an older release does (the text only): a candidate again');
    await restarted.updateEntity('doc:low', () => entityOf('doc:low', { level: 2 }), TEST_WRITER);
    t.same(await narrowed(restarted), ['doc:high'], 'rewritten by this release: its copy vouches again');
    await restarted.createEntity(entityOf('doc:new', { level: 7 }), TEST_WRITER);
    t.same(await narrowed(restarted), ['doc:high', 'doc:new'], 'a registration is selected by its copy');
  });
});
