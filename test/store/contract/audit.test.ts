import type { AuditObserver } from '../../../src/store/store.js';
import { by, entity, onEveryDriver, openHandles, policy, refusedAsDuplicate, summary, type Contract } from './harness.js';

// The audit trail's contract (AuditTrail, and the record every write commits with it): every driver keeps it.

const auditContract: Contract = (t, name, backing) => {
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
};

await onEveryDriver('audit trail', auditContract);
