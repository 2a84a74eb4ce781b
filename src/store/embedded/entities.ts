import type { Entity } from '../../schemas/entity.js';
import { uriRange, type EntityReads, type EntityWrites } from '../store.js';
import { DuplicateKeyError, type CheckedAgainst } from '../errors.js';
import { entityRecord, type Writer } from '../../audit/record.js';
import { isUniqueViolation } from './database.js';
import type { EmbeddedWrites } from './writes.js';

const entityOf = (document: string) => JSON.parse(document) as Entity;
/** SQLite takes only 64-bit integers: a larger limit or offset (say 1e20) means "past the end" all the same. */
const asSqliteInteger = (n: number) => Math.min(n, Number.MAX_SAFE_INTEGER);

/** The entity registry in the embedded store: a row each, in registration order by their position. */
export class EmbeddedEntities implements EntityReads, EntityWrites {
  private readonly statements;

  constructor(private readonly writes: EmbeddedWrites) {
    const { db } = writes;
    this.statements = {
      entity: db.prepare('SELECT document FROM entities WHERE uri = ?').pluck(),
      entityPage: db.prepare('SELECT document FROM entities ORDER BY position LIMIT ? OFFSET ?').pluck(),
      entityCount: db.prepare('SELECT count(*) FROM entities').pluck(),
      // uri's UNIQUE index holds the range; TEXT compares by its UTF-8 bytes.
      entitiesUnder: db.prepare('SELECT document FROM entities WHERE uri >= ? AND uri < ? AND uri > ? ORDER BY uri LIMIT ?').pluck(),
      entitiesAfter: db.prepare('SELECT document FROM entities WHERE uri > ? ORDER BY uri LIMIT ?').pluck(),
      insertEntity: db.prepare('INSERT INTO entities (uri, document) VALUES (?, ?)'),
      updateEntity: db.prepare('UPDATE entities SET document = ? WHERE uri = ?'),
      deleteEntity: db.prepare('DELETE FROM entities WHERE uri = ?'),
    };
  }

  private readEntity(uri: string): Entity | undefined {
    const document = this.statements.entity.get(uri) as string | undefined;
    return document === undefined ? undefined : entityOf(document);
  }

  async getEntity(uri: string): Promise<Entity | undefined> {
    return this.readEntity(uri);
  }

  async listEntities(offset: number, limit: number): Promise<Entity[]> {
    return (this.statements.entityPage.all(asSqliteInteger(limit), asSqliteInteger(offset)) as string[]).map(entityOf);
  }

  async countEntities(): Promise<number> {
    return this.statements.entityCount.get() as number;
  }

  async listEntitiesAfter(after: string, limit: number): Promise<Entity[]> {
    return (this.statements.entitiesAfter.all(after, asSqliteInteger(limit)) as string[]).map(entityOf);
  }

  async listEntitiesUnder(prefix: string, after: string, limit: number): Promise<Entity[]> {
    const { from, to } = uriRange(prefix);
    return (this.statements.entitiesUnder.all(from, to, after, asSqliteInteger(limit)) as string[]).map(entityOf);
  }

  async createEntity(entity: Entity, by: Writer, checked?: CheckedAgainst): Promise<void> {
    this.writes.write(() => this.insertEntity(entity, by), checked);
  }

  async createEntities(entities: readonly Entity[], by: Writer, checked?: CheckedAgainst): Promise<void> {
    this.writes.write(() => {
      for (const entity of entities) this.insertEntity(entity, by);
    }, checked);
  }

  /** Within a write: the new entity, its change and its audit record. */
  private insertEntity(entity: Entity, by: Writer): void {
    try {
      this.statements.insertEntity.run(entity.uri, JSON.stringify(entity));
    } catch (error) {
      if (isUniqueViolation(error)) throw new DuplicateKeyError(`Entity '${entity.uri}' already exists`, entity.uri);
      throw error;
    }
    this.recordEntityWrite(by, { operation: 'entity.create', uri: entity.uri, before: undefined, after: entity });
  }

  async updateEntity(uri: string, change: (entity: Entity) => Entity, by: Writer, checked?: CheckedAgainst): Promise<Entity | undefined> {
    return this.writes.write(() => {
      const before = this.readEntity(uri);
      if (before === undefined) return undefined;
      const updated = change(before);
      this.statements.updateEntity.run(JSON.stringify(updated), uri);
      this.recordEntityWrite(by, { operation: 'entity.update', uri, before, after: updated });
      return updated;
    }, checked);
  }

  async deleteEntity(uri: string, by: Writer): Promise<boolean> {
    return this.writes.write(() => {
      const before = this.readEntity(uri);
      if (before === undefined) return false;
      this.statements.deleteEntity.run(uri);
      this.recordEntityWrite(by, { operation: 'entity.delete', uri, before, after: undefined });
      return true;
    });
  }

  private recordEntityWrite(by: Writer, change: Omit<Parameters<typeof entityRecord>[2], 'withValues'>): void {
    this.writes.recordChange('entities', change.uri);
    this.writes.recordAudit(entityRecord(by, this.writes.clock(), { ...change, withValues: this.writes.options.auditValues ?? false }), null);
  }
}
