import t from 'tap';
import { rmSync } from 'node:fs';
import { EmbeddedStore } from '../../../src/store/embedded/store.js';
import { by, changesOf, onEveryDriver, openHandles, policy, refusedAsDuplicate, summary, type Contract } from './harness.js';
import { temporaryDataDir } from '../../helpers/server.js';

// The policies' contract (PolicyReads, PolicyWrites): every driver keeps it.

const policiesContract: Contract = (t, name, backing) => {
  t.test(`${name}: policies created, replaced, deleted and promoted`, async (t) => {
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
  });

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
};

await onEveryDriver('policies', policiesContract);

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
