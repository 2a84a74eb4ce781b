import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { EmbeddedStore } from '../src/store/embedded.js';
import type { StoreChange } from '../src/store/store.js';
import type { Policy } from '../src/schemas/policy.js';
import { temporaryDataDir } from './helpers/server.js';
import { TEST_WRITER } from './helpers/writer.js';

// Two connections to one data directory stand for two processes: what one commits, the other's
// feed reports, in commit order.

const policy = (name: string): Policy => ({ version: '1.0', name, description: null, rules: [], default_effect: 'deny' });
const entity = (uri: string) => ({ uri, type: null, attributes: [], registered_at: '2026-01-01T00:00:00.000Z' });

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let waited = 0; waited < 5000; waited += 10) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`gave up waiting for ${what}`);
}

function pair(t: Test, changesKept?: number) {
  const dataDir = temporaryDataDir();
  const writer = new EmbeddedStore(dataDir, { changesKept });
  const follower = new EmbeddedStore(dataDir, { changesKept });
  const heard: StoreChange[] = [];
  const stop = follower.watch((change) => heard.push(change));
  t.teardown(async () => {
    stop();
    await writer.close();
    await follower.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { writer, follower, heard };
}

/** A change without its commit time, so that changes compare by what they name. */
const untimed = (change: StoreChange) => ('committedAt' in change ? { ...change, committedAt: undefined } : change);
const entityChange = (uri: string) => ({ kind: 'entity', uri, committedAt: undefined });

t.test('every write of another connection reaches the feed, in order, with its commit time', async (t) => {
  const { writer, follower, heard } = pair(t);
  const since = Date.now();
  await writer.createEntity(entity('user:a'), TEST_WRITER);
  await until(() => heard.length === 1, 'the entity registration');
  t.same(heard.map(untimed), [entityChange('user:a')]);
  const committedAt = (heard[0] as { committedAt: number }).committedAt;
  t.ok(committedAt >= since && committedAt <= Date.now(), 'committed during the test');
  await writer.createPolicy(policy('p'), TEST_WRITER);
  await writer.replacePolicy(policy('p'), TEST_WRITER);
  await writer.updateEntity('user:a', (stored) => stored, TEST_WRITER);
  await writer.deleteEntity('user:a', TEST_WRITER);
  await writer.deletePolicy('p', TEST_WRITER);
  await until(() => heard.some((change) => change.kind === 'policies') && heard.length >= 4, 'the later writes');
  const entityChanges = heard.filter((change) => change.kind === 'entity');
  t.same(entityChanges.map(untimed), [entityChange('user:a'), entityChange('user:a'), entityChange('user:a')]);
  t.ok(
    heard.every((change) => 'committedAt' in change && change.committedAt! >= since),
    'every change says when it was committed',
  );
  t.equal(await follower.policyRevision(), await writer.policyRevision(), 'both see one revision');
  t.equal(await follower.policyRevision(), 3);
});

t.test('writes that change nothing are not announced', async (t) => {
  const { writer, heard } = pair(t);
  t.equal(await writer.deletePolicy('absent', TEST_WRITER), false);
  t.equal(await writer.replacePolicy(policy('absent'), TEST_WRITER), false);
  await writer.createEntity(entity('user:marker'), TEST_WRITER);
  await until(() => heard.length > 0, 'the marker');
  t.same(heard.map(untimed), [entityChange('user:marker')]);
});

t.test('a follower that fell behind the kept history is told to reload everything', async (t) => {
  const { writer, heard } = pair(t, 3);
  // The writes run synchronously inside the calls, all before the follower's next poll: by then
  // only the last three changes are kept, and the follower cannot know what it missed.
  await Promise.all(Array.from({ length: 10 }, (_, index) => writer.createEntity(entity(`user:${index}`), TEST_WRITER)));
  await until(() => heard.length > 0, 'any change');
  t.same(heard, [{ kind: 'everything' }]);
  // After the reload it follows again, change by change.
  await writer.createEntity(entity('user:after'), TEST_WRITER);
  await until(() => heard.length > 1, 'the next change');
  t.same(untimed(heard[1]!), entityChange('user:after'));
});
