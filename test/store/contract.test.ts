import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { EmbeddedStore } from '../../src/store/embedded/store.js';
import { MongoStore } from '../../src/store/mongodb/store.js';
import { type AuditObserver, type LoadedPolicyChanges, type Store, type StoreChange, type StoreOptions } from '../../src/store/store.js';
import { DuplicateKeyError, SchemasMovedOn } from '../../src/store/errors.js';
import type { AuditRecord } from '../../src/audit/record.js';
import type { Policy } from '../../src/schemas/policy.js';
import type { Entity } from '../../src/schemas/entity.js';
import { temporaryDataDir } from '../helpers/server.js';
import { reachableMongo } from '../helpers/mongo.js';
import { TEST_WRITER } from '../helpers/writer.js';
import { until } from '../helpers/until.js';

/** Two handles on one backing store (two processes' view of it), and how to drop it afterwards. */
interface Backing {
  open(options?: Partial<StoreOptions>): Promise<Store>;
  drop(): Promise<void>;
}

const policy = (name: string, extra: Partial<Policy> = {}): Policy => ({
  version: '1.0',
  name,
  description: null,
  rules: [{ name: 'r', effect: 'allow', principal_conditions: [], resource_conditions: [], actions: ['read'] }],
  default_effect: 'deny',
  ...extra,
});

const entity = (uri: string, values: Record<string, unknown> = { a: 1 }): Entity => ({
  uri,
  type: 'principal',
  attributes: Object.entries(values).map(([key, value]) => ({ key, value, updated_at: 't1', registered_at: 't0' })),
  registered_at: 't0',
});


async function refusedAsDuplicate(t: Test, write: Promise<unknown>): Promise<void> {
  await write.then(
    () => t.fail('a duplicate was accepted'),
    (error: unknown) => t.type(error, DuplicateKeyError, 'refused as a duplicate'),
  );
}

const by = TEST_WRITER;

/** What a list of records says, compactly: operation, target and (for policies) version. */
const summary = (records: AuditRecord[]) => records.map((record) => [record.operation, record.target, 'version' in record ? record.version : null]);

/** The contract every store keeps; run on each driver. */
/** Two handles on a fresh backing store (`store` opened with `options`), both closed and the store dropped when `t` ends. */
async function openHandles(t: Test, backing: () => Promise<Backing>, options?: Partial<StoreOptions>): Promise<{ store: Store; other: Store }> {
  const { open, drop } = await backing();
  const opened: Store[] = [];
  t.teardown(async () => {
    for (const handle of opened) await handle.close();
    await drop();
  });
  const store = await open(options);
  opened.push(store);
  const other = await open();
  opened.push(other);
  return { store, other };
}

function contract(t: Test, name: string, backing: () => Promise<Backing>): void {
  auditContract(t, name, backing);
  entityBatchContract(t, name, backing);
  entityRangeContract(t, name, backing);
  policyChangesContract(t, name, backing);
  schemasContract(t, name, backing);

  t.test(`${name}: the store contract`, async (t) => {
    const { store, other } = await openHandles(t, backing);

    const { revision: firstRevision, policies: firstPolicies } = await store.loadPolicies();
    t.same({ revision: firstRevision, policies: firstPolicies }, { revision: 0, policies: [] }, 'starts empty at revision 0');
    await store.createPolicy(policy('first'), by);
    await store.createPolicy(policy('second', { description: 'two', default_effect: 'allow' }), by);
    await refusedAsDuplicate(t, store.createPolicy(policy('first'), by));
    t.equal(await store.policyRevision(), 2, 'a refused duplicate does not move the revision');
    t.same(await store.getPolicy('second'), policy('second', { description: 'two', default_effect: 'allow' }));
    t.equal(await store.getPolicy('absent'), undefined);
    t.equal(await store.replacePolicy(policy('first', { description: 'replaced' }), by), true);
    t.equal(await store.replacePolicy(policy('absent'), by), false);
    const loaded = await other.loadPolicies();
    t.same(loaded.policies.map((p) => [p.name, p.description]), [['first', 'replaced'], ['second', 'two']], 'creation order kept by a replace');
    t.equal(loaded.revision, 3);
    t.equal(await store.deletePolicy('first', by), true);
    t.equal(await store.deletePolicy('first', by), false);
    t.same((await other.loadPolicies()).policies.map((p) => p.name), ['second']);

    const shadow = policy('second-next', { shadow: 'second', description: 'two, next' });
    await store.createPolicy(shadow, by);
    const beforePromote = await store.policyRevision();
    t.equal(await store.promotePolicy(policy('second', { description: 'two, next' }), 'absent', shadow, by), 'gone', 'no promote without its shadow');
    t.equal(await store.promotePolicy(policy('absent', { description: 'x' }), 'second-next', shadow, by), 'gone', 'no promote without the live policy');
    const staleRead = policy('second-next', { shadow: 'second', description: 'two, as read before an edit' });
    t.equal(await store.promotePolicy(policy('second', { description: 'two, as read before an edit' }), 'second-next', staleRead, by), 'changed', 'no promote of a shadow edited since it was read: the edit is not lost');
    t.equal(await store.policyRevision(), beforePromote, 'a promote refused writes nothing');
    t.equal(await store.promotePolicy(policy('second', { description: 'two, next' }), 'second-next', shadow, by), 'promoted');
    t.same(
      (await other.loadPolicies()).policies.map((p) => [p.name, p.description]),
      [['second', 'two, next']],
      "a promote replaces the live policy in its place and deletes the shadow, in one write",
    );
    const promoteRecords = await other.listAudit({ limit: 2 });
    t.same(
      promoteRecords.map((record) => [record.operation, record.target]).sort(),
      [['policy.delete', 'policy:second-next'], ['policy.replace', 'policy:second']],
      'both halves of the promote are audited',
    );

    const values = { number: 1.5, integer: 7, text: '123', flag: false, nothing: null, list: [1, 'a', [true]], nested: JSON.parse('{"__proto__":{"x":1},"a.b":{"$c":2}}') };
    await store.createEntity(entity('user:all-types', values), by);
    t.equal(JSON.stringify(await other.getEntity('user:all-types')), JSON.stringify(entity('user:all-types', values)), 'values keep their JSON types');
    await refusedAsDuplicate(t, store.createEntity(entity('user:all-types'), by));
    for (let index = 0; index < 5; index++) await store.createEntity(entity(`user:${index}`), by);
    t.equal(await other.countEntities(), 6);
    t.same((await other.listEntities(2, 3)).map((e) => e.uri), ['user:1', 'user:2', 'user:3'], 'registration order, paginated');
    t.same(await other.listEntities(100, 10), []);
    t.same(await other.listEntities(0, 0), [], 'a limit of 0 is an empty page, not the whole registry');
    const updated = await store.updateEntity('user:1', (stored) => ({ ...stored, type: 'resource' }), by);
    t.equal(updated?.type, 'resource');
    t.equal((await other.getEntity('user:1'))?.type, 'resource');
    t.equal(await store.updateEntity('absent', (stored) => stored, by), undefined);
    t.equal(await store.deleteEntity('user:1', by), true);
    t.equal(await store.deleteEntity('user:1', by), false);
    t.equal(await other.getEntity('user:1'), undefined);

    // The feed follows from a load's position: a write between the load and the watch is heard too.
    const heard: StoreChange[] = [];
    const { feedPosition } = await other.loadPolicies();
    await store.createPolicy(policy('third'), by);
    const stop = other.watch((change) => heard.push(change), feedPosition);
    await store.createEntity(entity('user:new'), by);
    await store.deleteEntity('user:new', by);
    await until(() => heard.filter((change) => change.kind === 'entity').length >= 2 && heard.some((c) => c.kind === 'policies'), 'the changes');
    stop();
    t.same(
      heard.flatMap((change) => (change.kind === 'entity' ? [change.uri] : [])),
      ['user:new', 'user:new'],
    );
    t.ok(
      heard.every((change) => 'committedAt' in change && typeof change.committedAt === 'number'),
      'every change says when it was committed',
    );
    t.ok(heard.some((change) => change.kind === 'policies'), 'a policy change is announced');
  });
}

/** What a load since a revision says, compactly: the revision, and each changed policy's description and position (null: deleted), by name. */
function changesOf(loaded: LoadedPolicyChanges) {
  if (!('changes' in loaded)) return { revision: loaded.revision, whole: loaded.policies.map((p) => p.name) };
  const changes = [...loaded.changes].sort((a, b) => a.name.localeCompare(b.name));
  return { revision: loaded.revision, changes: changes.map(({ name, now }) => [name, now === null ? null : [now.policy.description, now.position]]) };
}

/** Loading only the policies written since a revision: what a process that holds that revision needs to catch up. */
function policyChangesContract(t: Test, name: string, backing: () => Promise<Backing>): void {
  t.test(`${name}: the policies written since a revision, as they stand now`, async (t) => {
    const { store, other } = await openHandles(t, backing);
    for (const created of ['a', 'b', 'c']) await store.createPolicy(policy(created, { description: `${created}1` }), by);
    const whole = await other.loadPolicies();
    const [a, b, c] = whole.positions!;
    t.ok(a! < b! && b! < c!, 'a whole load gives each policy its position, increasing in creation order');

    await store.replacePolicy(policy('a', { description: 'a2' }), by);
    await store.deletePolicy('b', by);
    await store.createPolicy(policy('d', { description: 'd1' }), by);
    await store.deletePolicy('c', by);
    await store.restorePolicy(policy('c', { description: 'c1' }), 1, by);
    const since = changesOf(await other.loadPolicies(3));
    t.equal(since.revision, 8);
    const positionOf = (changed: string) => (since.changes!.find(([name]) => name === changed)![1] as [string, number])[1];
    const [aNow, cNow, dNow] = [positionOf('a'), positionOf('c'), positionOf('d')];
    t.same(
      since.changes,
      [['a', ['a2', a]], ['b', null], ['c', ['c1', cNow]], ['d', ['d1', dNow]]],
      'each policy written since, once, as it stands: replaced in place, deleted, restored and created',
    );
    t.equal(aNow, a, 'a replaced policy keeps its position');
    t.ok(c! < dNow! && dNow! < cNow!, 'a policy restored after its deletion comes after every other');
    t.same(changesOf(await other.loadPolicies(7)), { revision: 8, changes: [['c', ['c1', cNow]]] }, 'only what was written after the revision');
    t.same(changesOf(await other.loadPolicies(8)), { revision: 8, changes: [] }, 'nothing at the current revision');
    t.same(changesOf(await other.loadPolicies(9)), { revision: 8, whole: ['a', 'd', 'c'] }, 'the whole set when the revision is ahead of the store (it was dropped and refilled)');
    const { epoch } = await other.loadPolicies();
    const changed = await other.loadPolicies(7);
    t.equal('changes' in changed && changed.epoch, epoch, 'changes carry the epoch of the whole set they apply to');
  });
}

/** The attribute schema document: written, replaced, deleted and restored as policy revisions, each with its audit record, heard by the other handle. */
function schemasContract(t: Test, name: string, backing: () => Promise<Backing>): void {
  t.test(`${name}: the schema document travels with the policies, audited and versioned`, async (t) => {
    const heard: string[] = [];
    const observer: AuditObserver = { recorded: (operation) => heard.push(operation), failed: () => heard.push('failed') };
    const { store, other } = await openHandles(t, backing, { observer });
    const first = { principal: { attributes: { type: 'object', properties: { level: { type: 'integer' } } } } };
    const second = JSON.parse('{"resource": {"types": {"doc": {"type": "object", "properties": {"__proto__": {"type": "string"}}}}}}');
    t.equal((await other.loadPolicies()).schemas, undefined, 'no document at first');
    t.equal(await store.deleteSchemas(by), false, 'deleting none is no write');

    await store.createPolicy(policy('a'), by);
    const changes: StoreChange[] = [];
    const stop = other.watch((change) => changes.push(change));
    t.equal(await store.writeSchemas(first, by), 1, 'the first write makes version 1');
    t.equal(await store.policyRevision(), 2, 'a schema write moves the policy revision');
    await until(() => changes.length > 0, 'the schema write heard');
    stop();
    t.same(changes.map((change) => change.kind), ['policies'], 'heard as a policy change');
    t.same((await other.loadPolicies()).schemas, { document: first, version: 1 }, 'loaded with the policies, as written');
    t.same(changesOf(await other.loadPolicies(1)), { revision: 2, whole: ['a'] }, 'a load since a revision before a schema write is the whole set');
    t.same((await other.loadPolicies(1) as { schemas?: unknown }).schemas, { document: first, version: 1 }, 'with the document');
    await store.createPolicy(policy('b'), by);
    t.same(changesOf(await other.loadPolicies(2)), { revision: 3, changes: [['b', [null, (await other.loadPolicies()).positions![1]]]] }, 'policies written after it load as changes');

    t.equal(await store.writeSchemas(second, by), 2);
    t.equal(JSON.stringify((await other.loadPolicies()).schemas), JSON.stringify({ document: second, version: 2 }), 'any key kept as it is');
    t.equal(await store.deleteSchemas(by), 3, 'a deletion makes a version');
    t.equal((await other.loadPolicies()).schemas, undefined, 'none after a deletion');
    t.equal(await store.policyRevision(), 5);
    t.equal(await store.writeSchemas(first, by, 1), 4, 'a restore makes a version');

    const records = await other.listAudit({ target: 'schemas', limit: 10 });
    t.same(summary(records), [
      ['schemas.restore', 'schemas', 4],
      ['schemas.delete', 'schemas', 3],
      ['schemas.replace', 'schemas', 2],
      ['schemas.replace', 'schemas', 1],
    ], 'one record per write, newest first');
    const [restored, deleted, replaced, created] = records as any[];
    t.same([created.before, created.after], [null, first]);
    t.equal(JSON.stringify([replaced.before, replaced.after]), JSON.stringify([first, second]));
    t.equal(JSON.stringify([deleted.before, deleted.after]), JSON.stringify([second, null]));
    t.same([restored.before, restored.after, restored.restored_from], [null, first, 1]);
    t.match(restored, { actor: by.actor, client: by.client, request_id: by.requestId, route: by.route }, 'names its writer');
    t.same(summary([(await other.schemasVersion(3))!]), [['schemas.delete', 'schemas', 3]], 'a version by number');
    t.equal(await other.schemasVersion(9), undefined);
    t.equal(await other.policyVersion('schemas', 1), undefined, 'not a policy version');
    t.same(heard, ['policy.create', 'schemas.replace', 'policy.create', 'schemas.replace', 'schemas.delete', 'schemas.restore'], 'the observer hears each commit');
  });

  t.test(`${name}: a write checked against schemas the store no longer holds is refused, not applied`, async (t) => {
    const heard: string[] = [];
    const observer: AuditObserver = { recorded: (operation) => heard.push(operation), failed: () => heard.push('failed') };
    const { store, other } = await openHandles(t, backing, { observer });
    const schemas = { principal: { attributes: { type: 'object' } } };
    const none = { schemasVersion: undefined };
    await store.createEntity(entity('user:before'), by, none);
    t.equal(await store.writeSchemas(schemas, by), 1);
    const stale: [string, () => Promise<unknown>][] = [
      ['a registration', () => other.createEntity(entity('user:a'), by, none)],
      ['a batch', () => other.createEntities([entity('user:b')], by, none)],
      ['an update', () => other.updateEntity('user:before', (before) => before, by, none)],
      ['a policy', () => other.createPolicy(policy('p'), by, none)],
    ];
    for (const [what, write] of stale) {
      const refused = await write().then(() => undefined, (error: unknown) => error);
      t.ok(refused instanceof SchemasMovedOn, `${what} checked against no schemas, with version 1 stored: ${String(refused)}`);
    }
    t.equal(await other.getEntity('user:a'), undefined, 'nothing was applied');
    t.equal(await other.getPolicy('p'), undefined);
    await other.createEntity(entity('user:a'), by, { schemasVersion: 1 });
    t.ok(await other.getEntity('user:a'), 'checked against the version stored: applied');
    await store.deleteSchemas(by);
    await other.createPolicy(policy('p'), by, none);
    t.ok(await other.getPolicy('p'), 'after a deletion, none is what the store holds');
    t.notOk(heard.includes('failed'), 'a refusal, not a failed audit write');
  });
}

/** The audit operations: a record per write, in its transaction; reads with filters and a cursor; retention. */
/** Registering many entities at once: all or none, in order, each audited, heard by the other handle uri by uri. */
function entityBatchContract(t: Test, name: string, backing: () => Promise<Backing>): void {
  t.test(`${name}: entities registered in one batch`, async (t) => {
    const { store, other } = await openHandles(t, backing);
    await store.createEntity(entity('user:before'), by);
    const heard: string[] = [];
    const { feedPosition } = await other.loadPolicies();
    const stop = other.watch((change) => {
      if (change.kind === 'entity') heard.push(change.uri);
    }, feedPosition);
    t.teardown(stop);

    const batch = Array.from({ length: 250 }, (_, index) => entity(`user:batch-${index}`, { index }));
    await store.createEntities(batch, by);
    t.equal(await other.countEntities(), 251, 'every entity of the batch is registered');
    t.same((await other.listEntities(0, 3)).map((e) => e.uri), ['user:before', 'user:batch-0', 'user:batch-1'], 'after what was there, in the order given');
    t.same((await other.listEntities(250, 5)).map((e) => e.uri), ['user:batch-249']);
    t.equal(JSON.stringify(await other.getEntity('user:batch-7')), JSON.stringify(batch[7]), 'stored as given');
    const audited = await other.listAudit({ limit: 1000 });
    t.same(
      audited.filter((record) => record.operation === 'entity.create').map((record) => record.target).reverse(),
      ['entity:user:before', ...batch.map((e) => `entity:${e.uri}`)],
      'each registration audited, in order',
    );

    const taken = [entity('user:fresh-1'), entity('user:fresh-2'), entity('user:batch-100'), entity('user:fresh-3')];
    await store.createEntities(taken, by).then(
      () => t.fail('a batch with a taken uri was accepted'),
      (error: unknown) => {
        t.type(error, DuplicateKeyError, 'refused as a duplicate');
        t.equal((error as DuplicateKeyError).key, 'user:batch-100', 'naming the uri that is taken');
      },
    );
    t.equal(await other.countEntities(), 251, 'nothing of a refused batch is registered');
    t.equal(await other.getEntity('user:fresh-1'), undefined, 'not even the items before the duplicate');
    t.equal((await other.listAudit({ limit: 1000 })).length, audited.length, 'nor audited');
    await store.createEntities([entity('user:after')], by);
    t.same((await other.listEntities(251, 5)).map((e) => e.uri), ['user:after'], 'a later batch follows in order');

    await until(() => heard.includes('user:after'), 'the batch announced');
    t.same(heard, [...batch.map((e) => e.uri), 'user:after'], 'each registered uri is announced once, in order; a refused batch is not');
  });
}

function entityRangeContract(t: Test, name: string, backing: () => Promise<Backing>): void {
  t.test(`${name}: the entities under a uri prefix, in the byte order of UTF-8, after a uri`, async (t) => {
    const { store, other } = await openHandles(t, backing);
    // Registered out of order, with neighbours of the prefix on both sides; U+FFFD sorts before U+1F600 in UTF-8 (not in UTF-16).
    const under = ['user:b', 'user:\u{1F600}', 'user:a', 'user:\uFFFD', 'user:\u00e9', 'user:'];
    await store.createEntities(['use:r', 'user', 'users:x', 'user;z', 'userz', ...under].map((uri) => entity(uri)), by);
    const uris = async (after: string, limit: number) => (await other.listEntitiesUnder('user:', after, limit)).map((e) => e.uri);
    const inOrder = ['user:', 'user:a', 'user:b', 'user:\u00e9', 'user:\uFFFD', 'user:\u{1F600}'];
    t.same(await uris('', 100), inOrder, 'only uris under the prefix, in UTF-8 byte order');
    t.same(await uris('', 2), inOrder.slice(0, 2), 'a limit');
    t.same(await uris('user:a', 2), ['user:b', 'user:\u00e9'], 'after a uri');
    t.same(await uris('user:aa', 100), inOrder.slice(2), 'after a uri that is not registered');
    t.same(await uris('user:\u{1F600}', 100), [], 'after the last');
    t.same(await uris('', 0), [], 'a limit of 0 is an empty page');
    t.same((await other.listEntitiesUnder('users:', '', 10)).map((e) => e.uri), ['users:x']);
    t.same(await other.listEntitiesUnder('group:', '', 10), []);
    t.equal(JSON.stringify((await other.listEntitiesUnder('user:', 'user:', 1))[0]), JSON.stringify(entity('user:a')), 'stored as given');
    const all = ['use:r', 'user', 'users:x', 'user;z', 'userz', ...under].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const after = async (uri: string, limit: number) => (await other.listEntitiesAfter(uri, limit)).map((e) => e.uri);
    t.same(await after('', 100), all, 'every entity after nothing, in UTF-8 byte order (the warm-up)');
    t.same([...(await after('', 4)), ...(await after(all[3]!, 4)), ...(await after(all[7]!, 4))], all, 'pages after the last uri of the page before');
    t.same(await after('', 0), [], 'a limit of 0 is an empty page');
  });
}

function auditContract(t: Test, name: string, backing: () => Promise<Backing>): void {
  t.test(`${name}: every write commits one audit record with it`, async (t) => {
    const heard: string[] = [];
    const observer: AuditObserver = { recorded: (operation) => heard.push(operation), failed: () => heard.push('failed') };
    const { store, other } = await openHandles(t, backing, { observer });
    t.same(await store.listAudit({ limit: 10 }), [], 'starts with no records');

    const started = Date.now();
    await store.createPolicy(policy('first'), by);
    await refusedAsDuplicate(t, store.createPolicy(policy('first', { description: 'again' }), by));
    await store.replacePolicy(policy('first', { description: 'replaced' }), by);
    t.equal(await store.replacePolicy(policy('absent'), by), false);
    await store.deletePolicy('first', by);
    t.equal(await store.deletePolicy('first', by), false);
    await store.createEntity(entity('user:a', { secret: 's1', kept: 1 }), by);
    await refusedAsDuplicate(t, store.createEntity(entity('user:a'), by));
    await store.updateEntity('user:a', (stored) => ({ ...stored, attributes: [...stored.attributes.filter((a) => a.key !== 'secret'), { key: 'secret', value: 's2', updated_at: 't2', registered_at: 't0' }, { key: 'added', value: true, updated_at: 't2', registered_at: 't2' }] }), by);
    t.equal(await store.updateEntity('absent', (stored) => stored, by), undefined);
    await store
      .updateEntity('user:a', () => { throw new Error('the change failed'); }, by)
      .then(() => t.fail('a failing change was committed'), (error: Error) => t.equal(error.message, 'the change failed'));
    await store.deleteEntity('user:a', by);
    t.equal(await store.deleteEntity('user:a', by), false);

    const records = await other.listAudit({ limit: 100 });
    t.same(summary(records), [
      ['entity.delete', 'entity:user:a', null],
      ['entity.update', 'entity:user:a', null],
      ['entity.create', 'entity:user:a', null],
      ['policy.delete', 'policy:first', 3],
      ['policy.replace', 'policy:first', 2],
      ['policy.create', 'policy:first', 1],
    ], 'one record per write that changed something, newest first; refused, absent and failed writes leave none');
    t.same(heard, ['policy.create', 'policy.replace', 'policy.delete', 'entity.create', 'entity.update', 'failed', 'entity.delete'], 'the observer hears each commit and the failed write');
    t.ok(records.every((record, index) => index === 0 || record.id < records[index - 1]!.id), 'ids grow with every record');
    for (const record of records) {
      t.match(record, { actor: by.actor, client: by.client, request_id: by.requestId, route: by.route }, `${record.operation} names its writer`);
      t.ok(Date.parse(record.time) >= started - 1 && Date.parse(record.time) <= Date.now(), `${record.operation} has its time`);
    }
    const [deleted, updated, created, policyDeleted, replaced, policyCreated] = records as any[];
    t.same([policyCreated.before, policyCreated.after], [null, policy('first')], 'a creation: nothing before, the policy after');
    t.same([replaced.before, replaced.after], [policy('first'), policy('first', { description: 'replaced' })]);
    t.same([policyDeleted.before, policyDeleted.after], [policy('first', { description: 'replaced' }), null]);
    t.same(created.changed_keys, ['kept', 'secret']);
    t.same(created.after, { type: 'principal', keys: ['secret', 'kept'] }, 'attribute values are not recorded by default');
    t.notOk(JSON.stringify(records).includes('s1'), 'no value appears anywhere in the records');
    t.same(updated.changed_keys, ['added', 'secret'], 'only the keys whose values changed');
    t.same([deleted.before, deleted.after, deleted.changed_keys], [{ type: 'principal', keys: ['kept', 'secret', 'added'] }, null, ['added', 'kept', 'secret']]);
    t.equal(await other.getEntity('user:a'), undefined);

    t.same(summary([(await other.policyVersion('first', 2))!]), [['policy.replace', 'policy:first', 2]], 'a version by number');
    t.equal(await other.policyVersion('first', 9), undefined);
    t.equal(await other.policyVersion('absent', 1), undefined);
  });

  t.test(`${name}: restoring a version, of a deleted policy too`, async (t) => {
    const { store } = await openHandles(t, backing);
    await store.createPolicy(policy('a', { description: 'v1' }), by);
    await store.createPolicy(policy('b'), by);
    await store.replacePolicy(policy('a', { description: 'v2' }), by);
    await store.restorePolicy(policy('a', { description: 'v1' }), 1, by);
    t.same((await store.loadPolicies()).policies.map((p) => [p.name, p.description]), [['a', 'v1'], ['b', null]], 'in place, keeping its position');
    await store.deletePolicy('a', by);
    const revision = await store.policyRevision();
    await store.restorePolicy(policy('a', { description: 'v2' }), 2, by);
    t.equal(await store.policyRevision(), revision + 1, 'a restore moves the revision');
    t.same((await store.loadPolicies()).policies.map((p) => [p.name, p.description]), [['b', null], ['a', 'v2']], 'a deleted policy comes back, last');
    const [restored, , firstRestore] = (await store.listAudit({ target: 'policy:a', limit: 10 })) as any[];
    t.match(restored, { operation: 'policy.restore', version: 5, restored_from: 2, before: null, after: policy('a', { description: 'v2' }) });
    t.match(firstRestore, { operation: 'policy.restore', version: 3, restored_from: 1, before: policy('a', { description: 'v2' }) });
    await store.createPolicy(policy('a-2'), by);
    t.same(summary(await store.listAudit({ target: 'policy:a', limit: 10 })).map(([, , version]) => version), [5, 4, 3, 2, 1], 'versions count per policy');
  });

  t.test(`${name}: audit queries and the cursor`, async (t) => {
    const { store } = await openHandles(t, backing);
    const alice = { ...by, actor: 'alice' };
    await store.createPolicy(policy('p1'), by);
    await store.createEntity(entity('user:1'), alice);
    await store.createEntity(entity('user:1x'), by);
    await store.createPolicy(policy('p2'), alice);
    await store.createEntity(entity('group:1'), alice);
    const all = await store.listAudit({ limit: 100 });
    t.equal(all.length, 5);
    t.same(summary(await store.listAudit({ target: 'entity:user:1', limit: 10 })), [['entity.create', 'entity:user:1', null]], 'an exact target');
    t.same(
      summary(await store.listAudit({ target: 'entity:user:1', targetPrefix: true, limit: 10 })).map(([, target]) => target),
      ['entity:user:1x', 'entity:user:1'],
      'a target prefix',
    );
    t.same(summary(await store.listAudit({ target: 'entity:', targetPrefix: true, actor: 'alice', limit: 10 })).map(([, target]) => target), ['entity:group:1', 'entity:user:1'], 'filters combine');
    t.same((await store.listAudit({ actor: 'alice', limit: 2 })).map((r) => r.id), [all[0]!.id, all[1]!.id], 'limit');
    t.same((await store.listAudit({ before: all[1]!.id, limit: 10 })).map((r) => r.id), all.slice(2).map((r) => r.id), 'older than a cursor');
    const middle = Date.parse(all[2]!.time);
    const since = await store.listAudit({ since: middle, limit: 10 });
    const until = await store.listAudit({ until: middle, limit: 10 });
    t.equal(since.length + until.length, 5, 'since and until split the records');
    t.ok(since.every((r) => Date.parse(r.time) >= middle) && until.every((r) => Date.parse(r.time) < middle));
    t.same(await store.listAudit({ actor: 'nobody', limit: 10 }), []);
  });

  t.test(`${name}: retention prunes the oldest records, a batch at a time`, async (t) => {
    // The store's clock, moved by the test: a busy machine's pause between two statements cannot age a record.
    let now = Date.parse('2026-01-01T00:00:00Z');
    const { store } = await openHandles(t, backing, { clock: () => now });
    for (let index = 0; index < 7; index++) {
      now += 1000;
      await store.createEntity(entity(`user:${index}`), by);
    }
    const all = await store.listAudit({ limit: 10 });
    t.equal(await store.pruneAudit({ maxCount: 3 }, 2), 2, 'at most a batch');
    t.equal(await store.pruneAudit({ maxCount: 3 }, 5), 2, 'then the rest');
    t.equal(await store.pruneAudit({ maxCount: 3 }, 5), 0, 'then nothing');
    t.same((await store.listAudit({ limit: 10 })).map((r) => r.id), all.slice(0, 3).map((r) => r.id), 'the newest are kept');
    now += 60_000;
    const ageOfSecondNewest = now - Date.parse(all[1]!.time);
    t.equal(await store.pruneAudit({ maxAgeMs: ageOfSecondNewest }, 10), 1, 'only the record older than the age goes');
    t.same((await store.listAudit({ limit: 10 })).map((r) => r.id), all.slice(0, 2).map((r) => r.id), 'a record exactly the age old, and the newest, are kept');
    t.equal(await store.pruneAudit({}, 10), 0, 'no limits prune nothing');
  });

  t.test(`${name}: --audit-values records attribute values`, async (t) => {
    const { store } = await openHandles(t, backing, { auditValues: true });
    await store.createEntity(entity('user:v', { secret: 's1', nested: { a: [1] } }), by);
    await store.updateEntity('user:v', (stored) => ({ ...stored, attributes: stored.attributes.map((a) => (a.key === 'secret' ? { ...a, value: 's2' } : a)) }), by);
    const [updated, created] = (await store.listAudit({ limit: 10 })) as any[];
    t.same(created.after, { type: 'principal', attributes: { secret: 's1', nested: { a: [1] } } });
    t.same([updated.changed_keys, updated.before.attributes.secret, updated.after.attributes.secret], [['secret'], 's1', 's2']);
  });
}

contract(t, 'embedded', async () => {
  const dataDir = temporaryDataDir();
  return { open: async (options) => new EmbeddedStore(dataDir, options), drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
});

t.test('embedded: a load since a revision the kept log no longer reaches back to is the whole set', async (t) => {
  const dataDir = temporaryDataDir();
  const store = new EmbeddedStore(dataDir, { changesKept: 2 });
  t.teardown(async () => {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  for (const created of ['a', 'b', 'c', 'd']) await store.createPolicy(policy(created), by);
  t.same(changesOf(await store.loadPolicies(1)), { revision: 4, whole: ['a', 'b', 'c', 'd'] }, 'three revisions back, two kept');
  t.same(changesOf(await store.loadPolicies(2)), { revision: 4, changes: [['c', [null, 3]], ['d', [null, 4]]] }, 'two back, as kept');
});

const mongo = await reachableMongo();
if ('skipped' in mongo) {
  console.log(`# MongoDB store contract SKIPPED: ${mongo.skipped}`);
  t.test('mongodb: the store contract', { skip: mongo.skipped }, () => undefined);
} else {
  t.teardown(mongo.stop);
  contract(t, 'mongodb', async () => {
    const database = mongo.freshDatabase();
    return { open: (options) => MongoStore.open({ ...options, uri: mongo.uri, database }), drop: () => mongo.dropDatabase(database) };
  });
}
