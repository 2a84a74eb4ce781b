/** The audit trail: who changed what and when, newest first, filtered by target, actor and time. */
import { useEffect, useState } from 'preact/hooks';
import { call } from '../api.js';
import { Alerts, DateTimeField, TextField } from '../components.js';
import { auditQuery, policyNameOf, type AuditFilters, type AuditPage, type AuditRecord } from '../audit-model.js';
import { links } from '../routes.js';
import { Time } from '../time.js';

const NO_FILTERS: AuditFilters = { target: '', actor: '', since: '', until: '' };

function Target({ target }: { target: string }) {
  const policy = policyNameOf(target);
  return policy === undefined ? <>{target}</> : <a href={links.policyHistory(policy)}>{target}</a>;
}

function RecordRow({ record }: { record: AuditRecord }) {
  return (
    <tr>
      <td class="nowrap">
        <Time iso={record.time} />
      </td>
      <td>{record.actor}</td>
      <td>
        {record.operation}
        {record.version !== undefined && ` (version ${record.version}${record.restored_from === undefined ? '' : `, from ${record.restored_from}`})`}
      </td>
      <td>
        <Target target={record.target} />
        {record.changed_keys !== undefined && record.changed_keys.length > 0 && <div class="hint">keys: {record.changed_keys.join(', ')}</div>}
      </td>
      <td>{record.client}</td>
      <td>
        <details>
          <summary>Request</summary>
          <dl class="facts">
            <dt>Route</dt>
            <dd>{record.route}</dd>
            <dt>Request id</dt>
            <dd class="mono">{record.request_id}</dd>
          </dl>
        </details>
      </td>
    </tr>
  );
}

export function Audit() {
  const [draft, setDraft] = useState<AuditFilters>(NO_FILTERS);
  const [filters, setFilters] = useState<AuditFilters>(NO_FILTERS);
  const [records, setRecords] = useState<AuditRecord[] | undefined>(undefined);
  const [next, setNext] = useState<string | null>(null);
  const [alerts, setAlerts] = useState<string[]>([]);

  const load = async (cursor?: string) => {
    setAlerts([]);
    try {
      const page = await call<AuditPage>('GET', `/admin/audit?${auditQuery(filters, cursor)}`);
      setRecords((shown) => (cursor === undefined ? page.records : [...(shown ?? []), ...page.records]));
      setNext(page.next_cursor);
    } catch (error) {
      setAlerts([(error as Error).message]);
    }
  };

  useEffect(() => {
    void load();
  }, [filters]);

  const apply = (event: Event) => {
    event.preventDefault();
    setRecords(undefined);
    setFilters(draft);
  };

  return (
    <section>
      <div class="heading-row">
        <h1 tabIndex={-1}>Audit</h1>
      </div>
      <p>Every admin write, newest first: who made it (the admin key's name), from where, and what it changed.</p>
      <form class="filters" onSubmit={apply} role="search" aria-label="Filter the audit trail">
        <TextField label="Target" value={draft.target} onValue={(target) => setDraft({ ...draft, target })} hint="policy:<name> or entity:<uri>; end with * for a prefix" placeholder="policy:*" />
        <TextField label="Actor" value={draft.actor} onValue={(actor) => setDraft({ ...draft, actor })} hint="An admin key's name, or anonymous" />
        <DateTimeField label="Since" value={draft.since} onValue={(since) => setDraft({ ...draft, since })} />
        <DateTimeField label="Until" value={draft.until} onValue={(until) => setDraft({ ...draft, until })} />
        <button type="submit">Apply filters</button>
      </form>
      <Alerts messages={alerts} />
      {records === undefined ? (
        alerts.length === 0 && <p role="status">Loading…</p>
      ) : records.length === 0 ? (
        <p>No record matches.</p>
      ) : (
        <table>
          <caption class="visually-hidden">Audit records, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Actor</th>
              <th scope="col">Operation</th>
              <th scope="col">Target</th>
              <th scope="col">Client</th>
              <th scope="col">Details</th>
            </tr>
          </thead>
          <tbody>
            {records.map((record) => (
              <RecordRow key={record.id} record={record} />
            ))}
          </tbody>
        </table>
      )}
      {next !== null && (
        <nav class="pager" aria-label="Pages">
          <button type="button" onClick={() => void load(next)}>
            Load older records
          </button>
        </nav>
      )}
    </section>
  );
}
