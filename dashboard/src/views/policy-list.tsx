/** Every policy in creation order (the order that names a decision's policy), searchable. */
import { useEffect, useState } from 'preact/hooks';
import { call } from '../api.js';
import { Alerts, TextField } from '../components.js';
import { policyMatches, type Policy } from '../policy-draft.js';
import { links } from '../routes.js';
import { useCanWritePolicies, usePolicyFiles } from '../access.js';
import { FilesNotice } from './files-notice.js';

export function PolicyList() {
  const [policies, setPolicies] = useState<Policy[] | undefined>(undefined);
  const [problem, setProblem] = useState<string[]>([]);
  const [search, setSearch] = useState('');
  const canWrite = useCanWritePolicies();
  const files = usePolicyFiles();

  useEffect(() => {
    call<Policy[]>('GET', '/admin/policies').then(setPolicies, (error: Error) => setProblem([error.message]));
  }, []);

  const shown = (policies ?? []).filter((policy) => policyMatches(policy, search));
  return (
    <section>
      <div class="heading-row">
        <h1 tabIndex={-1}>Policies</h1>
        {canWrite && (
          <>
            <a class="button primary" href={links.newPolicy}>
              New policy
            </a>
            <a class="button" href={links.simplePolicy}>
              Simple policy
            </a>
          </>
        )}
      </div>
      {files !== null && <FilesNotice dir={files} />}
      <Alerts messages={problem} />
      <div class="search">
        <TextField label="Search policies" value={search} onValue={setSearch} hint="Matches names, descriptions, rule names and actions." />
      </div>
      {policies === undefined ? (
        <p role="status">Loading…</p>
      ) : shown.length === 0 ? (
        <p>{policies.length === 0 ? 'No policies yet: every check is denied.' : 'No policy matches.'}</p>
      ) : (
        <table>
          <caption class="visually-hidden">Policies in creation order</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Description</th>
              <th scope="col">Rules</th>
              <th scope="col">Default effect</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((policy) => (
              <tr key={policy.name}>
                <td>
                  <a href={links.policy(policy.name)}>{policy.name}</a>
                </td>
                <td>{policy.description ?? ''}</td>
                <td>{policy.rules.map((rule) => `${rule.name} (${rule.effect}: ${rule.actions.map((action) => (action === '*' ? 'every action' : action)).join(', ')})`).join('; ')}</td>
                <td>{policy.default_effect}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p class="hint">
        {policies === undefined ? '' : `${shown.length} of ${policies.length} shown.`}
      </p>
    </section>
  );
}
