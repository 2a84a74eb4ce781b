/**
 * The policy being edited, checked by the server as the operator types (POST /admin/policies/validate,
 * which writes nothing): what a save would refuse, and warnings about what is valid but probably not meant.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, call } from '../api.js';
import type { ValidationIssue } from '../issues.js';
import type { SentPolicy } from '../policy-draft.js';

/** Wait for a pause in typing before asking the server. */
const PAUSE_MS = 300;

interface Checked {
  problems: string[];
  warnings: string[];
}

const SIDE_NAMES: Record<string, string> = {
  principal_conditions: 'principal condition',
  resource_conditions: 'resource condition',
  action_conditions: 'action condition',
  context_conditions: 'context condition',
  actions: 'action',
};

/** `["body", "rules", 2, "principal_conditions", 0]` as "Rule 3, principal condition 1". */
export function placeOf(loc: (string | number)[]): string {
  const parts: string[] = [];
  const steps = loc.slice(1);
  for (let index = 0; index < steps.length; index++) {
    const step = steps[index]!;
    const next = steps[index + 1];
    if (step === 'rules' && typeof next === 'number') {
      parts.push(`Rule ${next + 1}`);
      index++;
    } else if (typeof step === 'string' && step in SIDE_NAMES && typeof next === 'number') {
      parts.push(`${SIDE_NAMES[step]} ${next + 1}`);
      index++;
    } else if (typeof step === 'string') {
      parts.push(SIDE_NAMES[step] === undefined ? step : `${SIDE_NAMES[step]}s`);
    }
  }
  return parts.join(', ');
}

const lines = (issues: ValidationIssue[]) => issues.map((issue) => (placeOf(issue.loc) === '' ? issue.msg : `${placeOf(issue.loc)}: ${issue.msg}`));

export function PolicyChecks({ policy }: { policy: SentPolicy | undefined }) {
  const [checked, setChecked] = useState<Checked | undefined>(undefined);
  const text = policy === undefined ? undefined : JSON.stringify(policy);

  useEffect(() => {
    if (text === undefined) return undefined;
    let current = true;
    const timer = setTimeout(() => {
      call<{ warnings: ValidationIssue[] }>('POST', '/admin/policies/validate', JSON.parse(text)).then(
        ({ warnings }) => current && setChecked({ problems: [], warnings: lines(warnings) }),
        (error: unknown) => {
          if (!current) return;
          const problems = error instanceof ApiError && error.issues.length > 0 ? lines(error.issues) : [(error as Error).message];
          setChecked({ problems, warnings: [] });
        },
      );
    }, PAUSE_MS);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [text]);

  if (policy === undefined) {
    // What was checked before the value broke no longer describes the policy being typed.
    return (
      <section class="policy-checks" aria-labelledby="policy-checks-heading" aria-live="polite">
        <h2 id="policy-checks-heading">Checks as you type</h2>
        <p>Not checked while something typed is not valid JSON.</p>
      </section>
    );
  }
  if (checked === undefined) return null;
  const clean = checked.problems.length === 0 && checked.warnings.length === 0;
  return (
    <section class="policy-checks" aria-labelledby="policy-checks-heading" aria-live="polite">
      <h2 id="policy-checks-heading">Checks as you type</h2>
      {clean && <p>No problems and no warnings.</p>}
      {checked.problems.length > 0 && (
        <>
          <h3>Saving would be refused</h3>
          <ul class="problems">
            {checked.problems.map((line) => (
              <li key={line}>{line}</li>
            ))}
          </ul>
        </>
      )}
      {checked.warnings.length > 0 && (
        <>
          <h3>Warnings</h3>
          <ul class="warnings">
            {checked.warnings.map((line) => (
              <li key={line}>{line}</li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
