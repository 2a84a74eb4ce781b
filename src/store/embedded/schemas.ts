import type { SchemaDocument } from '../../attribute-schemas/schema-document.js';
import { SCHEMAS_CHANGE, type SchemaWrites } from '../store.js';
import { schemasRecord, SCHEMAS_TARGET, type AuditRecord, type SchemasChange, type Writer } from '../../audit/record.js';
import type { EmbeddedWrites } from './writes.js';
import type { EmbeddedAuditTrail } from './audit.js';

/** The attribute schema document in the embedded store: one row, its version, each write a policy revision. */
export class EmbeddedSchemas implements SchemaWrites {
  private readonly statements;

  constructor(
    private readonly writes: EmbeddedWrites,
    private readonly audit: EmbeddedAuditTrail,
  ) {
    this.statements = {
      writeSchemas: writes.db.prepare('UPDATE schema_document SET document = ?, version = version + 1 RETURNING version').pluck(),
    };
  }

  async writeSchemas(document: SchemaDocument, by: Writer, restoredFrom?: number): Promise<number> {
    const operation = restoredFrom === undefined ? 'schemas.replace' : 'schemas.restore';
    return this.writes.write(() => this.recordSchemasWrite(by, { operation, after: document, restoredFrom }));
  }

  async deleteSchemas(by: Writer): Promise<number | false> {
    return this.writes.write(() => (this.writes.readSchemas() === undefined ? false : this.recordSchemasWrite(by, { operation: 'schemas.delete', after: null })));
  }

  async schemasVersion(version: number): Promise<AuditRecord | undefined> {
    return this.audit.recordOfVersion(SCHEMAS_TARGET, version);
  }

  /** Within a write: the document, its version, the policy revision it moves and its audit record. */
  private recordSchemasWrite(by: Writer, change: Omit<SchemasChange, 'before'>): number {
    const before = this.writes.readSchemas()?.document ?? null;
    const version = this.statements.writeSchemas.get(change.after === null ? null : JSON.stringify(change.after)) as number;
    this.writes.recordChange('policies', SCHEMAS_CHANGE);
    this.writes.recordAudit(schemasRecord(by, this.writes.clock(), { ...change, before, version }), version);
    return version;
  }
}
