import type { Policy } from '../schemas/policy.js';
import type { ValidationIssue } from '../schemas/errors.js';
import { schemaIssues } from '../engine/index.js';
import type { SchemaWrites } from '../store/store.js';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import type { AuditPage, AuditTrail } from '../audit/audit-trail.js';
import { isSchemasRecord, SCHEMAS_TARGET, type AuditRecord, type Writer } from '../audit/record.js';
import { ClientError, managedInFiles, RequestValidationError } from '../errors.js';
import { readSchemaDocument, SchemaDocumentError, type SchemaDocument } from '../attribute-schemas/schema-document.js';
import type { SchemaFile } from '../attribute-schemas/schema-file.js';
import { runInSlices } from './work-in-slices.js';
import { applied } from './applied.js';

/** Most problems a re-check lists, over every policy: a schema that every rule breaks could otherwise list millions. */
export const MAX_RECHECK_PROBLEMS = 100;
/** Policies re-checked between two turns of the event loop. */
const RECHECK_SLICE = 200;

/** The stored policies that have problems against a schema document, each problem as a policy write reports it. */
export interface Recheck {
  policies: { name: string; problems: ValidationIssue[] }[];
  /** False when problems were left out past MAX_RECHECK_PROBLEMS. */
  complete: boolean;
}

/** The schema document in force, as `GET /admin/schemas` answers it. */
export interface SchemasAnswer {
  document: SchemaDocument;
  /** The version its write made; 0 for a document from a file. */
  version: number;
  /** The file it comes from, or null when it is managed through the admin API. */
  file: string | null;
}

/** What a schema write answers: the document it leaves in force (null: none), the version it made, and the re-check. */
export interface SchemasWriteAnswer {
  document: SchemaDocument | null;
  version: number;
  recheck: Recheck;
}

/**
 * The problems each policy has against `document`, in policy order, at most MAX_RECHECK_PROBLEMS in
 * all, in slices between which other requests run.
 */
function* recheckPolicies(policies: readonly Policy[], document: SchemaDocument): Generator<void, Recheck> {
  const found: Recheck['policies'] = [];
  let listed = 0;
  for (let index = 0; index < policies.length; index++) {
    if (index > 0 && index % RECHECK_SLICE === 0) yield;
    const policy = policies[index]!;
    const problems = schemaIssues(policy, document, []);
    if (problems.length === 0) continue;
    if (listed + problems.length > MAX_RECHECK_PROBLEMS) {
      if (listed < MAX_RECHECK_PROBLEMS) found.push({ name: policy.name, problems: problems.slice(0, MAX_RECHECK_PROBLEMS - listed) });
      return { policies: found, complete: false };
    }
    listed += problems.length;
    found.push({ name: policy.name, problems });
  }
  return { policies: found, complete: true };
}

/** A document a client sent, checked as one read from a file is (strict Ajv, at most 1 MiB): else 422 saying what is wrong. */
function acceptedDocument(sent: unknown, at: (string | number)[]): SchemaDocument {
  try {
    return readSchemaDocument(JSON.stringify(sent));
  } catch (error) {
    if (!(error instanceof SchemaDocumentError)) throw error;
    throw new RequestValidationError([{ loc: at, msg: `The schema document ${error.message}`, type: 'value_error' }]);
  }
}

/**
 * Attribute schema administration: the document is written to the store with its audit record,
 * as a policy revision, and a write returns once this process holds checks to it (read your writes),
 * with the stored policies that now have problems against it, which stay in force.
 */
export class SchemaService {
  constructor(
    private readonly store: SchemaWrites,
    private readonly snapshots: PolicySnapshots,
    private readonly audit: AuditTrail,
    /** Where schemas are managed when not through the admin API: their writes are then refused. */
    private readonly file: SchemaFile | undefined,
  ) {}

  current(): SchemasAnswer {
    const schemas = this.snapshots.schemas;
    if (schemas === undefined) {
      const instead = this.file === undefined ? 'PUT /admin/schemas writes one' : `${this.file.path} holds none`;
      throw new ClientError(404, `No attribute schema document is in force: ${instead}`);
    }
    return { document: schemas.document, version: schemas.version, file: this.file?.path ?? null };
  }

  async replace(sent: unknown, by: Writer): Promise<SchemasWriteAnswer> {
    this.writable();
    const document = acceptedDocument(sent, ['body']);
    const version = await this.store.writeSchemas(document, by);
    return this.written(`Version ${version} of the attribute schemas was saved`, version, document);
  }

  async delete(by: Writer): Promise<SchemasWriteAnswer> {
    this.writable();
    const version = await this.store.deleteSchemas(by);
    if (version === false) throw new ClientError(404, 'No attribute schema document is stored');
    return this.written('The attribute schemas were deleted', version, null);
  }

  /** The records of the writes that made each kept version of the document, newest first; a page of them. */
  history(page: { limit: number; cursor?: string }): Promise<AuditPage> {
    return this.audit.page({ target: SCHEMAS_TARGET }, page);
  }

  async version(version: number): Promise<AuditRecord> {
    const record = await this.store.schemasVersion(version);
    if (record === undefined) throw new ClientError(404, `The attribute schemas have no version ${version} (it may be older than the audit retention)`);
    return record;
  }

  /** Makes version `version` of the document current again, as a write of its own; it must still pass today's checks. */
  async restore(version: number, by: Writer): Promise<SchemasWriteAnswer> {
    this.writable();
    const record = await this.version(version);
    if (!isSchemasRecord(record) || record.after === null) {
      throw new ClientError(400, `Version ${version} of the attribute schemas is their deletion; restore an earlier version, or DELETE /admin/schemas`);
    }
    const document = acceptedDocument(record.after, ['query', 'version']);
    const made = await this.store.writeSchemas(document, by, version);
    return this.written(`Version ${version} of the attribute schemas was restored (as version ${made})`, made, document);
  }

  /** 409 when schemas are managed in a file. */
  private writable(): void {
    if (this.file === undefined) return;
    throw managedInFiles('Attribute schemas', `the file ${this.file.path}, given by ${this.file.option}`, 'it', 'schema reads, policy validation and checks still work');
  }

  /** Once this process holds checks to the write: the document written (null: deleted), and the policies with problems against it. */
  private async written(done: string, version: number, document: SchemaDocument | null): Promise<SchemasWriteAnswer> {
    await applied(this.snapshots, done);
    const recheck = document === null ? { policies: [], complete: true } : await runInSlices(recheckPolicies(this.snapshots.policies, document));
    return { document, version, recheck };
  }
}
