import type Database from 'better-sqlite3';
import type { AuditTrail } from '../store.js';
import { policyTarget, type AuditDraft, type AuditQuery, type AuditRecord, type AuditRetention } from '../../audit/record.js';

// The audit trail's rows in the embedded store: its reads and pruning. (Records are written by the
// store's writes, in their transactions: see EmbeddedWrites.recordAudit.)

interface AuditRow {
  id: number;
  record: string;
}

const auditRecordOf = (row: AuditRow): AuditRecord => ({ id: row.id, ...(JSON.parse(row.record) as AuditDraft) });

export class EmbeddedAuditTrail implements AuditTrail {
  private readonly statements;
  /** A query's statement, by its SQL: the filters a query combines make a handful of them. */
  private readonly auditQueries = new Map<string, Database.Statement>();

  constructor(
    private readonly db: Database.Database,
    private readonly clock: () => number,
  ) {
    this.statements = {
      policyVersion: db.prepare('SELECT id, record FROM audit WHERE target = ? AND policy_version = ?'),
      newestPrunable: db.prepare('SELECT id FROM audit ORDER BY id DESC LIMIT 1 OFFSET ?').pluck(),
      pruneThrough: db.prepare('DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE id <= ? ORDER BY id LIMIT ?)'),
      pruneOlderThan: db.prepare('DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE time_ms < ? ORDER BY id LIMIT ?)'),
    };
  }

  async listAudit(query: AuditQuery): Promise<AuditRecord[]> {
    const conditions: string[] = [];
    const parameters: unknown[] = [];
    const where = (condition: string, ...values: unknown[]) => {
      conditions.push(condition);
      parameters.push(...values);
    };
    if (query.before !== undefined) where('id < ?', query.before);
    if (query.since !== undefined) where('time_ms >= ?', query.since);
    if (query.until !== undefined) where('time_ms < ?', query.until);
    if (query.target !== undefined) {
      if (query.targetPrefix) where('target >= ? AND substr(target, 1, length(?)) = ?', query.target, query.target, query.target);
      else where('target = ?', query.target);
    }
    if (query.actor !== undefined) where('actor = ?', query.actor);
    const sql = `SELECT id, record FROM audit${conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`;
    let statement = this.auditQueries.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.auditQueries.set(sql, statement);
    }
    return (statement.all(...parameters, query.limit) as AuditRow[]).map(auditRecordOf);
  }

  async policyVersion(name: string, version: number): Promise<AuditRecord | undefined> {
    return this.recordOfVersion(policyTarget(name), version);
  }

  /** The record of the write that made version `version` of a versioned target (a policy, the schema document). */
  recordOfVersion(target: string, version: number): AuditRecord | undefined {
    const row = this.statements.policyVersion.get(target, version) as AuditRow | undefined;
    return row === undefined ? undefined : auditRecordOf(row);
  }

  async pruneAudit(retention: AuditRetention, batch: number): Promise<number> {
    return this.db
      .transaction(() => {
        let pruned = 0;
        if (retention.maxCount !== undefined) {
          const newestPrunable = this.statements.newestPrunable.get(retention.maxCount) as number | undefined;
          if (newestPrunable !== undefined) pruned += this.statements.pruneThrough.run(newestPrunable, batch).changes;
        }
        if (retention.maxAgeMs !== undefined && pruned < batch) {
          pruned += this.statements.pruneOlderThan.run(this.clock() - retention.maxAgeMs, batch - pruned).changes;
        }
        return pruned;
      })
      .immediate();
  }
}
