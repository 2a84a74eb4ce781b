import { XMLBuilder } from 'fast-xml-parser';
import YAML from 'yaml';
import type { CaseResult } from './run.js';

export const FORMATS = ['text', 'tap', 'junit'] as const;
export type Format = (typeof FORMATS)[number];

/** A test file that could not be run: unreadable, not of the schema, or holding an invalid policy. */
export interface FileError {
  file: string;
  /** Starts with the file at fault: the test file or a policy file it names. */
  message: string;
}

/** Something a test file's policies say that the attribute schemas contradict: reported, never a failure (as validation warns). */
export interface FileWarning {
  file: string;
  message: string;
}

export interface Outcome {
  results: CaseResult[];
  errors: FileError[];
  warnings: FileWarning[];
}

const decisionText = ({ allowed, reason }: { allowed: boolean; reason?: string }) =>
  `${allowed ? 'allowed' : 'denied'}${reason === undefined ? '' : ` (${reason})`}`;

/** Why a case failed: the decision it got, and whether its check breaks the schemas (listed in its `why`). */
function mismatch(result: CaseResult): string {
  const decided = result.decidedAsExpected ? `decided as expected: ${decisionText(result.actual)}` : `expected ${decisionText(result.expected)}, got ${decisionText(result.actual)}`;
  return result.violations.length === 0 ? decided : `${decided}; the check breaks the attribute schemas`;
}

/** The closing line: also the plain `N passed, N failed` line that CI systems read. */
const summary = ({ results, errors }: Outcome) => {
  const passed = results.filter((result) => result.passed).length;
  return `${passed} passed, ${results.length - passed + errors.length} failed`;
};

function text(outcome: Outcome): string {
  const lines = outcome.results.flatMap((result) =>
    result.passed
      ? [`ok    ${result.file}: ${result.name}`]
      : [`FAIL  ${result.file}: ${result.name}: ${mismatch(result)}`, ...result.why.map((line) => `        ${line}`)],
  );
  lines.push(...outcome.warnings.map((warning) => `WARN  ${warning.message}`));
  lines.push(...outcome.errors.map((error) => `ERROR ${error.message}`));
  return [...lines, summary(outcome)].join('\n') + '\n';
}

function tap(outcome: Outcome): string {
  const points = [
    ...outcome.results.map((result) => ({
      ok: result.passed,
      title: `${result.file}: ${result.name}`,
      details: result.passed ? undefined : { message: mismatch(result), expected: result.expected, actual: result.actual, why: result.why },
    })),
    ...outcome.errors.map((error) => ({ ok: false, title: `${error.file}: could not be run`, details: { message: error.message } })),
  ];
  const lines = ['TAP version 14', `1..${points.length}`];
  points.forEach((point, index) => {
    lines.push(`${point.ok ? 'ok' : 'not ok'} ${index + 1} - ${point.title.replace(/#/g, '\\#')}`);
    if (point.details !== undefined) {
      const yaml = YAML.stringify(point.details).trimEnd().split('\n').map((line) => `  ${line}`);
      lines.push('  ---', ...yaml, '  ...');
    }
  });
  lines.push(...outcome.warnings.map((warning) => `# WARN ${warning.message}`));
  lines.push(`# ${summary(outcome)}`);
  return lines.join('\n') + '\n';
}

function junit(outcome: Outcome): string {
  const files = [...new Set([...outcome.results.map((result) => result.file), ...outcome.errors.map((error) => error.file)])];
  const suites = files.map((file) => {
    const results = outcome.results.filter((result) => result.file === file);
    const errors = outcome.errors.filter((error) => error.file === file);
    const warnings = outcome.warnings.filter((warning) => warning.file === file);
    return {
      '@_name': file,
      '@_tests': results.length + errors.length,
      '@_failures': results.filter((result) => !result.passed).length,
      '@_errors': errors.length,
      testcase: [
        ...results.map((result) => ({
          '@_classname': file,
          '@_name': result.name,
          ...(result.passed ? {} : { failure: { '@_message': mismatch(result), '@_type': 'decision', '#text': result.why.join('\n') } }),
        })),
        ...errors.map((error) => ({ '@_classname': file, '@_name': 'could not be run', error: { '@_message': error.message, '@_type': 'test-file' } })),
      ],
      ...(warnings.length > 0 && { 'system-out': warnings.map((warning) => `WARN ${warning.message}`).join('\n') }),
    };
  });
  const failures = outcome.results.filter((result) => !result.passed).length;
  const document = {
    '?xml': { '@_version': '1.0', '@_encoding': 'UTF-8' },
    testsuites: { '@_name': 'verdict test', '@_tests': outcome.results.length + outcome.errors.length, '@_failures': failures, '@_errors': outcome.errors.length, testsuite: suites },
  };
  return new XMLBuilder({ ignoreAttributes: false, format: true, suppressEmptyNode: true }).build(document);
}

export const REPORTERS: Record<Format, (outcome: Outcome) => string> = { text, tap, junit };
