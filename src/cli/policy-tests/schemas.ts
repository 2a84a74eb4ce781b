import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readSchemaFile, SCHEMAS_FILE_NAME } from '../../attribute-schemas/schema-file.js';
import type { SchemaDocument } from '../../attribute-schemas/schema-document.js';
import type { LoadedTestFile } from './test-file.js';

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

