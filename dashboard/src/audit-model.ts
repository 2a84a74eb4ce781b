/** The audit trail and policy history as the admin API returns them, and the side-by-side diff of two versions. */
import { diffLines } from 'diff';
import type { AuditRecordAnswer } from '../../src/schemas/audit.js';

export type AuditRecord = AuditRecordAnswer;

export interface AuditPage {
  records: AuditRecord[];
  next_cursor: string | null;
}

export interface AuditFilters {
  target: string;
  actor: string;
  /** As a datetime-local input holds it (local time), or empty. */
  since: string;
  until: string;
}

/** The query string of GET /admin/audit for `filters` and a page. */
export function auditQuery(filters: AuditFilters, cursor?: string): string {
  const query = new URLSearchParams({ limit: '50' });
  if (filters.target.trim() !== '') query.set('target', filters.target.trim());
  if (filters.actor.trim() !== '') query.set('actor', filters.actor.trim());
  if (filters.since !== '') query.set('since', new Date(filters.since).toISOString());
  if (filters.until !== '') query.set('until', new Date(filters.until).toISOString());
  if (cursor !== undefined) query.set('cursor', cursor);
  return query.toString();
}

/** The policy name of a `policy:<name>` target. */
export const policyNameOf = (target: string): string | undefined => (target.startsWith('policy:') ? target.slice('policy:'.length) : undefined);

export type DiffCell = { text: string; change: 'same' | 'removed' | 'added' } | undefined;
export interface DiffRow {
  left: DiffCell;
  right: DiffCell;
}

const linesOf = (text: string) => text.replace(/\n$/, '').split('\n');

/** A policy as the diff shows it: pretty JSON, or a line saying it did not exist. */
export const versionText = (policy: unknown): string => (policy === null || policy === undefined ? '(deleted)' : JSON.stringify(policy, null, 2));

/**
 * Two texts side by side, line against line: unchanged lines on both sides, a run of removed lines
 * paired with the run of added lines that replaces it, and blanks where one side has nothing.
 */
export function sideBySide(left: string, right: string): DiffRow[] {
  const rows: DiffRow[] = [];
  const parts = diffLines(left, right);
  for (let index = 0; index < parts.length; index++) {
    const part = parts[index]!;
    if (!part.added && !part.removed) {
      for (const text of linesOf(part.value)) rows.push({ left: { text, change: 'same' }, right: { text, change: 'same' } });
      continue;
    }
    const removed = part.removed ? linesOf(part.value) : [];
    const next = parts[index + 1];
    const added = part.added ? linesOf(part.value) : next?.added ? linesOf(next.value) : [];
    if (part.removed && next?.added) index++;
    for (let line = 0; line < Math.max(removed.length, added.length); line++) {
      rows.push({
        left: removed[line] === undefined ? undefined : { text: removed[line]!, change: 'removed' },
        right: added[line] === undefined ? undefined : { text: added[line]!, change: 'added' },
      });
    }
  }
  return rows;
}
