import type { AuditTrail as StoredAuditTrail } from '../store/store.js';
import type { AuditQuery, AuditRecord } from './record.js';

export interface AuditPage {
  records: AuditRecord[];
  /** Where the next (older) page starts; null on the last page. */
  next_cursor: string | null;
}

/** Reads the audit trail that the store writes with every admin write. */
export class AuditTrail {
  constructor(private readonly store: StoredAuditTrail) {}

  /** One page of the records matching `query`, newest first, from `cursor` (a previous page's `next_cursor`) on. */
  async page(query: Omit<AuditQuery, 'limit' | 'before'>, page: { limit: number; cursor?: string }): Promise<AuditPage> {
    const before = page.cursor === undefined ? undefined : Number(page.cursor);
    // One more than asked for tells whether another page follows.
    const records = await this.store.listAudit({ ...query, before, limit: page.limit + 1 });
    const more = records.length > page.limit;
    if (more) records.length = page.limit;
    return { records, next_cursor: more ? String(records[records.length - 1]!.id) : null };
  }
}
