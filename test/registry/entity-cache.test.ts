import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { EmbeddedStore } from '../../src/store/embedded.js';
import { EntityAttributeCache } from '../../src/registry/entity-cache.js';
import { temporaryDataDir } from '../helpers/server.js';
import { interceptedStore } from '../helpers/intercepted-store.js';
import { TEST_WRITER } from '../helpers/writer.js';

// The cache warms up beside the checks after a start (see EntityAttributeCache.warm), so writes can
// land while it reads. The store is real; its page reads are intercepted only to place a write at
// the exact moment between a page's read and its use.

const at = '2026-01-01T00:00:00.000Z';
const entity = (uri: string, role: string) => ({
  uri,
  type: 'principal' as const,
  attributes: [{ key: 'role', value: role, updated_at: at, registered_at: at }],
  registered_at: at,
});

async function storeWith(t: Test, count: number): Promise<EmbeddedStore> {
  const dataDir = temporaryDataDir();
  const store = new EmbeddedStore(dataDir);
  t.teardown(async () => {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  await store.createEntities(Array.from({ length: count }, (_, index) => entity(`user:${index}`, 'guest')), TEST_WRITER);
  return store;
}

t.test('a warm-up fills the cache: every entity is then answered from memory, without a store read', async (t) => {
  const store = await storeWith(t, 25);
  const cache = new EntityAttributeCache(store, 100);
  await cache.warm(10);
  const answers = Array.from({ length: 25 }, (_, index) => cache.lookup(`user:${index}`));
  t.equal(answers.filter((answer) => answer instanceof Promise).length, 0, 'no lookup waits on the store');
  t.same(answers, Array(25).fill(new Map([['role', 'guest']])));
});

t.test('a page read while its entity was written is not cached: the check sees the write', async (t) => {
  const store = await storeWith(t, 3);
  let cache: EntityAttributeCache;
  const racing = interceptedStore(store, {
    listEntities: async (proceed) => {
      const page = await proceed();
      // Another writer changes user:1 after the page was read; the change feed invalidates it.
      await store.updateEntity('user:1', () => entity('user:1', 'staff'), TEST_WRITER);
      cache.invalidate('user:1');
      return page;
    },
  });
  cache = new EntityAttributeCache(racing, 100);
  await cache.warm();
  t.same(await cache.lookup('user:1'), new Map([['role', 'staff']]), 'the attributes as written, not as the page held them');
});

t.test('closing stops a warm-up between pages', async (t) => {
  const store = await storeWith(t, 30);
  let pages = 0;
  let cache: EntityAttributeCache;
  const counting = interceptedStore(store, {
    listEntities: async (proceed) => {
      pages++;
      cache.close();
      return proceed();
    },
  });
  cache = new EntityAttributeCache(counting, 100);
  await cache.warm(10);
  t.equal(pages, 1, 'no page is read after close');
  t.ok(cache.lookup('user:0') instanceof Promise, 'and the page read during close is not kept');
});
