import t, { type Test } from 'tap';
import type { Document } from 'mongodb';
import { MongoStore } from '../../src/store/mongodb/store.js';
import { ENTITY_READ_BOUND_MS } from '../../src/store/mongodb/entities.js';
import { LEASE_MS, MAINTENANCE_LEASE } from '../../src/store/mongodb/maintenance.js';
import { found, NO_ANSWER, scriptedMongo, type Answer, type Received } from '../helpers/scripted-mongo.js';
import { until } from '../helpers/until.js';
import { TEST_WRITER } from '../helpers/writer.js';
import { SchemasMovedOn, StoreUnavailableError } from '../../src/store/errors.js';

// A fleet's start on a large registry: the store opens without waiting on anything whose cost grows
// with the registry (index builds, the backfill, the recount), which then run in the background, the
// backfill and recount under a lease so that one process of the fleet does them. Checked on a
// scripted stand-in for a primary (no MongoDB server runs here) through the real driver.

async function open(t: Test, uri: string, maintenance = true): Promise<MongoStore> {
  const store = await MongoStore.open({ uri, database: 'verdict', serverSelectionTimeoutMS: 2000, maintenance });
  t.teardown(() => store.close());
  return store;
}

const named = (commands: Received[], name: string, collection?: string) =>
  commands.filter((command) => command.name === name && (collection === undefined || command.body[name] === collection));

t.test('a primary that never answers createIndexes still lets the store open; /ready is told the builds are not done', async (t) => {
  const server = await scriptedMongo((command) => (command.name === 'createIndexes' ? NO_ANSWER : undefined));
  t.teardown(() => server.close());
  const store = await open(t, server.uri);
  t.pass('open');
  t.same(await store.loadPolicies().then((loaded) => loaded.policies), [], 'and serving');
  await until(() => named(server.received, 'createIndexes').length > 0, 'an index build to be asked for');
  t.match(store.maintenance!.status(), /^index builds not done yet/);
  const build = named(server.received, 'createIndexes')[0]!;
  t.equal(build.body.commitQuorum, 'majority', 'a build commits once a majority has it, so a member down does not stop it');
});

/** The values a lease write's pipeline `$set` gives, as MongoDB computes them: its time is the primary's (`$$NOW`), here this process's own. */
function pipelineSet(update: Document[]): Document {
  const stage = update[0]!.$set as Document;
  const value = (expression: Document) => {
    if (JSON.stringify(expression) !== JSON.stringify({ $add: [{ $toLong: '$$NOW' }, LEASE_MS] })) throw new Error(`a lease end not read from the primary's clock: ${JSON.stringify(expression)}`);
    return Date.now() + LEASE_MS;
  };
  return Object.fromEntries(Object.entries(stage).map(([field, expression]) => [field, field === 'value' ? value(expression as Document) : (expression as Document).$literal]));
}

/**
 * A primary holding entity rows written before queryable copies were kept, the indexes built (as
 * listIndexes lists them), and the maintenance lease as MongoDB would: taken by an upsert whose filter
 * (read as MongoDB reads it: the `$or` of a lease that ended by the primary's clock and its own
 * holder's) matches it, or refused as a duplicate key. Its entity count is exact.
 */
function fleetPrimary(pendingRows: Document[], leaseAsStored?: Document): { answer: Answer; backfillWrites: () => number; refusedToItsHolder: () => number } {
  let lease: Document | undefined = leaseAsStored;
  let pending = pendingRows;
  let writes = 0;
  /** Times the lease's own holder asked to renew it and was refused, as if another held it. */
  let refusedToHolder = 0;
  /** The indexes built, by collection, as listIndexes lists them. */
  const built = new Map<string, Document[]>();
  const answer: Answer = (command) => {
    const { name, body } = command;
    if (name === 'createIndexes') {
      const collection = body.createIndexes as string;
      built.set(collection, [...(built.get(collection) ?? []), ...(body.indexes as Document[]).map(({ name: index, unique }) => ({ name: index, ...(unique !== undefined && { unique }) }))]);
      return { ok: 1 };
    }
    if (name === 'listIndexes') return found(command, built.get(body.listIndexes as string) ?? []);
    if (name === 'findAndModify' && body.findAndModify === 'counters' && (body.query as Document)._id === MAINTENANCE_LEASE) {
      const alternatives = ((body.query as Document).$or ?? []) as Document[];
      const ended = { $expr: { $lt: ['$value', { $toLong: '$$NOW' }] } };
      const matches = (alternative: Document) =>
        (JSON.stringify(alternative) === JSON.stringify(ended) && lease!.value < Date.now()) || (alternative.holder !== undefined && lease!.holder === alternative.holder);
      const free = lease === undefined || alternatives.some(matches);
      const asked = pipelineSet(body.update as Document[]);
      if (!free && lease!.holder === asked.holder) refusedToHolder++;
      if (!free) return { ok: 0, code: 11000, codeName: 'DuplicateKey', errmsg: `E11000 duplicate key error collection: verdict.counters index: _id_ dup key: { _id: "${MAINTENANCE_LEASE}" }` };
      lease = { ...lease, _id: MAINTENANCE_LEASE, ...asked };
      return { value: lease, lastErrorObject: { n: 1, updatedExisting: true }, ok: 1 };
    }
    if (name === 'update' && body.update === 'counters' && (body.updates as Document[])[0]!.q._id === MAINTENANCE_LEASE) {
      const { q, u } = (body.updates as Document[])[0]!;
      if (lease?.holder !== q.holder) return { n: 0, nModified: 0, ok: 1 };
      const set = Array.isArray(u) ? pipelineSet(u as Document[]) : (u.$set ?? {});
      lease = { ...lease, ...set, ...(u.$addToSet ? { done: [...(lease!.done ?? []), u.$addToSet.done] } : {}) };
      return { n: 1, nModified: 1, ok: 1 };
    }
    if (name === 'find' && body.find === 'counters' && (body.filter as Document)._id === MAINTENANCE_LEASE) return found(command, lease ? [lease] : []);
    // The entity count is exact, and the estimate (the stand-in's `count`: 0) agrees: no recount is due.
    if (name === 'find' && body.find === 'counters' && (body.filter as Document)._id === 'entity-count') return found(command, [{ _id: 'entity-count', value: 0, exact: true }]);
    if (name === 'find' && body.find === 'entities' && (body.filter as Document).attributes_version !== undefined) {
      // A look for one (findOne) leaves the rows pending; the backfill's batch takes them.
      if (body.limit === 1 || body.singleBatch === true) return found(command, pending.slice(0, 1));
      const rows = pending;
      pending = [];
      return found(command, rows);
    }
    if (name === 'update' && body.update === 'entities') writes += (body.updates as Document[]).length;
    return undefined;
  };
  return { answer, backfillWrites: () => writes, refusedToItsHolder: () => refusedToHolder };
}

t.test('two stores opened together backfill once: one holds the lease and writes, the other finds it done', async (t) => {
  const rows = ['user:a', 'user:b', 'user:c'].map((uri, version) => ({ _id: uri, document: JSON.stringify({ uri, type: 'principal', attributes: [{ key: 'n', value: version }] }), version: 1 }));
  const primary = fleetPrimary(rows);
  const server = await scriptedMongo(primary.answer);
  t.teardown(() => server.close());
  const [first, second] = await Promise.all([open(t, server.uri), open(t, server.uri)]);
  await until(() => first.maintenance!.status() === undefined && second.maintenance!.status() === undefined, 'both to be done', 30_000);
  t.equal(primary.backfillWrites(), rows.length, 'each row written once, by one store');
  const leases = named(server.received, 'findAndModify', 'counters').filter((command) => (command.body.query as Document)._id === MAINTENANCE_LEASE);
  t.equal(new Set(leases.map((command) => pipelineSet(command.body.update as Document[]).holder)).size, 2, 'both asked for the lease');
  t.equal(primary.refusedToItsHolder(), 0, 'its holder renews the lease it holds, step after step, without waiting for it to run out');
});

t.test("the lease is taken, renewed and compared by the primary's clock: no lease write carries this process's time (scripted primary)", async (t) => {
  const rows = ['user:a', 'user:b'].map((uri) => ({ _id: uri, document: JSON.stringify({ uri, type: 'principal', attributes: [] }), version: 1 }));
  const server = await scriptedMongo(fleetPrimary(rows).answer);
  t.teardown(() => server.close());
  const store = await open(t, server.uri);
  await until(() => store.maintenance!.status() === undefined, 'maintenance done', 30_000);
  const leaseWrites = server.received.filter(
    (command) =>
      (command.name === 'findAndModify' && command.body.findAndModify === 'counters' && (command.body.query as Document)._id === MAINTENANCE_LEASE) ||
      (command.name === 'update' && command.body.update === 'counters' && (command.body.updates as Document[])[0]!.q._id === MAINTENANCE_LEASE),
  );
  t.ok(leaseWrites.length >= 2, `the lease taken and renewed: ${leaseWrites.length} writes`);
  const day = 24 * 3600 * 1000;
  const times = leaseWrites.flatMap((command) => JSON.stringify(command.body).match(/\d{12,}/g) ?? []).map(Number).filter((number) => Math.abs(number - Date.now()) < day);
  t.same(times, [], "none names a time of this process's clock");
  t.ok(leaseWrites.every((command) => JSON.stringify(command.body).includes('$$NOW') || JSON.stringify(command.body).includes('$addToSet')), 'each reads the primary\'s ($$NOW), but the marks of steps done');
});

t.test('with maintenance off, the store creates, drops and writes nothing of its own: a decision-only sidecar', async (t) => {
  const server = await scriptedMongo();
  t.teardown(() => server.close());
  const store = await open(t, server.uri, false);
  await store.loadPolicies();
  await store.getEntity('user:a');
  const own = server.operations().filter((command) => ['createIndexes', 'dropIndexes', 'insert', 'update', 'delete', 'findAndModify', 'drop', 'create'].includes(command.name));
  t.same(own.map((command) => `${command.name}:${String(command.body[command.name])}`), [], 'only reads');
  t.equal(store.maintenance, undefined, 'and no maintenance to report');
});

t.test("a check's entity read goes to a secondary while there is no primary, and waits a bounded time (scripted primary)", async (t) => {
  const server = await scriptedMongo((command) => (command.name === 'find' && command.body.find === 'entities' && (command.body.filter as Document)._id === 'user:slow' ? NO_ANSWER : undefined));
  t.teardown(() => server.close());
  const store = await open(t, server.uri, false);
  t.equal(await store.getEntity('user:a'), undefined);
  const read = named(server.received, 'find', 'entities').at(-1)!;
  t.equal((read.body.$readPreference as Document | undefined)?.mode, 'primaryPreferred', 'the primary, or during an election a secondary');
  const refused = await store.getEntity('user:slow').then(
    () => undefined,
    (error: Error) => error,
  );
  t.match(refused?.message, new RegExp(`no member answered a read of entity 'user:slow' within ${ENTITY_READ_BOUND_MS} ms`), 'a 503, not a wait for the whole selection timeout');
});

t.test('a write checked against other schemas than the store holds is refused in its transaction, nothing committed (scripted primary)', async (t) => {
  const server = await scriptedMongo((command) =>
    command.name === 'find' && command.body.find === 'schemas' ? found(command, [{ _id: 'document', document: '{"principal":{}}', version: 2 }]) : undefined,
  );
  t.teardown(() => server.close());
  const store = await open(t, server.uri, false);
  const before = server.received.length;
  const refused = await store.createEntity({ uri: 'user:a', type: null, attributes: [], registered_at: '2026-01-01T00:00:00.000Z' }, TEST_WRITER, { schemasVersion: 1 }).then(
    () => undefined,
    (error: Error) => error,
  );
  t.type(refused, SchemasMovedOn);
  t.match(refused?.message, /changed in the store \(version 2\) since this process applied the ones it checked the write against \(version 1\)/);
  const sent = server.received.slice(before).map((command) => command.name);
  t.notOk(sent.includes('commitTransaction') || sent.includes('insert'), `nothing inserted or committed (${sent.join(', ')})`);
});

t.test('three stores opened against an index build that never ends: one of them asks for it, once, and holds the lease meanwhile (scripted primary)', async (t) => {
  const primary = fleetPrimary([]);
  const server = await scriptedMongo((command) => (command.name === 'createIndexes' ? NO_ANSWER : primary.answer(command)));
  t.teardown(() => server.close());
  await Promise.all([open(t, server.uri), open(t, server.uri), open(t, server.uri)]);
  const leaseAsks = () => named(server.received, 'findAndModify', 'counters').filter((command) => (command.body.query as Document)._id === MAINTENANCE_LEASE);
  const asksBy = (holder: string) => leaseAsks().filter((command) => pipelineSet(command.body.update as Document[]).holder === holder).length;
  // Each of the other two has tried the lease, been refused, and tried again.
  await until(() => {
    const holders = [...new Set(leaseAsks().map((command) => pipelineSet(command.body.update as Document[]).holder as string))];
    return holders.length === 3 && holders.filter((holder) => asksBy(holder) >= 2).length >= 2;
  }, 'every store to have asked for the lease, and two of them again', 30_000);
  t.equal(named(server.received, 'createIndexes').length, 1, 'one build in flight, from the lease holder, never sent again');
});

t.test('rows written without their queryable copy after a backfill was marked done are backfilled all the same (scripted primary)', async (t) => {
  const rows = ['user:late-1', 'user:late-2'].map((uri) => ({ _id: uri, document: JSON.stringify({ uri, type: 'principal', attributes: [{ key: 'n', value: 1 }] }), version: 1 }));
  // The lease of an earlier release's run: expired, its backfill and recount marked done.
  const primary = fleetPrimary(rows, { _id: MAINTENANCE_LEASE, value: 0, holder: 'an-earlier-process', done: ['backfill', 'recount'] });
  const server = await scriptedMongo(primary.answer);
  t.teardown(() => server.close());
  await open(t, server.uri);
  await until(() => primary.backfillWrites() === rows.length, 'the late rows to be backfilled', 20_000);
  t.pass('each late row written once');
});

/** Rows one read may scan before it runs out of its time, in the registry primary below (a count of a large registry within 5 s). */
const SCANNED_IN_TIME = 10_000;
const TIME_RAN_OUT = { ok: 0, code: 50, codeName: 'MaxTimeMSExpired', errmsg: 'operation exceeded time limit' };

/**
 * A primary holding a registry of `uris` and the entity count's counter document, as MongoDB keeps
 * them: the rows read in uri order from the `_id` index, the counter updated by `$set`, `$inc` and
 * `$unset`, the collection's estimate off by `estimateOff` (as it may be after an unclean shutdown).
 * Any one read of more than SCANNED_IN_TIME rows (a count of them all, say) runs out of time.
 * Everything else is the fleet primary's.
 */
function registryPrimary(uris: string[], counter: Document | undefined) {
  const fleet = fleetPrimary([]);
  const state = { counter, estimateOff: 0, batchReads: [] as number[] };
  const applied = (kept: Document, update: Document): Document => {
    const next = structuredClone(kept);
    for (const [field, value] of Object.entries((update.$set ?? {}) as Document)) next[field] = value;
    for (const [field, value] of Object.entries((update.$inc ?? {}) as Document)) {
      const [top, inner] = field.split('.') as [string, string | undefined];
      if (inner === undefined) next[top] = (next[top] ?? 0) + (value as number);
      else next[top] = { ...next[top], [inner]: (next[top]?.[inner] ?? 0) + (value as number) };
    }
    for (const field of Object.keys((update.$unset ?? {}) as Document)) delete next[field];
    return next;
  };
  const answer: Answer = (command) => {
    const { name, body } = command;
    const collection = body[name];
    if (name === 'count' && collection === 'entities') return { n: uris.length + state.estimateOff, ok: 1 };
    if (name === 'aggregate' && collection === 'entities') return uris.length > SCANNED_IN_TIME ? TIME_RAN_OUT : found(command, [{ _id: 1, n: uris.length }]);
    if (name === 'find' && collection === 'entities' && (body.filter as Document)._id?.$gt !== undefined) {
      const limit = body.limit as number | undefined;
      if (limit === undefined || limit > SCANNED_IN_TIME) return TIME_RAN_OUT;
      state.batchReads.push(limit);
      const after = (body.filter as Document)._id.$gt as string;
      return found(command, uris.filter((uri) => uri > after).slice(0, limit).map((uri) => ({ _id: uri })));
    }
    if (name === 'find' && collection === 'counters' && (body.filter as Document)._id === 'entity-count') return found(command, state.counter ? [state.counter] : []);
    if (name === 'update' && collection === 'counters' && (body.updates as Document[])[0]!.q._id === 'entity-count') {
      const { q, u, upsert } = (body.updates as Document[])[0]!;
      const matches = state.counter !== undefined && (q.recount?.$exists !== false || state.counter.recount === undefined) && (q.value === undefined || q.value === state.counter.value);
      if (matches) state.counter = applied(state.counter!, u as Document);
      else if (upsert && state.counter === undefined) state.counter = applied({ _id: 'entity-count' }, u as Document);
      else if (upsert) return { ok: 0, code: 11000, codeName: 'DuplicateKey', errmsg: 'E11000 duplicate key error collection: verdict.counters index: _id_ dup key: { _id: "entity-count" }' };
      return { n: matches ? 1 : 0, nModified: matches ? 1 : 0, ok: 1 };
    }
    return fleet.answer(command);
  };
  return { answer, state };
}

const registryOf = (size: number) => Array.from({ length: size }, (_, index) => `user:${String(index).padStart(6, '0')}`);

t.test('a registry too large to count in one bounded read is counted exact, in batches of uris, none reading more than it may (scripted primary)', async (t) => {
  // The count an earlier release kept: never made exact, and off by ten.
  const primary = registryPrimary(registryOf(25_000), { _id: 'entity-count', value: 24_990 });
  const server = await scriptedMongo(primary.answer);
  t.teardown(() => server.close());
  const store = await open(t, server.uri);
  await until(() => store.maintenance!.status() === undefined, 'maintenance done', 30_000);
  t.match(primary.state.counter, { value: 25_000, exact: true, drift: 0 }, 'the count exact, and the estimate noted beside it');
  t.notOk('recount' in primary.state.counter!, 'no recount left under way');
  t.same(primary.state.batchReads, [10_000, 10_000, 10_000], 'three batches of uris, each a bounded read');
  t.equal(await store.countEntities(), 25_000, '$count reads it');

  // Taken again (as every hour): the estimate has not moved from the count, so nothing is read.
  store.maintenance!.start();
  await until(() => store.maintenance!.status() === undefined, 'maintenance done again', 30_000);
  t.equal(primary.state.batchReads.length, 3, 'no recount while the estimate keeps its distance');
  // Rows removed by hand: the estimate moves away from the count, and the registry is counted again.
  primary.state.estimateOff = -5;
  store.maintenance!.start();
  await until(() => primary.state.batchReads.length === 6 && store.maintenance!.status() === undefined, 'a second recount', 30_000);
  t.match(primary.state.counter, { value: 25_000, exact: true, drift: -5 }, 'counted again; the new distance noted');
});

t.test('a write during a recount moves its running count for the uris it has passed, and only those (scripted primary)', async (t) => {
  const primary = registryPrimary(registryOf(3), { _id: 'entity-count', value: 7, exact: true, recount: { after: 'user:m', value: 5 } });
  const server = await scriptedMongo(primary.answer);
  t.teardown(() => server.close());
  const store = await open(t, server.uri, false);
  const entity = (uri: string) => ({ uri, type: 'principal' as const, attributes: [], registered_at: '2026-01-01T00:00:00.000Z' });
  await store.createEntities([entity('user:a'), entity('user:z')], TEST_WRITER);
  t.match(primary.state.counter, { value: 9, recount: { after: 'user:m', value: 6 } }, 'two registered; one of them before the recount\'s place');
  await store.createEntity(entity('user:y'), TEST_WRITER);
  t.match(primary.state.counter, { value: 10, recount: { value: 6 } }, 'one registered past it: counted when the recount reaches it');
  primary.state.counter = { ...primary.state.counter!, recount: { after: 'user:m', value: 6 } };
  // The stand-in finds the row (the store reads it before deleting it).
  const deleting = await scriptedMongo((command) =>
    command.name === 'find' && command.body.find === 'entities' && (command.body.filter as Document)._id === 'user:b'
      ? found(command, [{ _id: 'user:b', document: JSON.stringify(entity('user:b')), version: 1 }])
      : primary.answer(command),
  );
  t.teardown(() => deleting.close());
  const other = await open(t, deleting.uri, false);
  t.equal(await other.deleteEntity('user:b', TEST_WRITER), true);
  t.match(primary.state.counter, { value: 9, recount: { value: 5 } }, 'one deleted before its place: taken from both');
});

t.test('$count never scans a large registry on request: while the kept count is not exact, it counts for a bounded time, then answers that it cannot yet (scripted primary)', async (t) => {
  const large = registryPrimary(registryOf(25_000), { _id: 'entity-count', value: 24_990, recount: { after: 'user:010000', value: 10_000 } });
  const server = await scriptedMongo(large.answer);
  t.teardown(() => server.close());
  const store = await open(t, server.uri, false);
  const refused = await store.countEntities().then(
    () => undefined,
    (error: Error) => error,
  );
  t.type(refused, StoreUnavailableError, 'answered 503');
  t.match(refused?.message, /too large to count on request.*being made exact \(10000 counted so far\); ask again once it is/);
  const counts = named(server.received, 'aggregate', 'entities');
  t.equal(counts.at(-1)?.body.maxTimeMS, 1000, 'the count it tried was bounded');

  const small = registryPrimary(registryOf(12), { _id: 'entity-count', value: 10 });
  const smallServer = await scriptedMongo(small.answer);
  t.teardown(() => smallServer.close());
  t.equal(await (await open(t, smallServer.uri, false)).countEntities(), 12, 'a small registry is counted on request, exactly');
});
