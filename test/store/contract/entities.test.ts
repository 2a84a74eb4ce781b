import { DuplicateKeyError } from '../../../src/store/errors.js';
import { by, entity, onEveryDriver, openHandles, refusedAsDuplicate, type Contract } from './harness.js';
import { until } from '../../helpers/until.js';

// The entity registry's contract (EntityReads, EntityWrites): every driver keeps it.

const entitiesContract: Contract = (t, name, backing) => {
  t.test(`${name}: entities registered, listed, updated and deleted`, async (t) => {
    const { store, other } = await openHandles(t, backing);

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
  });

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
};

await onEveryDriver('entity registry', entitiesContract);
