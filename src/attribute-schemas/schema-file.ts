import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, type Config } from '../config.js';
import { DocumentError, readText } from '../documents.js';
import { readSchemaDocument, SchemaDocumentError, type SchemaDocument } from './schema-document.js';

/** The schema document a policy directory may hold beside its policies (never read as a policy). */
export const SCHEMAS_FILE_NAME = 'schemas.json';

/**
 * The schema document of the configuration: the `--schemas` file, else the policy directory's
 * schemas.json when there is one, else none. Throws ConfigError naming the file and what is wrong with it.
 */
export function loadSchemaDocument(config: Pick<Config, 'schemasFile' | 'policiesDir'>): SchemaDocument | undefined {
  const besidePolicies = config.policiesDir === '' ? undefined : join(config.policiesDir, SCHEMAS_FILE_NAME);
  const [path, label] =
    config.schemasFile !== '' ? [config.schemasFile, '--schemas (SCHEMAS_FILE)'] : besidePolicies !== undefined && existsSync(besidePolicies) ? [besidePolicies, '--policies (POLICIES_DIR)'] : [];
  if (path === undefined) return undefined;
  try {
    return readSchemaFile(path);
  } catch (error) {
    if (error instanceof DocumentError) throw new ConfigError(`${label} ${error.message}`);
    throw error;
  }
}

/** The schema document in the file at `path`. Throws DocumentError naming the file and what is wrong with it. */
export function readSchemaFile(path: string): SchemaDocument {
  try {
    return readSchemaDocument(readText(path));
  } catch (error) {
    if (error instanceof SchemaDocumentError) throw new DocumentError(`${path}: ${error.message}`);
    throw error;
  }
}
