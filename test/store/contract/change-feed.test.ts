import type { StoreChange } from '../../../src/store/store.js';
import { by, entity, onEveryDriver, openHandles, policy, type Contract } from './harness.js';
import { until } from '../../helpers/until.js';

// The change feed's contract (Subscribable): every driver keeps it.

const changeFeedContract: Contract = (t, name, backing) => {
  t.test(`${name}: the feed follows from a load's position`, async (t) => {
    const { store, other } = await openHandles(t, backing);
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
};

await onEveryDriver('change feed', changeFeedContract);
