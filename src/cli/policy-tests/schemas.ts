import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { schemaIssues } from '../../engine/index.js';
import { readSchemaFile, SCHEMAS_FILE_NAME } from '../../attribute-schemas/schema-file.js';
import type { SchemaDocument } from '../../attribute-schemas/schema-document.js';
import type { LoadedTestFile } from './test-file.js';

/** Most schema warnings one test file reports: each condition of each policy may have a few. */
const MAX_SCHEMA_WARNINGS = 100;

/**
 * The schema document a test file is held to: the one given (`--schemas`), else the schemas.json
 * beside the test file, else beside the first policy file it names that has one (a `--policies`
 * directory's), else none. Throws DocumentError for a schemas.json that cannot be used.
 */
export function schemaDocumentFor(file: LoadedTestFile, given: SchemaDocument | undefined, read: (path: string) => SchemaDocument = readSchemaFile): SchemaDocument | undefined {
  if (given !== undefined) return given;
  const beside = [file.path, ...file.policyFiles].map((path) => join(dirname(path), SCHEMAS_FILE_NAME)).find((path) => existsSync(path));
  return beside === undefined ? undefined : read(beside);
}

/**
 * What the schemas say of the test file's policies, as `POST /admin/policies/validate` warns of it:
 * one line each, naming where the policy was written, the policy, the field, the rule and the problem.
 */
export function policySchemaWarnings(file: LoadedTestFile, document: SchemaDocument): string[] {
  const warnings = file.policies.flatMap((policy, index) =>
    schemaIssues(policy, document, []).map(({ loc, msg }) => `${file.policyLabels[index]}: policy '${policy.name}': ${loc.join('.')}: ${msg}`),
  );
  return warnings.length > MAX_SCHEMA_WARNINGS ? [...warnings.slice(0, MAX_SCHEMA_WARNINGS), `and ${warnings.length - MAX_SCHEMA_WARNINGS} more`] : warnings;
}
