import type { SchemaDocument } from '../../attribute-schemas/schema-document.js';
import { SCHEMAS_CHANGE, type SchemaWrites } from '../store.js';
import { schemasRecord, SCHEMAS_TARGET, type AuditRecord, type SchemasChange, type Writer } from '../../audit/record.js';
import { versionCounter } from './set-up.js';
import { recordOfVersion } from './audit.js';
import { readSchemas, type MongoWrites, type Transaction } from './writes.js';

/** The attribute schema document on MongoDB: one document, its version, each write a policy revision. */
export class MongoSchemas implements SchemaWrites {
  constructor(private readonly writes: MongoWrites) {}

  async writeSchemas(document: SchemaDocument, by: Writer, restoredFrom?: number): Promise<number> {
    const operation = restoredFrom === undefined ? 'schemas.replace' : 'schemas.restore';
    return this.writes.write((transaction) => this.recordSchemasWrite(transaction, by, { operation, after: document, restoredFrom }));
  }

  async deleteSchemas(by: Writer): Promise<number | false> {
    return this.writes.write(async (transaction) =>
      (await readSchemas(this.writes.collections, transaction.session)) === undefined
        ? false
        : this.recordSchemasWrite(transaction, by, { operation: 'schemas.delete', after: null }),
    );
  }

  schemasVersion(version: number): Promise<AuditRecord | undefined> {
    return recordOfVersion(this.writes.collections.audit, SCHEMAS_TARGET, version);
  }

  /** Within a write: the document and its version, the policy revision it moves, and its audit record. */
  private async recordSchemasWrite(transaction: Transaction, by: Writer, change: Omit<SchemasChange, 'before'>): Promise<number> {
    const { session } = transaction;
    const before = (await readSchemas(this.writes.collections, session))?.document ?? null;
    const version = await this.writes.nextValue(versionCounter(SCHEMAS_TARGET), session);
    const document = change.after === null ? null : JSON.stringify(change.after);
    await this.writes.collections.schemas.updateOne({ _id: 'document' }, { $set: { document, version } }, { upsert: true, session });
    await this.writes.movePolicyRevision(session, SCHEMAS_CHANGE);
    await this.writes.recordAudit(transaction, schemasRecord(by, this.writes.clock(), { ...change, before, version }), version);
    return version;
  }
}
