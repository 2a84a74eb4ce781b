import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, DEFAULT_CONFIG } from '../../config/config.js';
import { DocumentError } from '../../document-files.js';
import { PolicySetReader } from '../../policy-files/policy-set.js';
import { FORMATS, REPORTERS, type Format, type Outcome } from './report.js';
import { loadTestFile } from './test-file.js';
import { runTestFile } from './run.js';
import { schemaDocumentFor } from './schemas.js';
import { policySchemaProblems } from '../../attribute-schemas/policy-problems.js';
import { readSchemaFile } from '../../attribute-schemas/schema-file.js';
import type { SchemaDocument } from '../../attribute-schemas/schema-document.js';
import { AttributeValidators } from '../../attribute-schemas/attribute-validators.js';

/** How `verdict test` finds test files in a directory: by name, so that policy files beside them are not taken for tests. */
const TEST_FILE = /\.test\.(ya?ml|json)$/;

function testFilesUnder(path: string): string[] {
  let stats;
  try {
    stats = statSync(path);
  } catch {
    throw new ConfigError(`no such file or directory: ${path}`);
  }
  if (!stats.isDirectory()) return [path];
  return readdirSync(path, { withFileTypes: true })
    .filter((entry) => !entry.name.startsWith('.') && entry.name !== 'node_modules')
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((entry) => {
      const child = join(path, entry.name);
      if (entry.isDirectory()) return testFilesUnder(child);
      return TEST_FILE.test(entry.name) ? [child] : [];
    });
}

/** The `--schemas` document; a file that cannot be used is a usage error. */
function givenSchemas(path: string | undefined): SchemaDocument | undefined {
  if (path === undefined) return undefined;
  try {
    return readSchemaFile(path);
  } catch (error) {
    if (error instanceof DocumentError) throw new ConfigError(`--schemas ${error.message}`);
    throw error;
  }
}

/**
 * `verdict test [paths...] [--format text|tap|junit] [--schemas <file>]`: runs policy test files
 * offline, on the engine the server uses, and prints the outcome; with attribute schemas (given, or
 * a schemas.json beside a test file or its policy files), warns of what its policies say that the
 * schemas contradict and fails each case whose check breaks them. Exit code 0 when every case
 * passes, 1 when one fails or a test file cannot be run; usage errors throw ConfigError (exit code 2).
 */
export function policyTest(args: string[]): number {
  let parsed;
  try {
    parsed = parseArgs({ args, options: { format: { type: 'string', default: 'text' }, schemas: { type: 'string' } }, allowPositionals: true, strict: true });
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  const given = givenSchemas(parsed.values.schemas);
  const format = parsed.values.format as Format;
  if (!FORMATS.includes(format)) throw new ConfigError(`--format must be one of ${FORMATS.join(', ')}, got '${format}'`);
  const paths = parsed.positionals.length > 0 ? parsed.positionals : ['.'];
  const files = paths.flatMap(testFilesUnder);
  if (files.length === 0) throw new ConfigError(`no test files (*.test.yaml, *.test.yml, *.test.json) under ${paths.join(', ')}`);
  const reader = new PolicySetReader(DEFAULT_CONFIG);
  const outcome: Outcome = { results: [], errors: [], warnings: [] };
  // Each schemas.json is read and compiled once, however many test files it applies to.
  const schemaFiles = new Map<string, SchemaDocument>();
  const validators = new Map<SchemaDocument, AttributeValidators>();
  const compiledOnce = (document: SchemaDocument) => validators.get(document) ?? validators.set(document, new AttributeValidators(document)).get(document)!;
  const readOnce = (path: string) => schemaFiles.get(path) ?? schemaFiles.set(path, readSchemaFile(path)).get(path)!;
  for (const file of files) {
    const fromHere = relative('.', file);
    const shown = fromHere.startsWith('..') ? file : fromHere;
    try {
      const loaded = loadTestFile(shown, reader);
      const document = schemaDocumentFor(loaded, given, readOnce);
      if (document !== undefined) outcome.warnings.push(...policySchemaProblems(loaded.policies, loaded.policyLabels, document).map((message) => ({ file: shown, message })));
      outcome.results.push(...runTestFile(loaded, document && compiledOnce(document)));
    } catch (error) {
      if (!(error instanceof DocumentError)) throw error;
      outcome.errors.push({ file: shown, message: error.message });
    }
  }
  process.stdout.write(REPORTERS[format](outcome));
  return outcome.errors.length === 0 && outcome.results.every((result) => result.passed) ? 0 : 1;
}
