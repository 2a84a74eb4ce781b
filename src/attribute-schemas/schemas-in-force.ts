import { isDeepStrictEqual } from 'node:util';
import type { SchemaEnforcement } from '../config/config.js';
import { requestSchemas, type RequestSchemas } from './enforcement.js';
import type { SchemaDocument } from './schema-document.js';

/** What checks and registrations are held to: the compiled schemas, when there are any to enforce. */
export interface EnforcedSchemas {
  readonly enforced: RequestSchemas | undefined;
}

/**
 * The attribute schemas in force on one thread: the document that travels with the policy snapshot
 * it holds (see PolicySnapshots.schemas), compiled again whenever a snapshot brings another one. The
 * front applies each snapshot's as it publishes it, before the write that made it is acknowledged,
 * so that the next check is held to the schemas written; a pool worker, each whole set it is sent.
 */
export class SchemasInForce implements EnforcedSchemas {
  /** The document policies are checked against (under every enforcement, for validate and re-checks). */
  document: SchemaDocument | undefined;
  enforced: RequestSchemas | undefined;
  private everEnforced = false;

  constructor(
    private readonly enforcement: SchemaEnforcement,
    /** Told of each check that breaks the schemas. */
    private readonly violated: () => void = () => {},
    /** Told once, the first time there are schemas to enforce. */
    private readonly firstEnforced: () => void = () => {},
  ) {}

  /** Holds checks to `document` from now on (none: undefined); compiles it only when it is another one. */
  apply(document: SchemaDocument | undefined): void {
    if (isDeepStrictEqual(document, this.document)) return;
    // Every document was compiled by the same strict Ajv before it was taken, so this compiles too.
    const enforced = requestSchemas(document, this.enforcement, this.violated);
    if (enforced !== undefined && !this.everEnforced) {
      this.everEnforced = true;
      this.firstEnforced();
    }
    this.document = document;
    this.enforced = enforced;
  }
}
