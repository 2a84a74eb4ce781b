/** How a decision came about: the `explain` object of an answer to `/check?explain=true`. */

type Side = 'principal' | 'resource' | 'action' | 'context';

interface FailedCondition {
  path: string;
  operator: string;
  value_from?: string;
  expected: unknown;
  actual?: unknown;
  missing?: boolean;
  value_from_missing?: boolean;
  /** Why the condition could not be evaluated on the value it read. */
  undecidable?: string;
}

/** A group that did not hold: each alternative's first failure (any_of), or the alternative that held (none_of). */
interface FailedGroup {
  group: 'any_of' | 'none_of';
  alternatives?: FailedCondition[];
  held?: number;
}

/** A reference to a condition set that did not hold, and the set's first item that did not. */
interface FailedSet {
  set: string;
  failed?: FailedCondition | FailedGroup;
}

type Failed = FailedCondition | FailedGroup | FailedSet;

interface RuleTrace {
  name: string;
  effect: 'allow' | 'deny';
  matched: boolean;
  failed?: Failed & { side: Side };
  alternatives_held?: { side: Side; alternative: number }[];
  /** A matched deny rule's conditions that could not be evaluated, and so counted as holding. */
  undecidable?: { side: Side; path: string; operator: string; why: string }[];
}

export interface Explanation {
  revision: number;
  action: string;
  principal: { uri: string | null; attributes: Record<string, unknown> };
  resource: { uri: string | null; attributes: Record<string, unknown> };
  policies: { name: string; default_effect: 'allow' | 'deny'; rules: RuleTrace[] }[];
  decided_by: { kind: string; effect: string; why: string; policy?: string; rule?: string };
  /** The decision's time, when a condition read it. */
  time?: string;
}

const json = (value: unknown) => JSON.stringify(value);

function conditionOutcome(failed: FailedCondition): string {
  const found = failed.missing ? 'it is missing' : `it is ${json(failed.actual)}`;
  const comparedWith = failed.value_from === undefined ? json(failed.expected) : `${failed.value_from} (${failed.value_from_missing ? 'missing' : json(failed.expected)})`;
  return `${failed.path} ${failed.operator} ${comparedWith} does not hold: ${failed.undecidable === undefined ? found : `it cannot be evaluated, ${failed.undecidable}`}`;
}

function failedOutcome(failed: Failed): string {
  if ('set' in failed) return failed.failed === undefined ? `set ${failed.set} is not defined` : `set ${failed.set}: ${failedOutcome(failed.failed)}`;
  if (!('group' in failed)) return conditionOutcome(failed);
  if (failed.group === 'none_of') return `none_of does not hold: alternative ${failed.held! + 1} holds`;
  return `any_of does not hold: ${failed.alternatives!.map((alternative, index) => `(${index + 1}) ${conditionOutcome(alternative)}`).join('; ')}`;
}

function ruleOutcome({ matched, failed, alternatives_held: held, undecidable }: RuleTrace): string {
  if (matched || failed === undefined) {
    const notes = [
      ...(held ?? []).map(({ side, alternative }) => `${side} any_of: alternative ${alternative + 1}`),
      ...(undecidable ?? []).map(({ side, path, operator, why }) => `${side} ${path} ${operator} counted as holding: it cannot be evaluated, ${why}`),
    ];
    return notes.length === 0 ? 'matched' : `matched (${notes.join(', ')})`;
  }
  return `${failed.side} ${failedOutcome(failed)}`;
}

function Entity({ label, entity }: { label: string; entity: Explanation['principal'] }) {
  return (
    <>
      <dt>{label}</dt>
      <dd class="mono">
        {entity.uri !== null && `${entity.uri} `}
        {json(entity.attributes)}
      </dd>
    </>
  );
}

export function DecisionTrace({ explanation }: { explanation: Explanation }) {
  const { decided_by: decidedBy } = explanation;
  return (
    <section class="trace" aria-labelledby="trace-heading">
      <h3 id="trace-heading">Why</h3>
      <p class="why">{decidedBy.why}.</p>
      <dl>
        <Entity label="Principal, as decided on" entity={explanation.principal} />
        <Entity label="Resource, as decided on" entity={explanation.resource} />
        <dt>Action</dt>
        <dd>{explanation.action}</dd>
        <dt>Policy revision</dt>
        <dd>{explanation.revision}</dd>
        {explanation.time !== undefined && (
          <>
            <dt>Decision time</dt>
            <dd class="mono">{explanation.time}</dd>
          </>
        )}
      </dl>
      {explanation.policies.length === 0 ? (
        <p>No policy has a rule for this action.</p>
      ) : (
        <table>
          <caption>Rules for action {explanation.action}</caption>
          <thead>
            <tr>
              <th scope="col">Policy</th>
              <th scope="col">Rule</th>
              <th scope="col">Effect</th>
              <th scope="col">Outcome</th>
            </tr>
          </thead>
          <tbody>
            {explanation.policies.flatMap((policy) =>
              policy.rules.map((rule) => {
                const decisive = decidedBy.kind === 'rule' && decidedBy.policy === policy.name && decidedBy.rule === rule.name;
                return (
                  <tr key={`${policy.name}/${rule.name}`} class={decisive ? 'decisive' : undefined}>
                    <td>{policy.name}</td>
                    <td>
                      {rule.name}
                      {decisive && <strong> (decided)</strong>}
                    </td>
                    <td>{rule.effect}</td>
                    <td class={rule.matched ? undefined : 'mono'}>{ruleOutcome(rule)}</td>
                  </tr>
                );
              }),
            )}
          </tbody>
        </table>
      )}
    </section>
  );
}
