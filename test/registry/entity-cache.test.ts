import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { EmbeddedStore } from '../../src/store/embedded/store.js';
import { EntityAttributeCache } from '../../src/registry/entity-cache.js';
import type { Entity } from '../../src/schemas/entity.js';
import { startServer, temporaryDataDir } from '../helpers/server.js';
import { interceptedStore } from '../helpers/intercepted-store.js';
import { TEST_WRITER } from '../helpers/writer.js';

// --entity-cache-size: registered entities kept in memory for checks (LRU; filled after start,
// beside the first checks; misses read the store). The cache answers a hit at once and a miss with a promise (it reads the store),
// which tells from outside which entities it holds.

const REGISTERED_AT = '2026-01-01T00:00:00.000Z';
const entity = (level: number): Entity => ({
  uri: `user:${level}`,
  type: 'principal',
  attributes: [{ key: 'level', value: level, updated_at: REGISTERED_AT, registered_at: REGISTERED_AT }],
  registered_at: REGISTERED_AT,
});

t.test('a cache of two: the first two registered are loaded at start, then the least recently used goes first', async (t) => {
  const dir = temporaryDataDir();
  const store = new EmbeddedStore(dir);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  for (let level = 0; level < 5; level++) await store.createEntity(entity(level), TEST_WRITER);
  const cache = new EntityAttributeCache(store, 2, 1 << 20);
  await cache.warm();

  /** The level of `uri` and whether the cache held it; a miss loads it, and so changes what is held. */
  const look = async (uri: string) => {
    const found = cache.lookup(uri);
    return { held: !(found instanceof Promise), level: (await found)?.get('level') };
  };
  t.same(await look('user:0'), { held: true, level: 0 }, 'loaded at start');
  t.same(await look('user:1'), { held: true, level: 1 }, 'loaded at start');
  t.same(await look('user:2'), { held: false, level: 2 }, 'beyond the size: read from the store');
  t.same(await look('user:2'), { held: true, level: 2 }, 'and kept');
  t.same(await look('user:1'), { held: true, level: 1 }, 'the more recently used of the first two is kept');
  t.same(await look('user:0'), { held: false, level: 0 }, 'the least recently used went first');
  t.same(await look('user:2'), { held: false, level: 2 }, 'then the next least recently used');
  t.same(await look('user:0'), { held: true, level: 0 });
  t.same(await look('nobody'), { held: false, level: undefined }, 'an unregistered uri is read once');
  t.same(await look('nobody'), { held: true, level: undefined }, 'and remembered as such');
});

t.test('a server with --entity-cache-size 2 decides on every one of many registered entities, and on their updates', async (t) => {
  const server = await startServer({ entityCacheSize: 2 });
  t.teardown(server.close);
  const registry = '/admin/fetchers/registry/entities';
  for (let level = 0; level < 6; level++) t.equal((await server.call('POST', registry, { uri: `user:${level}`, attributes: { level } })).status, 200);
  const policy = {
    name: 'seniors',
    rules: [{ name: 'level-3-up', effect: 'allow', principal_conditions: [{ path: 'attributes.level', operator: 'gte', value: 3 }], resource_conditions: [], actions: ['read'] }],
  };
  t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
  const decide = async (level: number) =>
    (await server.call('POST', '/check', { principal: { uri: `user:${level}` }, resource: { attributes: { kind: 'doc' } }, action: 'read' })).body.allowed;
  const expected = [false, false, false, true, true, true];
  for (const round of [1, 2]) {
    const decided = [];
    for (let level = 0; level < 6; level++) decided.push(await decide(level));
    t.same(decided, expected, `round ${round}: each entity decided on its own attributes`);
  }
  t.equal((await server.call('PUT', `${registry}/user%3A0`, { uri: 'user:0', attributes: { level: 9 } })).status, 200);
  t.equal(await decide(0), true, 'an update reaches the checks');
  for (let level = 1; level < 6; level++) await decide(level);
  t.equal(await decide(0), true, 'and stays after the entity was evicted and read again');
});

// The warm-up runs beside the checks after a start, so writes can land while it reads. The store is
// real; its page reads are intercepted only to place a write at the exact moment between a page's
// read and its use.

const withRole = (uri: string, role: string): Entity => ({
  uri,
  type: 'principal',
  attributes: [{ key: 'role', value: role, updated_at: REGISTERED_AT, registered_at: REGISTERED_AT }],
  registered_at: REGISTERED_AT,
});

async function storeWith(t: Test, count: number, role: string): Promise<EmbeddedStore> {
  const dataDir = temporaryDataDir();
  const store = new EmbeddedStore(dataDir);
  t.teardown(async () => {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  await store.createEntities(Array.from({ length: count }, (_, index) => withRole(`user:${index}`, role)), TEST_WRITER);
  return store;
}

t.test('a page read while its entity was written is not cached: the check sees the write', async (t) => {
  const store = await storeWith(t, 3, 'guest');
  let cache: EntityAttributeCache;
  const racing = interceptedStore(store, {
    listEntitiesAfter: async (proceed) => {
      const page = await proceed();
      // Another writer changes user:1 after the page was read; the change feed invalidates it.
      await store.updateEntity('user:1', () => withRole('user:1', 'staff'), TEST_WRITER);
      cache.invalidate('user:1');
      return page;
    },
  });
  cache = new EntityAttributeCache(racing, 100, 1 << 20);
  await cache.warm();
  t.same(await cache.lookup('user:1'), new Map([['role', 'staff']]), 'the attributes as written, not as the page held them');
});

t.test('a look-up read while its entity was written is not cached: the next check sees the write', async (t) => {
  const store = await storeWith(t, 1, 'guest');
  let cache: EntityAttributeCache;
  let racing = true;
  const raced = interceptedStore(store, {
    getEntity: async (proceed) => {
      const entity = await proceed();
      if (racing) {
        racing = false;
        // Another writer changes user:0 after the look-up read it; the change feed invalidates it.
        await store.updateEntity('user:0', () => withRole('user:0', 'staff'), TEST_WRITER);
        cache.invalidate('user:0');
      }
      return entity;
    },
  });
  cache = new EntityAttributeCache(raced, 100, 1 << 20);
  t.same(await cache.lookup('user:0'), new Map([['role', 'guest']]), 'the racing look-up answers what it read');
  const next = cache.lookup('user:0');
  t.ok(next instanceof Promise, 'what it read was not kept');
  t.same(await next, new Map([['role', 'staff']]), 'the attributes as written');
  t.same(cache.lookup('user:0'), new Map([['role', 'staff']]), 'and those are kept');
});

t.test('closing stops a warm-up between pages', async (t) => {
  const store = await storeWith(t, 30, 'guest');
  let pages = 0;
  let cache: EntityAttributeCache;
  const counting = interceptedStore(store, {
    listEntitiesAfter: async (proceed) => {
      pages++;
      cache.close();
      return proceed();
    },
  });
  cache = new EntityAttributeCache(counting, 100, 1 << 20);
  await cache.warm(10);
  t.equal(pages, 1, 'no page is read after close');
  t.ok(cache.lookup('user:0') instanceof Promise, 'and the page read during close is not kept');
});

t.test('the warm-up reads pages after the last uri of the one before, never a skip past what it read', async (t) => {
  const store = await storeWith(t, 25, 'guest');
  const asked: [string, number][] = [];
  const recording = interceptedStore(store, {
    listEntitiesAfter: async (proceed, [after, limit]) => {
      asked.push([after as string, limit as number]);
      return proceed();
    },
  });
  const cache = new EntityAttributeCache(recording, 100, 1 << 20);
  await cache.warm(10);
  const uris = Array.from({ length: 25 }, (_, index) => `user:${index}`).sort();
  t.same(asked, [['', 10], [uris[9]!, 10], [uris[19]!, 10]], 'each page after the last of the one before');
  for (const uri of uris) t.same(cache.lookup(uri), new Map([['role', 'guest']]), `${uri} is in memory`);
});
