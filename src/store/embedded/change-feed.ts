import type Database from 'better-sqlite3';
import type { FeedPosition, StoreChangeListener, Subscribable } from '../store.js';
import type { ChangedCollection } from './writes.js';

/** How often followers look for other processes' commits (a cheap pragma when nothing changed). */
export const CHANGE_POLL_MILLIS = 25;

interface ChangeRow {
  sequence: number;
  collection: ChangedCollection;
  key: string;
  /** Epoch ms; null for changes written before migration 3. */
  committed_at: number | null;
}

/** A position in the embedded feed: the sequence of the last change already seen. */
const feedPosition = (sequence: number) => ({ sequence }) as unknown as FeedPosition;
const sequenceAt = (position: FeedPosition) => (position as unknown as { sequence: number }).sequence;

/** The embedded store's change feed: the change log every write appends to, polled by each follower. */
export class EmbeddedChangeFeed implements Subscribable {
  private readonly stopWatching = new Set<NodeJS.Timeout>();
  private readonly statements;

  constructor(db: Database.Database) {
    this.statements = {
      changesAfter: db.prepare('SELECT sequence, collection, key, committed_at FROM changes WHERE sequence > ? ORDER BY sequence'),
      lastChange: db.prepare('SELECT coalesce(max(sequence), 0) FROM changes').pluck(),
      dataVersion: db.prepare('PRAGMA data_version').pluck(),
    };
  }

  /** Where the feed stands now (within a transaction: where it stood when that read). */
  position(): FeedPosition {
    return feedPosition(this.statements.lastChange.get() as number);
  }

  watch(listener: StoreChangeListener, from?: FeedPosition): () => void {
    let lastSequence = sequenceAt(from ?? this.position());
    // From an earlier position, the first poll reads the log whatever data_version says: others may have committed since.
    let lastDataVersion = from === undefined ? (this.statements.dataVersion.get() as number) : undefined;
    const poll = () => {
      // data_version moves only when another connection commits: the usual poll reads one pragma.
      const dataVersion = this.statements.dataVersion.get() as number;
      if (dataVersion === lastDataVersion) return;
      lastDataVersion = dataVersion;
      const rows = this.statements.changesAfter.all(lastSequence) as ChangeRow[];
      if (rows.length === 0) return;
      if (rows[0]!.sequence > lastSequence + 1) {
        listener({ kind: 'everything' });
      } else {
        let firstPolicyChange: ChangeRow | undefined;
        for (const row of rows) {
          if (row.collection === 'policies') firstPolicyChange ??= row;
          else listener({ kind: 'entity', uri: row.key, committedAt: row.committed_at ?? undefined });
        }
        if (firstPolicyChange) listener({ kind: 'policies', committedAt: firstPolicyChange.committed_at ?? undefined });
      }
      lastSequence = rows[rows.length - 1]!.sequence;
    };
    let interrupted = false;
    const pollSafely = () => {
      try {
        poll();
        if (interrupted) listener({ kind: 'resumed' });
        interrupted = false;
      } catch (error) {
        if (!interrupted) listener({ kind: 'interrupted', reason: (error as Error).message });
        interrupted = true;
      }
    };
    const timer = setInterval(pollSafely, CHANGE_POLL_MILLIS);
    timer.unref();
    this.stopWatching.add(timer);
    return () => {
      clearInterval(timer);
      this.stopWatching.delete(timer);
    };
  }

  close(): void {
    for (const timer of this.stopWatching) clearInterval(timer);
    this.stopWatching.clear();
  }
}
