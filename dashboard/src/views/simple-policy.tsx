/** The quick form: a one-rule allow policy from a principal, a resource and an action. */
import { useState } from 'preact/hooks';
import { call } from '../api.js';
import { Alerts, TextField } from '../components.js';
import type { Policy } from '../policy-draft.js';
import { go, links } from '../routes.js';
import { EntitySide, checkRequestBody, emptySide } from './entity-side.js';
import { useCanWritePolicies } from '../access.js';
import { useCheckForm } from '../check-form.js';

const FIELDS = ['name', 'action', 'principal', 'principal.uri', 'principal.attributes', 'resource', 'resource.uri', 'resource.attributes'];

export function SimplePolicy() {
  const canWrite = useCanWritePolicies();
  const [name, setName] = useState('');
  const [principal, setPrincipal] = useState(emptySide());
  const [resource, setResource] = useState(emptySide());
  const [action, setAction] = useState('');
  const { errors, alerts, submit } = useCheckForm(FIELDS, async (body) => {
    const policy = await call<Policy>('POST', `/admin/policies/simple?name=${encodeURIComponent(name)}`, body);
    go(links.policy(policy.name));
  });

  return (
    <section class="narrow">
      <div class="heading-row">
        <h1 tabIndex={-1}>Simple policy</h1>
        <a href={links.policies}>All policies</a>
      </div>
      <p>
        One rule that allows an action when the principal and the resource have these attributes (each one becomes an
        <code>==</code> condition). Everything else is denied by default.
      </p>
      <Alerts messages={alerts} />
      <form onSubmit={(event) => submit(event, checkRequestBody(principal, resource, action))} noValidate>
        <TextField label="Policy name" value={name} onValue={setName} error={errors.name} placeholder="hr-records" />
        <EntitySide
          legend="Principal"
          side={principal}
          onChange={setPrincipal}
          errors={errors}
          example='{"department": "hr"}'
        />
        <EntitySide
          legend="Resource"
          side={resource}
          onChange={setResource}
          errors={errors}
          example='{"kind": "hr-record"}'
        />
        <TextField label="Action" value={action} onValue={setAction} error={errors.action} hint="Defaults to access." placeholder="read" />
        {canWrite && (
          <div class="actions">
            <button type="submit" class="primary">
              Create simple policy
            </button>
          </div>
        )}
      </form>
    </section>
  );
}
