import type { Entity } from '../../schemas/entity.js';
import type { MongoFilter } from '../../engine/mongodb-filter.js';
import type { EntityReads, EntityWrites } from '../store.js';
import { DuplicateKeyError, type CheckedAgainst } from '../errors.js';
import { entityRecord, type Writer } from '../../audit/record.js';
import { moveEntityCount } from './entity-count.js';
import { storedAudit } from './audit.js';
import { countEntities } from './entity-count.js';
import { ENTITY_TEXT, entityRow, listEntities, listEntitiesAfter, listEntitiesUnder, readEntityOnCheckPath, type ReadsAfterFeed } from './entities.js';
import { queryableFields } from './queryable.js';
import { firstWriteError, takenKey, type MongoWrites, type Transaction } from './writes.js';

/**
 * The entity registry on MongoDB: its reads (entities.ts), those that fill a cache held after the
 * change feed's position (`afterFeed`); its writes, each moving the kept count and audited.
 */
export class MongoEntityRegistry implements EntityReads, EntityWrites {
  constructor(
    private readonly writes: MongoWrites,
    private readonly afterFeed: ReadsAfterFeed,
  ) {}

  private get collections() {
    return this.writes.collections;
  }

  getEntity(uri: string): Promise<Entity | undefined> {
    return readEntityOnCheckPath(this.collections.entities, uri, this.afterFeed);
  }

  listEntitiesAfter(after: string, limit: number): Promise<Entity[]> {
    return listEntitiesAfter(this.collections.entities, after, limit, this.afterFeed);
  }

  listEntities(offset: number, limit: number): Promise<Entity[]> {
    return listEntities(this.collections.entities, offset, limit);
  }

  listEntitiesUnder(prefix: string, after: string, limit: number, narrowedBy?: MongoFilter): Promise<Entity[]> {
    return listEntitiesUnder(this.collections.entities, prefix, after, limit, narrowedBy);
  }

  countEntities(): Promise<number> {
    return countEntities(this.collections);
  }

  async createEntity(entity: Entity, by: Writer, checked?: CheckedAgainst): Promise<void> {
    await this.writes.write(async (transaction) => {
      const { session } = transaction;
      await this.writes.holdsSchemas(session, checked);
      const position = await this.writes.nextValue('entity-position', session);
      await this.writes.insertNew(this.collections.entities, entityRow(entity, position), session, `Entity '${entity.uri}' already exists`);
      await moveEntityCount(this.collections.counters, session, 1, [entity.uri]);
      await this.recordEntityWrite(transaction, by, { operation: 'entity.create', uri: entity.uri, before: undefined, after: entity });
    });
  }

  /** One insertMany and the audit records in one transaction: every entity is registered, or (on any error) none. */
  async createEntities(entities: readonly Entity[], by: Writer, checked?: CheckedAgainst): Promise<void> {
    if (entities.length === 0) return;
    await this.writes.write(async (transaction) => {
      const { session } = transaction;
      await this.writes.holdsSchemas(session, checked);
      const firstPosition = (await this.writes.nextValue('entity-position', session, entities.length)) - entities.length + 1;
      const rows = entities.map((entity, index) => entityRow(entity, firstPosition + index));
      try {
        await this.collections.entities.insertMany(rows, { session, ordered: true });
      } catch (error) {
        if (takenKey(error)) {
          const uri = entities[firstWriteError(error).index]?.uri;
          throw new DuplicateKeyError(uri === undefined ? 'An entity of this call is already registered' : `Entity '${uri}' already exists`, uri);
        }
        throw error;
      }
      await moveEntityCount(this.collections.counters, session, 1, entities.map((entity) => entity.uri));
      await this.recordEntitiesCreated(transaction, by, entities);
    });
  }

  /** A concurrent update from another process is a write conflict: the transaction runs again on the newer entity. */
  async updateEntity(uri: string, change: (entity: Entity) => Entity, by: Writer, checked?: CheckedAgainst): Promise<Entity | undefined> {
    return this.writes.write(async (transaction) => {
      const { session } = transaction;
      await this.writes.holdsSchemas(session, checked);
      const row = await this.collections.entities.findOne({ _id: uri }, { session, projection: { document: 1, version: 1 } });
      if (row === null) return undefined;
      const before = JSON.parse(row.document) as Entity;
      const updated = change(before);
      const document = JSON.stringify(updated);
      const version = (row.version ?? 0) + 1;
      await this.collections.entities.updateOne({ _id: uri }, { $set: { document, version, ...queryableFields(updated, document, version) } }, { session });
      await this.recordEntityWrite(transaction, by, { operation: 'entity.update', uri, before, after: updated });
      return updated;
    });
  }

  async deleteEntity(uri: string, by: Writer): Promise<boolean> {
    return this.writes.write(async (transaction) => {
      const { session } = transaction;
      const row = await this.collections.entities.findOne({ _id: uri }, { session, ...ENTITY_TEXT });
      if (row === null) return false;
      await this.collections.entities.deleteOne({ _id: uri }, { session });
      await moveEntityCount(this.collections.counters, session, -1, [uri]);
      await this.recordEntityWrite(transaction, by, { operation: 'entity.delete', uri, before: JSON.parse(row.document) as Entity, after: undefined });
      return true;
    });
  }

  private async recordEntityWrite(transaction: Transaction, by: Writer, change: Omit<Parameters<typeof entityRecord>[2], 'withValues'>) {
    await this.writes.recordAudit(transaction, entityRecord(by, this.writes.clock(), { ...change, withValues: this.writes.options.auditValues ?? false }));
  }

  /** The audit records of new entities: their ids reserved at once and inserted together. */
  private async recordEntitiesCreated({ session, recorded }: Transaction, by: Writer, entities: readonly Entity[]): Promise<void> {
    const time = this.writes.clock();
    const withValues = this.writes.options.auditValues ?? false;
    const drafts = entities.map((entity) => entityRecord(by, time, { operation: 'entity.create', uri: entity.uri, before: undefined, after: entity, withValues }));
    const firstId = (await this.writes.nextValue('audit-sequence', session, drafts.length)) - drafts.length + 1;
    await this.collections.audit.insertMany(drafts.map((draft, index) => storedAudit(firstId + index, draft)), { session });
    recorded.push(...drafts.map((draft) => draft.operation));
  }
}
