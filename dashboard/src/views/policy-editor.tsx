/** Create a policy, or view, edit and delete one: a form for rules and conditions, or its raw JSON. */
import { useEffect, useState } from 'preact/hooks';
import { call, callWithWarnings, failureReport, policyPath } from '../api.js';
import { Alerts, ConfirmDelete, Notice, SelectField, TextArea, TextField } from '../components.js';
import { draftFieldKeys, draftFromPolicy, EFFECTS, emptyPolicy, emptyRule, policyFromDraft, type Policy, type PolicyDraft, type SentPolicy } from '../policy-draft.js';
import { go, links } from '../routes.js';
import { RuleFields } from './rule-fields.js';
import { useCanWritePolicies, usePolicyFiles } from '../access.js';
import { FilesNotice } from './files-notice.js';
import { PolicyChecks } from './policy-checks.js';
import { ImpactPreview } from './impact-preview.js';

type Mode = 'form' | 'json';

export function PolicyEditor({ name }: { name?: string }) {
  const creating = name === undefined;
  const canWrite = useCanWritePolicies();
  const files = usePolicyFiles();
  const [draft, setDraft] = useState<PolicyDraft | undefined>(creating ? emptyPolicy() : undefined);
  const [mode, setMode] = useState<Mode>('form');
  const [raw, setRaw] = useState('');
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [alerts, setAlerts] = useState<string[]>([]);
  const [saved, setSaved] = useState<string | undefined>(undefined);
  /** What the saved policy contradicts of the attribute schemas, taken under --schema-enforcement warn. */
  const [warnings, setWarnings] = useState<string[]>([]);

  useEffect(() => {
    if (name !== undefined) call<Policy>('GET', policyPath(name)).then((policy) => setDraft(draftFromPolicy(policy)), (error: Error) => setAlerts([error.message]));
  }, [name]);

  const report = (error: unknown, fields: string[]) => {
    const { byField, alerts } = failureReport(error, fields);
    setErrors(byField ?? {});
    setAlerts(byField !== undefined && alerts.length === 0 ? ['Verdict refused the policy: see the messages by the fields.'] : alerts);
  };

  /** The policy to send, from the form or from the JSON text, or undefined after showing why not. */
  const policyToSend = (current: PolicyDraft): SentPolicy | undefined => {
    if (mode === 'json') {
      try {
        return JSON.parse(raw) as SentPolicy;
      } catch (error) {
        setAlerts([`The JSON does not parse: ${(error as Error).message}`]);
        return undefined;
      }
    }
    const converted = policyFromDraft(current);
    if (converted.ok) return converted.policy;
    setErrors(converted.errors);
    setAlerts(['Some values are not valid JSON: see the messages by the fields.']);
    return undefined;
  };

  const save = async (event: Event) => {
    event.preventDefault();
    if (draft === undefined) return;
    setErrors({});
    setAlerts([]);
    setSaved(undefined);
    setWarnings([]);
    const policy = policyToSend(draft);
    if (policy === undefined) return;
    try {
      const { answer: stored, warnings } = creating
        ? await callWithWarnings<Policy>('POST', '/admin/policies', policy)
        : await callWithWarnings<Policy>('PUT', policyPath(name), policy);
      setDraft(draftFromPolicy(stored));
      setRaw(JSON.stringify(stored, null, 2));
      setSaved(`Saved policy ${stored.name}.`);
      setWarnings(warnings);
      if (creating) go(links.policy(stored.name));
    } catch (error) {
      report(error, mode === 'form' ? draftFieldKeys(draft) : []);
    }
  };

  const switchTo = (next: Mode) => {
    if (draft === undefined || next === mode) return;
    setAlerts([]);
    if (next === 'json') {
      const converted = policyFromDraft(draft);
      if (!converted.ok) {
        setErrors(converted.errors);
        setAlerts(['Fix the values that are not valid JSON before switching to JSON.']);
        return;
      }
      setRaw(JSON.stringify(converted.policy, null, 2));
    } else {
      try {
        setDraft(draftFromPolicy(JSON.parse(raw) as SentPolicy));
      } catch (error) {
        setAlerts([`The JSON does not parse: ${(error as Error).message}`]);
        return;
      }
    }
    setErrors({});
    setMode(next);
  };

  /** The policy as it stands while the operator types, when it can be read (checked without a word when it cannot). */
  const typed = (): SentPolicy | undefined => {
    if (draft === undefined) return undefined;
    if (mode === 'form') {
      const converted = policyFromDraft(draft);
      return converted.ok ? converted.policy : undefined;
    }
    try {
      return JSON.parse(raw) as SentPolicy;
    } catch {
      return undefined;
    }
  };

  const remove = async () => {
    try {
      await call('DELETE', policyPath(name!));
      go(links.policies);
    } catch (error) {
      setAlerts([(error as Error).message]);
    }
  };

  return (
    <section>
      <div class="heading-row">
        <h1 tabIndex={-1}>{creating ? 'New policy' : `Policy ${name}`}</h1>
        <a href={links.policies}>All policies</a>
        {!creating && <a href={links.policyHistory(name)}>History</a>}
        {!creating && canWrite && draft !== undefined && <ConfirmDelete what={`policy ${name}`} onConfirm={remove} />}
      </div>
      {saved !== undefined && <Notice>{saved}</Notice>}
      {warnings.length > 0 && (
        <div class="warning" role="status">
          <p>Saved, but it contradicts the attribute schemas (taken because they are only warned about):</p>
          <ul>
            {warnings.map((warning) => (
              <li key={warning}>{warning}</li>
            ))}
          </ul>
        </div>
      )}
      {files !== null && <FilesNotice dir={files} />}
      {draft === undefined ? (
        alerts.length === 0 ? <p role="status">Loading…</p> : <Alerts messages={alerts} />
      ) : (
        <form onSubmit={save} noValidate>
          <div class="tabs" role="group" aria-label="Editor">
            <button type="button" aria-pressed={mode === 'form'} onClick={() => switchTo('form')}>
              Form
            </button>
            <button type="button" aria-pressed={mode === 'json'} onClick={() => switchTo('json')}>
              JSON
            </button>
          </div>
          {mode === 'json' ? (
            <TextArea label="Policy JSON" rows={24} value={raw} onValue={setRaw} hint="The policy exactly as the admin API takes it." />
          ) : (
            <>
              <div class="row">
                <TextField
                  label="Policy name"
                  value={draft.name}
                  onValue={(value) => setDraft({ ...draft, name: value })}
                  error={errors.name}
                  readOnly={!creating}
                  hint={creating ? 'Stored slugified: "IT desk" becomes it-desk.' : 'A policy keeps its name.'}
                  placeholder="IT desk"
                />
                <SelectField
                  label="Default effect"
                  value={draft.default_effect}
                  onValue={(value) => setDraft({ ...draft, default_effect: value })}
                  options={EFFECTS}
                  error={errors.default_effect}
                />
              </div>
              <TextField label="Description" value={draft.description} onValue={(value) => setDraft({ ...draft, description: value })} error={errors.description} />
              <TextField
                label="Resource types"
                value={draft.resource_types}
                onValue={(value) => setDraft({ ...draft, resource_types: value })}
                error={errors.resource_types}
                hint="Optional, comma-separated: the policy then speaks only for resources whose uri starts with one of them and a colon (document:42)"
                placeholder="document"
              />
              <TextArea
                label="Condition sets (JSON)"
                value={draft.condition_sets}
                onValue={(value) => setDraft({ ...draft, condition_sets: value })}
                error={errors.condition_sets}
                hint='Optional: named lists of conditions that rules use as {"set": "<name>"}, e.g. {"manager": [{"path": "attributes.role", "operator": "==", "value": "manager"}]}'
                rows={draft.condition_sets === '' ? 2 : Math.min(12, draft.condition_sets.split('\n').length)}
              />
              {errors.rules !== undefined && <p class="field-error">{errors.rules}</p>}
              {draft.rules.map((rule, index) => (
                <RuleFields
                  key={index}
                  index={index}
                  rule={rule}
                  errors={errors}
                  onChange={(changed) => setDraft({ ...draft, rules: draft.rules.map((other, i) => (i === index ? changed : other)) })}
                  onRemove={() => setDraft({ ...draft, rules: draft.rules.filter((_, i) => i !== index) })}
                />
              ))}
              <button type="button" onClick={() => setDraft({ ...draft, rules: [...draft.rules, emptyRule()] })}>
                Add rule
              </button>
            </>
          )}
          <PolicyChecks policy={typed()} />
          <ImpactPreview policy={typed()} />
          {/* Beside the button that caused them, where the eye is: a refusal at the top of a long form went unseen. */}
          <Alerts messages={alerts} />
          {canWrite && (
            <div class="actions">
              <button type="submit" class="primary">
                {creating ? 'Create policy' : 'Save policy'}
              </button>
            </div>
          )}
        </form>
      )}
    </section>
  );
}
