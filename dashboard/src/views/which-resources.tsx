/** The playground's "which resources" mode: the plan for a principal and an action, as a readable expression. */
import { useState } from 'preact/hooks';
import { call } from '../api.js';
import { Alerts, TextArea, TextField } from '../components.js';
import { formatCondition, type ConditionTree } from '../../../src/engine/condition-tree.js';
import { EntitySide, checkRequestBody, emptySide } from './entity-side.js';
import { useCheckForm } from '../check-form.js';

interface Plan {
  kind: 'always_allowed' | 'always_denied' | 'conditional';
  condition: ConditionTree;
  mongodb?: Record<string, unknown>;
  reason: string;
}

const FIELDS = ['principal', 'principal.uri', 'principal.attributes', 'principal.token', 'resource', 'resource.attributes', 'action'];

const HEADLINE: Record<Plan['kind'], string> = {
  always_allowed: 'Every resource',
  always_denied: 'No resource',
  conditional: 'The resources where',
};

export function WhichResources() {
  const [principal, setPrincipal] = useState(emptySide());
  const [known, setKnown] = useState('');
  const [action, setAction] = useState('');
  const { errors, alerts, answer: plan, submit } = useCheckForm(FIELDS, (body) => call<Plan>('POST', '/plan', body));

  // A plan's resource is open: only what is known of it, never a uri.
  return (
    <form onSubmit={(event) => submit(event, checkRequestBody(principal, { uri: '', attributes: known }, action))} noValidate aria-labelledby="which-resources">
      <h2 id="which-resources">Which resources</h2>
      <p>The resources a principal may act on, as an expression over their attributes and as a MongoDB filter.</p>
      <div class="two-columns">
        <EntitySide legend="Principal" side={principal} onChange={setPrincipal} errors={errors} example='{"department": "it"}' withToken />
        <fieldset>
          <legend>Resources</legend>
          <TextArea
            label="Known resource attributes (JSON object)"
            rows={3}
            value={known}
            onValue={setKnown}
            error={errors['resource.attributes']}
            hint="Optional: what every resource in question has, e.g. its type."
            placeholder='{"type": "asset"}'
          />
        </fieldset>
      </div>
      <div class="row">
        <TextField label="Action" value={action} onValue={setAction} error={errors.action} hint="Defaults to access." placeholder="administer" />
      </div>
      <div class="actions">
        <button type="submit" class="primary">
          Show which resources
        </button>
      </div>
      <Alerts messages={alerts} />
      <div aria-live="polite">
        {plan !== undefined && (
          <div class="plan">
            <p>
              <strong class={plan.kind === 'always_denied' ? 'badge denied' : 'badge allowed'}>{HEADLINE[plan.kind]}</strong>
              {plan.kind === 'conditional' && <code class="expression">{formatCondition(plan.condition)}</code>}
            </p>
            <p class="reason">{plan.reason}</p>
            {plan.mongodb !== undefined && (
              <>
                <h3>MongoDB filter</h3>
                <pre class="mono">{JSON.stringify(plan.mongodb, null, 2)}</pre>
              </>
            )}
          </div>
        )}
      </div>
    </form>
  );
}
