import type { Collection, Filter } from 'mongodb';
import { policyTarget, type AuditDraft, type AuditQuery, type AuditRecord, type AuditRetention } from '../../audit/record.js';
import type { AuditTrail } from '../store.js';
import type { StoredAuditRecord } from './collections.js';
import { rethrowStoreError } from './errors.js';

// The audit trail's rows on MongoDB: how a record is stored, and the reads and pruning of the trail.
// (Records are written by the store's writes, in their transactions: see store.ts recordAudit.)

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export const auditRecordOf = (row: StoredAuditRecord): AuditRecord => ({ id: row._id, ...(JSON.parse(row.record) as AuditDraft) });

/** A record as stored: numbered, its JSON in `record`, the fields queries use beside it. */
export const storedAudit = (id: number, draft: AuditDraft): StoredAuditRecord => ({
  _id: id,
  time: new Date(draft.time),
  target: draft.target,
  actor: draft.actor,
  record: JSON.stringify(draft),
});

/** Records matching `query`, newest first (see Store.listAudit). */
async function listAudit(audit: Collection<StoredAuditRecord>, query: AuditQuery): Promise<AuditRecord[]> {
  const filter: Filter<StoredAuditRecord> = {};
  if (query.before !== undefined) filter._id = { $lt: query.before };
  if (query.since !== undefined || query.until !== undefined) {
    filter.time = {
      ...(query.since === undefined ? {} : { $gte: new Date(query.since) }),
      ...(query.until === undefined ? {} : { $lt: new Date(query.until) }),
    };
  }
  if (query.target !== undefined) filter.target = query.targetPrefix ? { $regex: `^${escapeRegExp(query.target)}` } : query.target;
  if (query.actor !== undefined) filter.actor = query.actor;
  const rows = await audit.find(filter).sort({ _id: -1 }).limit(query.limit).toArray().catch(rethrowStoreError);
  return rows.map(auditRecordOf);
}

/** The record of the write that made version `version` of a versioned target (a policy, the schema document). */
export async function recordOfVersion(audit: Collection<StoredAuditRecord>, target: string, version: number): Promise<AuditRecord | undefined> {
  const row = await audit.findOne({ target, policy_version: version }).catch(rethrowStoreError);
  return row === null ? undefined : auditRecordOf(row);
}

/** Deletes by id, oldest first, at most `batch`; deleting what another process already pruned is harmless. */
async function pruneAudit(audit: Collection<StoredAuditRecord>, retention: AuditRetention, batch: number, now: number): Promise<number> {
  const oldest = (filter: Filter<StoredAuditRecord>, limit: number) => audit.find(filter, { projection: { _id: 1 } }).sort({ _id: 1 }).limit(limit).toArray();
  const prune = async (filter: Filter<StoredAuditRecord>, limit: number) => {
    const ids = (await oldest(filter, limit)).map((row) => row._id);
    return ids.length === 0 ? 0 : (await audit.deleteMany({ _id: { $in: ids } })).deletedCount;
  };
  try {
    let pruned = 0;
    if (retention.maxCount !== undefined) {
      const [newestPrunable] = await audit.find({}, { projection: { _id: 1 } }).sort({ _id: -1 }).skip(retention.maxCount).limit(1).toArray();
      if (newestPrunable !== undefined) pruned += await prune({ _id: { $lte: newestPrunable._id } }, batch);
    }
    if (retention.maxAgeMs !== undefined && pruned < batch) {
      pruned += await prune({ time: { $lt: new Date(now - retention.maxAgeMs) } }, batch - pruned);
    }
    return pruned;
  } catch (error) {
    return rethrowStoreError(error);
  }
}

/** The audit trail on MongoDB, as a Store capability. */
export class MongoAuditTrail implements AuditTrail {
  constructor(
    private readonly audit: Collection<StoredAuditRecord>,
    private readonly clock: () => number,
  ) {}

  listAudit(query: AuditQuery): Promise<AuditRecord[]> {
    return listAudit(this.audit, query);
  }

  policyVersion(name: string, version: number): Promise<AuditRecord | undefined> {
    return recordOfVersion(this.audit, policyTarget(name), version);
  }

  pruneAudit(retention: AuditRetention, batch: number): Promise<number> {
    return pruneAudit(this.audit, retention, batch, this.clock());
  }
}
