import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, type Config } from '../config/config.js';
import { DocumentError, readText } from '../document-files.js';
import { readSchemaDocument, SchemaDocumentError, type SchemaDocument } from './schema-document.js';

/** The schema document a policy directory may hold beside its policies (never read as a policy). */
export const SCHEMAS_FILE_NAME = 'schemas.json';

/** The file the schema document is managed in, and the option that says so. */
export interface SchemaFile {
  path: string;
  option: '--schemas (SCHEMAS_FILE)' | '--policies (POLICIES_DIR)';
}

/**
 * Where the configuration says schemas are managed in files: the `--schemas` file, else, with policy
 * files (`--policies`), the schemas.json beside them (there or not); undefined: in the store.
 */
export function schemaFileOf(config: Pick<Config, 'schemasFile' | 'policiesDir'>): SchemaFile | undefined {
  if (config.schemasFile !== '') return { path: config.schemasFile, option: '--schemas (SCHEMAS_FILE)' };
  if (config.policiesDir !== '') return { path: join(config.policiesDir, SCHEMAS_FILE_NAME), option: '--policies (POLICIES_DIR)' };
  return undefined;
}

/**
 * The schema document of a schema file: none when the policy directory has no schemas.json. Throws
 * ConfigError naming the file and what is wrong with it.
 */
export function loadSchemaDocument(file: SchemaFile): SchemaDocument | undefined {
  if (file.option === '--policies (POLICIES_DIR)' && !existsSync(file.path)) return undefined;
  try {
    return readSchemaFile(file.path);
  } catch (error) {
    if (error instanceof DocumentError) throw new ConfigError(`${file.option} ${error.message}`);
    throw error;
  }
}

/**
 * The text of a schema file and the document it holds, or what is wrong with it (naming the file):
 * read again at each change of a policy directory. A policy directory without a schemas.json has none
 * (its text is then undefined).
 */
export function readSchemaFileText(file: SchemaFile): { text?: string; document?: SchemaDocument; problem?: string } {
  if (file.option === '--policies (POLICIES_DIR)' && !existsSync(file.path)) return {};
  let text: string;
  try {
    text = readText(file.path);
  } catch (error) {
    if (!(error instanceof DocumentError)) throw error;
    return { problem: error.message };
  }
  try {
    return { text, document: readSchemaDocumentAt(file.path, text) };
  } catch (error) {
    if (!(error instanceof DocumentError)) throw error;
    return { text, problem: error.message };
  }
}

/** The schema document `text`, read from `path`. Throws DocumentError naming the file and what is wrong with it. */
function readSchemaDocumentAt(path: string, text: string): SchemaDocument {
  try {
    return readSchemaDocument(text);
  } catch (error) {
    if (error instanceof SchemaDocumentError) throw new DocumentError(`${path}: ${error.message}`);
    throw error;
  }
}

/** The schema document in the file at `path`. Throws DocumentError naming the file and what is wrong with it. */
export function readSchemaFile(path: string): SchemaDocument {
  return readSchemaDocumentAt(path, readText(path));
}
