/** Try decisions: one check composed in a form, or a bulk of checks pasted as JSON. */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, call } from '../api.js';
import { Alerts, TextArea, TextField } from '../components.js';
import { parseAttributes } from '../json-text.js';
import { actionOf, sideSummary } from '../check-summary.js';
import { EntitySide, checkRequestBody, emptySide } from './entity-side.js';
import { useCheckForm } from '../check-form.js';
import { WhichResources } from './which-resources.js';
import { takeReplay, type Compared, type ReplayedCheck } from '../replay.js';
import { DecisionTrace, type Explanation } from './decision-trace.js';

interface Decision {
  allowed: boolean;
  reason: string;
  explain?: Explanation;
}

const FIELDS = ['principal', 'principal.uri', 'principal.attributes', 'principal.token', 'resource', 'resource.uri', 'resource.attributes', 'action', 'action_attributes', 'context', 'time'];

/** The check with the action's attributes and the context typed in their fields (JSON objects; empty text is none), or every field's message. */
function withActionAndContext(request: ReturnType<typeof checkRequestBody>, actionAttributes: string, context: string): ReturnType<typeof checkRequestBody> {
  const attributes = parseAttributes(actionAttributes);
  const contextValue = parseAttributes(context);
  if (request.ok && attributes.ok && contextValue.ok) {
    const body = { ...request.body };
    if (attributes.value !== undefined) body.action_attributes = attributes.value;
    if (contextValue.value !== undefined) body.context = contextValue.value;
    return { ok: true, body };
  }
  const errors = request.ok ? {} : { ...request.errors };
  if (!attributes.ok) errors.action_attributes = attributes.message;
  if (!contextValue.ok) errors.context = contextValue.message;
  return { ok: false, errors };
}

const BULK_EXAMPLE = `[
  {"principal": {"uri": "user:alice"}, "resource": {"attributes": {"kind": "laptop"}}, "action": "administer"},
  {"principal": {"attributes": {"department": "hr"}}, "resource": {"attributes": {"kind": "hr-record"}}, "action": "read"}
]`;

function DecisionBadge({ allowed }: { allowed: boolean }) {
  return <strong class={allowed ? 'badge allowed' : 'badge denied'}>{allowed ? 'Allowed' : 'Denied'}</strong>;
}

/** One check; `replay` fills it in (a denial from the live view) and runs it when nothing of it was masked. */
function SingleCheck({ replay }: { replay?: ReplayedCheck }) {
  const [principal, setPrincipal] = useState(replay?.principal ?? emptySide());
  const [resource, setResource] = useState(replay?.resource ?? emptySide());
  const [action, setAction] = useState(replay?.action ?? '');
  const [actionAttributes, setActionAttributes] = useState(replay?.actionAttributes ?? '');
  const [context, setContext] = useState(replay?.context ?? '');
  const [time, setTime] = useState(replay?.time ?? '');
  // A fixed time is tried, not decided: the admin route decides as if then (the server's clock otherwise).
  const { errors, alerts, answer: decision, submit } = useCheckForm(FIELDS, (body) =>
    time.trim() === '' ? call<Decision>('POST', '/check?explain=true', body) : call<Decision>('POST', '/admin/check-at', { check: body, time: time.trim() }),
  );
  const request = () => withActionAndContext(checkRequestBody(principal, resource, action), actionAttributes, context);

  useEffect(() => {
    if (replay !== undefined && replay.maskedKeys.length === 0) void submit(undefined, request());
  }, []);

  return (
    <form onSubmit={(event) => submit(event, request())} noValidate aria-labelledby="single-check">
      <h2 id="single-check">Check</h2>
      {replay !== undefined && replay.comparison === undefined && (
        <p class="notice" role="status">
          {replay.maskedKeys.length === 0
            ? 'A recent denial, replayed against the current policies and registry: its decision and why are below.'
            : `A recent denial, filled in without its attribute values, which the server does not keep (--recent-denials-values keeps them): fill in ${replay.maskedKeys.join(', ')} (null here), then run the check.`}
        </p>
      )}
      {replay?.comparison !== undefined && <Comparison {...replay.comparison} />}
      <div class="two-columns">
        <EntitySide
          legend="Principal"
          side={principal}
          onChange={setPrincipal}
          errors={errors}
          example='{"department": "it"}'
          withToken
        />
        <EntitySide
          legend="Resource"
          side={resource}
          onChange={setResource}
          errors={errors}
          example='{"kind": "laptop"}'
        />
      </div>
      <div class="row">
        <TextField label="Action" value={action} onValue={setAction} error={errors.action} hint="Defaults to access." placeholder="administer" />
      </div>
      <div class="two-columns">
        <TextArea
          label="Action attributes (JSON)"
          rows={2}
          value={actionAttributes}
          onValue={setActionAttributes}
          error={errors.action_attributes}
          hint="Optional: what action_conditions read."
          placeholder='{"soft": true}'
        />
        <TextArea label="Context (JSON)" rows={2} value={context} onValue={setContext} error={errors.context} hint="Optional: what context_conditions read." placeholder='{"ip": "10.1.2.3"}' />
      </div>
      <div class="row">
        <TextField
          label="Decision time"
          value={time}
          onValue={setTime}
          error={errors.time}
          hint="Optional: decide as if at this RFC 3339 date-time (the context's time), to try time windows; the server's clock otherwise."
          placeholder="2026-11-27T08:30:00Z"
        />
      </div>
      <div class="actions">
        <button type="submit" class="primary">
          Run check
        </button>
      </div>
      <Alerts messages={alerts} />
      <div aria-live="polite">
        {decision !== undefined && (
          <p class="decision">
            <DecisionBadge allowed={decision.allowed} /> <span class="reason">{decision.reason}</span>
          </p>
        )}
        {decision?.explain !== undefined && <DecisionTrace explanation={decision.explain} />}
      </div>
    </form>
  );
}

/** A changed check's two decisions, side by side, each with its explanation; the form below holds the check as it was read. */
function Comparison({ before, after }: NonNullable<ReplayedCheck['comparison']>) {
  const column = (compared: Compared) => (
    <section aria-label={compared.title}>
      <h3>{compared.title}</h3>
      <p class="decision">
        <DecisionBadge allowed={compared.allowed} /> <span class="reason">{compared.reason}</span>
      </p>
      {compared.explain !== undefined ? <DecisionTrace explanation={compared.explain as unknown as Explanation} /> : <p>{compared.explain_cut ?? 'No explanation was kept.'}</p>}
    </section>
  );
  return (
    <div aria-label="Compared decisions">
      <p class="notice" role="status">
        A check decided two ways, shown side by side. The form holds the check as the server read it (after the registry merge); running it decides it again by the policies in force.
      </p>
      <div class="two-columns">
        {column(before)}
        {column(after)}
      </div>
    </div>
  );
}

function BulkCheck() {
  const [text, setText] = useState(BULK_EXAMPLE);
  const [error, setError] = useState<string | undefined>(undefined);
  const [results, setResults] = useState<{ requests: unknown[]; decisions: Decision[] } | undefined>(undefined);

  const run = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    setResults(undefined);
    let requests: unknown;
    try {
      requests = JSON.parse(text);
    } catch (problem) {
      return setError(`The JSON does not parse: ${(problem as Error).message}`);
    }
    if (!Array.isArray(requests)) return setError('A bulk is a JSON list of check requests: [ {...}, {...} ]');
    try {
      setResults({ requests, decisions: await call<Decision[]>('POST', '/check/bulk', requests) });
    } catch (problem) {
      const issues = problem instanceof ApiError ? problem.issues : [];
      setError(issues.length > 0 ? issues.map((issue) => `${issue.loc.slice(1).join('.')}: ${issue.msg}`).join('; ') : (problem as Error).message);
    }
  };

  return (
    <form onSubmit={run} noValidate aria-labelledby="bulk-check">
      <h2 id="bulk-check">Bulk check</h2>
      <TextArea label="Check requests (JSON list)" rows={6} value={text} onValue={setText} error={error} />
      <div class="actions">
        <button type="submit" class="primary">
          Run bulk
        </button>
      </div>
      {results !== undefined && (
        <table>
          <caption>{results.decisions.length} decisions</caption>
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">Principal</th>
              <th scope="col">Resource</th>
              <th scope="col">Action</th>
              <th scope="col">Decision</th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {results.decisions.map((decision, index) => (
              <tr key={index}>
                <td>{index + 1}</td>
                <td class="mono">{sideSummary(results.requests[index], 'principal')}</td>
                <td class="mono">{sideSummary(results.requests[index], 'resource')}</td>
                <td>{actionOf(results.requests[index])}</td>
                <td>
                  <DecisionBadge allowed={decision.allowed} />
                </td>
                <td>{decision.reason}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </form>
  );
}

export function Playground() {
  const [replay] = useState(takeReplay);
  const [mode, setMode] = useState<'check' | 'which'>('check');
  return (
    <section>
      <h1 tabIndex={-1}>Playground</h1>
      <p>Decisions here are real checks against the current policies and registry; they change nothing.</p>
      <fieldset class="mode">
        <legend>Ask</legend>
        <label>
          <input type="radio" name="mode" checked={mode === 'check'} onChange={() => setMode('check')} /> May a principal act on this resource?
        </label>
        <label>
          <input type="radio" name="mode" checked={mode === 'which'} onChange={() => setMode('which')} /> Which resources may a principal act on?
        </label>
      </fieldset>
      {mode === 'check' ? <SingleCheck replay={replay} /> : <WhichResources />}
      <BulkCheck />
    </section>
  );
}
