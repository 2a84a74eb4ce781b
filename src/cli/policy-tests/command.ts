import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, DEFAULT_CONFIG } from '../../config.js';
import { DocumentError } from '../../documents.js';
import { PolicySetReader } from '../../services/policy-set.js';
import { FORMATS, REPORTERS, type Format, type Outcome } from './report.js';
import { loadTestFile } from './test-file.js';
import { runTestFile } from './run.js';

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

/**
 * `verdict test [paths...] [--format text|tap|junit]`: runs policy test files offline, on the
 * engine the server uses, and prints the outcome. Exit code 0 when every case passes, 1 when one
 * fails or a test file cannot be run; usage errors throw ConfigError (exit code 2).
 */
export function policyTest(args: string[]): number {
  let parsed;
  try {
    parsed = parseArgs({ args, options: { format: { type: 'string', default: 'text' } }, allowPositionals: true, strict: true });
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  const format = parsed.values.format as Format;
  if (!FORMATS.includes(format)) throw new ConfigError(`--format must be one of ${FORMATS.join(', ')}, got '${format}'`);
  const paths = parsed.positionals.length > 0 ? parsed.positionals : ['.'];
  const files = paths.flatMap(testFilesUnder);
  if (files.length === 0) throw new ConfigError(`no test files (*.test.yaml, *.test.yml, *.test.json) under ${paths.join(', ')}`);
  const reader = new PolicySetReader(DEFAULT_CONFIG);
  const outcome: Outcome = { results: [], errors: [] };
  for (const file of files) {
    const fromHere = relative('.', file);
    const shown = fromHere.startsWith('..') ? file : fromHere;
    try {
      outcome.results.push(...runTestFile(loadTestFile(shown, reader)));
    } catch (error) {
      if (!(error instanceof DocumentError)) throw error;
      outcome.errors.push({ file: shown, message: error.message });
    }
  }
  process.stdout.write(REPORTERS[format](outcome));
  return outcome.errors.length === 0 && outcome.results.every((result) => result.passed) ? 0 : 1;
}
