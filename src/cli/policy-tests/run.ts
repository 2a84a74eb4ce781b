import { issuesInOneLine } from '../../schemas/errors.js';
import { decisionOf } from '../../decide/kernel.js';
import { compile, explain, type Decision } from '../../engine/index.js';
import { isShadow } from '../../snapshot/policy-snapshots.js';
import type { FailedCondition, FailedGroup, FailedSet } from '../../engine/explain.js';
import { instantOf } from '../../engine/time.js';
import type { CheckRequest } from '../../schemas/check.js';
import { readCheckRequest } from '../../requests/check-request.js';
import { resolveCheck } from '../../registry/resolve.js';
import { deniedItem } from '../../decide/undecidable-answers.js';
import type { LoadedTestFile } from './test-file.js';
import type { AttributeValidators } from '../../attribute-schemas/attribute-validators.js';

export interface CaseResult {
  file: string;
  name: string;
  /** Decided as expected, and its check keeps to the attribute schemas. */
  passed: boolean;
  decidedAsExpected: boolean;
  expected: { allowed: boolean; reason?: string };
  actual: Decision;
  /** What the check breaks of the attribute schemas (at most 10): a case that breaks them fails, whatever it was decided. */
  violations: readonly string[];
  /** When the case failed: what it broke of the schemas, and why the engine decided as it did, one line per reason. */
  why: string[];
}

/** What a failed condition compared with: its value, or its reference and what that resolved to. */
function comparedWith(failed: Omit<FailedCondition, 'side'>): string {
  if (failed.value_from === undefined) return JSON.stringify(failed.expected);
  return `${failed.value_from} (${failed.value_from_missing ? 'missing' : JSON.stringify(failed.expected)})`;
}

const conditionFailed = (failed: Omit<FailedCondition, 'side'>) =>
  `${failed.path} ${failed.operator} ${comparedWith(failed)} does not hold: ${failed.missing ? 'missing' : `found ${JSON.stringify(failed.actual)}`}`;

/** Why the first condition, group or set of a rule that failed did not hold. */
function whyFailed(failed: FailedCondition | FailedGroup | FailedSet): string {
  return `${failed.side} ${whyItemFailed(failed)}`;
}

function whyItemFailed(failed: Omit<FailedCondition, 'side'> | Omit<FailedGroup, 'side'> | Omit<FailedSet, 'side'>): string {
  if ('set' in failed) {
    const set = failed.from === undefined ? `set ${failed.set}` : `set ${failed.set} of policy ${failed.from}`;
    return failed.failed === undefined ? `${set} is not defined` : `${set} does not hold: ${whyItemFailed(failed.failed)}`;
  }
  if (!('group' in failed)) return conditionFailed(failed);
  if (failed.group === 'none_of') return `none_of does not hold: its alternative ${failed.held! + 1} held`;
  return `any_of does not hold: ${failed.alternatives!.map((alternative, index) => `alternative ${index + 1}: ${whyItemFailed(alternative)}`).join('; ')}`;
}

/** What the trace of a decision says, in lines a person reads: the deciding rule or default, then each rule of the action. */
function whyLines(decided: ReturnType<typeof explain>): string[] {
  const rules = decided.policies.flatMap((policy) =>
    policy.rules.map(({ name, matched, failed }) => {
      const outcome = matched || failed === undefined ? 'matched' : whyFailed(failed);
      return `rule ${name} of policy ${policy.name}: ${outcome}`;
    }),
  );
  return [decided.decided_by.why, ...rules];
}

/**
 * Decides every case of a loaded test file with the server's engine, and compares; with `schemas`,
 * holds each case's attributes (registered and supplied, merged) to them.
 */
export function runTestFile(file: LoadedTestFile, schemas?: AttributeValidators): CaseResult[] {
  // Cases are decided by the live policies, as checks are: a shadow never decides an answer.
  const snapshot = compile(file.policies.filter((policy) => !isShadow(policy)), 0);
  const registered = (uri: string) => file.entities.get(uri);
  return file.cases.map((testCase, index) => {
    const expected = testCase.reason === undefined ? { allowed: testCase.allowed } : { allowed: testCase.allowed, reason: testCase.reason };
    const result = (actual: Decision, why: () => string[], violations: readonly string[] = []): CaseResult => {
      const decidedAsExpected = actual.allowed === expected.allowed && (expected.reason === undefined || actual.reason === expected.reason);
      const passed = decidedAsExpected && violations.length === 0;
      const broken = violations.map((violation) => `breaks the attribute schemas: ${violation}`);
      return { file: file.path, name: testCase.name, passed, decidedAsExpected, expected, actual, violations, why: passed ? [] : [...broken, ...(decidedAsExpected ? [] : why())] };
    };
    const { time, ...check } = testCase;
    const timeIssues = time === undefined || instantOf(time) !== undefined ? [] : [{ loc: ['cases', index, 'time'], msg: `'${time}' is not an RFC 3339 date-time with its offset` }];
    const read = readCheckRequest(check as CheckRequest, ['cases', index]);
    const input = timeIssues.length === 0 ? read : [...timeIssues, ...(Array.isArray(read) ? read : [])];
    if (Array.isArray(input)) {
      const problem = issuesInOneLine(input);
      const actual = { allowed: false, reason: problem };
      return { file: file.path, name: testCase.name, passed: false, decidedAsExpected: false, expected, actual, violations: [], why: ['the check cannot be decided as written'] };
    }
    let request;
    try {
      // The registry lookup is synchronous here: entities come from the test file.
      request = resolveCheck(input, registered) as Exclude<ReturnType<typeof resolveCheck>, Promise<unknown>>;
    } catch (error) {
      return result(deniedItem(error), () => ['the check cannot be decided as written (a supplied attribute contradicts a registered one, say): nothing was decided']);
    }
    if (time !== undefined) request.time = new Date(instantOf(time)!).toISOString();
    const decision = decisionOf(snapshot, request);
    return result(decision, () => whyLines(explain(snapshot, request, decision)), schemas?.violations(request));
  });
}
