import type Database from 'better-sqlite3';
import { ComposedStore, type StoreParts } from '../composed-store.js';
import { openDatabase } from './database.js';
import { EmbeddedWrites, type EmbeddedStoreOptions } from './writes.js';
import { EmbeddedPolicies } from './policies.js';
import { EmbeddedSchemas } from './schemas.js';
import { EmbeddedEntities } from './entities.js';
import { EmbeddedAuditTrail } from './audit.js';
import { EmbeddedChangeFeed } from './change-feed.js';

/**
 * The default store: one SQLite file in the data directory (see database.ts). Documents are kept as
 * JSON text, so every value keeps its JSON type. Each capability is a part of its own (policies.ts,
 * schemas.ts, entities.ts, audit.ts, change-feed.ts), the writes sharing writes.ts.
 */
export class EmbeddedStore extends ComposedStore {
  protected readonly parts: StoreParts & { changes: EmbeddedChangeFeed };
  private readonly db: Database.Database;

  constructor(dataDirectory: string, options: EmbeddedStoreOptions = {}) {
    super();
    this.db = openDatabase(dataDirectory);
    const writes = new EmbeddedWrites(this.db, options);
    const changes = new EmbeddedChangeFeed(this.db);
    const audit = new EmbeddedAuditTrail(this.db, writes.clock);
    this.parts = {
      policies: new EmbeddedPolicies(writes, changes),
      schemas: new EmbeddedSchemas(writes, audit),
      entities: new EmbeddedEntities(writes),
      audit,
      changes,
    };
  }

  /** What this connection's durability rests on, as SQLite reports it (read by tests; pragmas are per connection). */
  durability(): { journalMode: string; synchronous: number } {
    return {
      journalMode: this.db.pragma('journal_mode', { simple: true }) as string,
      synchronous: this.db.pragma('synchronous', { simple: true }) as number,
    };
  }

  async close(): Promise<void> {
    this.parts.changes.close();
    this.db.close();
  }
}
