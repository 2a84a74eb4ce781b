import type { ClientSession } from 'mongodb';
import type { Policy } from '../../schemas/policy.js';
import { jsonEqual } from '../../engine/json-equal.js';
import {
  SCHEMAS_CHANGE,
  type LoadedPolicies,
  type LoadedPolicyChanges,
  type PolicyChanges,
  type PolicyReads,
  type PolicyWrites,
  type PromoteOutcome,
} from '../store.js';
import type { CheckedAgainst } from '../errors.js';
import type { Writer } from '../../audit/record.js';
import { rethrowStoreError } from './errors.js';
import { readSchemas, type MongoWrites } from './writes.js';
import { feedPosition } from './feed.js';

/** The policies on MongoDB, one document each, in creation order by their position. */
export class MongoPolicies implements PolicyReads, PolicyWrites {
  constructor(private readonly writes: MongoWrites) {}

  private get collections() {
    return this.writes.collections;
  }

  private async readPolicy(name: string, session?: ClientSession): Promise<Policy | undefined> {
    const row = await this.collections.policies.findOne({ _id: name }, { session });
    return row === null ? undefined : (JSON.parse(row.document) as Policy);
  }

  /**
   * The revision and the policies from one snapshot (a read-only transaction at snapshot read
   * concern), taken at or after a majority read whose operation time is the feed position: a
   * change stream started there misses nothing committed after the snapshot.
   */
  loadPolicies(): Promise<LoadedPolicies>;
  loadPolicies(since: number): Promise<LoadedPolicyChanges>;
  async loadPolicies(since?: number): Promise<LoadedPolicyChanges> {
    const { counters, policies } = this.collections;
    return this.writes
      .withSession(async (session) => {
        if (since !== undefined) {
          const changes = await this.policyChangesSince(since, session);
          if (changes !== undefined) return changes;
        }
        await counters.findOne({ _id: 'policy-revision' }, { session });
        const operationTime = session.operationTime;
        if (operationTime === undefined) throw new Error('MongoDB reported no operation time (not a replica set member?)');
        const { revision, epoch, stored, schemas } = await this.writes.readSnapshot(session, async () => ({
          revision: await counters.findOne({ _id: 'policy-revision' }, { session }),
          epoch: await counters.findOne({ _id: 'store-epoch' }, { session }),
          stored: await policies.find({}, { session }).sort({ position: 1 }).toArray(),
          schemas: await readSchemas(this.collections, session),
        }));
        return {
          revision: revision?.value ?? 0,
          ...(schemas && { schemas }),
          policies: stored.map((row) => JSON.parse(row.document) as Policy),
          positions: stored.map((row) => row.position),
          epoch: epoch?.value,
          feedPosition: feedPosition(operationTime),
        };
      })
      .catch(rethrowStoreError);
  }

  /**
   * The policies written after revision `since`, as they stand now, read in one snapshot; undefined
   * when the kept records no longer reach back that far (or never did: a database written before
   * they were kept), or `since` is ahead of this database.
   */
  private async policyChangesSince(since: number, session: ClientSession): Promise<PolicyChanges | undefined> {
    const { counters, policies, policyChanges } = this.collections;
    return this.writes.readSnapshot(session, async () => {
      const revision = (await counters.findOne({ _id: 'policy-revision' }, { session }))?.value ?? 0;
      if (since > revision) return undefined;
      const written = await policyChanges.find({ _id: { $gt: since } }, { session, projection: { name: 1 } }).toArray();
      if (written.length !== revision - since) return undefined;
      const names = [...new Set(written.map((change) => change.name))];
      // A schema document written since changes what every policy is held to: the whole set is loaded, with it.
      if (names.includes(SCHEMAS_CHANGE)) return undefined;
      const rows = await policies.find({ _id: { $in: names } }, { session }).toArray();
      const byName = new Map(rows.map((row) => [row._id, row]));
      const epoch = (await counters.findOne({ _id: 'store-epoch' }, { session }))?.value;
      return {
        revision,
        epoch,
        changes: names.map((name) => {
          const row = byName.get(name);
          return { name, now: row === undefined ? null : { policy: JSON.parse(row.document) as Policy, position: row.position } };
        }),
      };
    });
  }

  async policyRevision(): Promise<number> {
    const revision = await this.collections.counters.findOne({ _id: 'policy-revision' }).catch(rethrowStoreError);
    return revision?.value ?? 0;
  }

  async getPolicy(name: string): Promise<Policy | undefined> {
    return this.readPolicy(name).catch(rethrowStoreError);
  }

  /** Within a write: a policy stored anew, last in creation order; an existing name is a DuplicateKeyError saying `duplicate`. */
  private async insertPolicy(policy: Policy, session: ClientSession, duplicate: string): Promise<void> {
    const position = await this.writes.nextValue('policy-position', session);
    await this.writes.insertNew(this.collections.policies, { _id: policy.name, position, document: JSON.stringify(policy), version: 1 }, session, duplicate);
  }

  /** Within a write: the policy of `policy`'s name rewritten in place, keeping its position. */
  private async rewritePolicy(policy: Policy, session: ClientSession): Promise<void> {
    await this.collections.policies.updateOne({ _id: policy.name }, { $set: { document: JSON.stringify(policy) }, $inc: { version: 1 } }, { session });
  }

  async createPolicy(policy: Policy, by: Writer, checked?: CheckedAgainst): Promise<void> {
    await this.writes.write(async (transaction) => {
      await this.writes.holdsSchemas(transaction.session, checked);
      await this.insertPolicy(policy, transaction.session, `Policy '${policy.name}' already exists`);
      await this.writes.recordPolicyWrite(transaction, by, { operation: 'policy.create', name: policy.name, before: null, after: policy });
    });
  }

  async replacePolicy(policy: Policy, by: Writer, checked?: CheckedAgainst): Promise<boolean> {
    return this.writes.write(async (transaction) => {
      const { session } = transaction;
      await this.writes.holdsSchemas(session, checked);
      const before = await this.readPolicy(policy.name, session);
      if (before === undefined) return false;
      await this.rewritePolicy(policy, session);
      await this.writes.recordPolicyWrite(transaction, by, { operation: 'policy.replace', name: policy.name, before, after: policy });
      return true;
    });
  }

  async deletePolicy(name: string, by: Writer): Promise<boolean> {
    return this.writes.write(async (transaction) => {
      const { session } = transaction;
      const before = await this.readPolicy(name, session);
      if (before === undefined) return false;
      await this.collections.policies.deleteOne({ _id: name }, { session });
      await this.writes.recordPolicyWrite(transaction, by, { operation: 'policy.delete', name, before, after: null });
      return true;
    });
  }

  async promotePolicy(promoted: Policy, shadowName: string, shadowAsRead: Policy, by: Writer, checked?: CheckedAgainst): Promise<PromoteOutcome> {
    return this.writes.write(async (transaction): Promise<PromoteOutcome> => {
      const { session } = transaction;
      await this.writes.holdsSchemas(session, checked);
      const before = await this.readPolicy(promoted.name, session);
      const shadow = await this.readPolicy(shadowName, session);
      if (before === undefined || shadow === undefined) return 'gone';
      if (!jsonEqual(shadow, shadowAsRead)) return 'changed';
      await this.rewritePolicy(promoted, session);
      await this.writes.recordPolicyWrite(transaction, by, { operation: 'policy.replace', name: promoted.name, before, after: promoted });
      if (shadowName === promoted.name) return 'promoted';
      await this.collections.policies.deleteOne({ _id: shadowName }, { session });
      await this.writes.recordPolicyWrite(transaction, by, { operation: 'policy.delete', name: shadowName, before: shadow, after: null });
      return 'promoted';
    });
  }

  async restorePolicy(policy: Policy, version: number, by: Writer, checked?: CheckedAgainst): Promise<void> {
    await this.writes.write(async (transaction) => {
      const { session } = transaction;
      await this.writes.holdsSchemas(session, checked);
      const before = await this.readPolicy(policy.name, session);
      if (before === undefined) await this.insertPolicy(policy, session, `Policy '${policy.name}' was created meanwhile`);
      else await this.rewritePolicy(policy, session);
      const change = { operation: 'policy.restore' as const, name: policy.name, before: before ?? null, after: policy, restoredFrom: version };
      await this.writes.recordPolicyWrite(transaction, by, change);
    });
  }
}
