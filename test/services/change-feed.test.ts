import t from 'tap';
import { rmSync } from 'node:fs';
import pino from 'pino';
import { EmbeddedStore } from '../../src/store/embedded/store.js';
import { PolicySnapshots } from '../../src/snapshot/policy-snapshots.js';
import { EntityAttributeCache } from '../../src/registry/entity-cache.js';
import { ChangeFeed } from '../../src/services/change-feed.js';
import { followChanges } from '../../src/snapshot/follow-changes.js';
import type { Entity } from '../../src/schemas/entity.js';
import { temporaryDataDir } from '../helpers/server.js';
import { TEST_WRITER } from '../helpers/writer.js';
import { until } from '../helpers/until.js';

// The decision change feed says `"entities": "all"` whenever this process forgets every registered
// entity: here, when the store's own feed lost track of another process's writes (its change log
// moved past this process's position), so a caching client drops everything it holds.

const entity = (uri: string): Entity => ({ uri, type: 'principal', attributes: [{ key: 'role', value: 'x', updated_at: 't1', registered_at: 't0' }], registered_at: 't0' });

t.test('a process whose store feed lost track of another process tells its feed readers that all entities changed', async (t) => {
  const dataDir = temporaryDataDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  // The other process keeps only two changes: five writes between two polls leave a gap.
  const other = new EmbeddedStore(dataDir, { changesKept: 2 });
  const ours = new EmbeddedStore(dataDir);
  t.teardown(async () => {
    await other.close();
    await ours.close();
  });
  const snapshots = await PolicySnapshots.load(ours);
  const entities = new EntityAttributeCache(ours, 100, 1 << 20);
  const feed = new ChangeFeed(snapshots, entities);
  const stopFollowing = followChanges(ours, snapshots, entities, pino({ level: 'silent' }));
  t.teardown(() => {
    stopFollowing();
    feed.close();
    entities.close();
    snapshots.close();
  });
  const lines: string[] = [];
  feed.subscribe((line) => lines.push(line));
  for (let index = 0; index < 5; index++) await other.createEntity(entity(`user:${index}`), TEST_WRITER);
  await until(() => lines.some((line) => line.includes('"entities"')), 'an entities line');
  t.match(lines.find((line) => line.includes('"entities"')), /"entities":"all"/, 'all of them, not the two the log still holds');
});
