import type { AuditObserver, StoreChange } from '../../../src/store/store.js';
import { SchemasMovedOn } from '../../../src/store/errors.js';
import { by, changesOf, entity, onEveryDriver, openHandles, policy, summary, type Contract } from './harness.js';
import { until } from '../../helpers/until.js';

// The schema document's contract (SchemaWrites, and the schemas loaded with the policies): every driver keeps it.

const schemasContract: Contract = (t, name, backing) => {
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
};

await onEveryDriver('schemas', schemasContract);
