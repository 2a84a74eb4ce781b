/** A policy's versions: who made each and when, any two side by side, and the restore of one (confirmed first). */
import { useEffect, useState } from 'preact/hooks';
import { call, policyPath } from '../api.js';
import { Alerts, ConfirmButton, Notice } from '../components.js';
import { useCanWritePolicies } from '../access.js';
import { sideBySide, versionText, type AuditPage, type AuditRecord, type DiffCell } from '../audit-model.js';
import { links } from '../routes.js';
import { Time } from '../time.js';

/** Every version the server keeps, newest first. */
async function allVersions(name: string): Promise<AuditRecord[]> {
  const versions: AuditRecord[] = [];
  let cursor: string | null = null;
  do {
    const page: AuditPage = await call<AuditPage>('GET', `${policyPath(name)}/history?limit=1000${cursor === null ? '' : `&cursor=${cursor}`}`);
    versions.push(...page.records);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return versions;
}

const SPOKEN_CHANGE = { same: '', removed: 'removed: ', added: 'added: ' };

function Cell({ cell }: { cell: DiffCell }) {
  return (
    <td class={`diff-${cell?.change ?? 'blank'}`}>
      {cell !== undefined && cell.change !== 'same' && <span class="visually-hidden">{SPOKEN_CHANGE[cell.change]}</span>}
      {cell?.text ?? ''}
    </td>
  );
}

function Diff({ left, right }: { left: AuditRecord; right: AuditRecord }) {
  const rows = sideBySide(versionText(left.after), versionText(right.after));
  const changed = rows.some((row) => row.left?.change !== 'same');
  return (
    <>
      {!changed && <p>The two versions are the same.</p>}
      <table class="diff">
        <caption class="visually-hidden">
          Version {left.version} against version {right.version}; removed lines on the left, added lines on the right
        </caption>
        <thead>
          <tr>
            <th scope="col">Version {left.version}</th>
            <th scope="col">Version {right.version}</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row, index) => (
            <tr key={index}>
              <Cell cell={row.left} />
              <Cell cell={row.right} />
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

/** A restore button that asks once more, in place, before it acts. */
function ConfirmRestore({ version, name, onConfirm }: { version: number; name: string; onConfirm: () => void }) {
  return (
    <ConfirmButton
      trigger={`Restore version ${version}`}
      question={`Make version ${version} the current ${name}? Checks will be decided by it at once.`}
      group="Confirm restore"
      confirm="Yes, restore"
      confirmClass="primary"
      onConfirm={onConfirm}
    />
  );
}

export function PolicyHistory({ name }: { name: string }) {
  const canWrite = useCanWritePolicies();
  const [versions, setVersions] = useState<AuditRecord[] | undefined>(undefined);
  const [compared, setCompared] = useState<{ left?: number; right?: number }>({});
  const [alerts, setAlerts] = useState<string[]>([]);
  const [notice, setNotice] = useState<string | undefined>(undefined);

  const load = async () => {
    try {
      const loaded = await allVersions(name);
      setVersions(loaded);
      // By default, the newest version against the one before it.
      setCompared({ left: loaded[1]?.version, right: loaded[0]?.version });
    } catch (error) {
      setAlerts([(error as Error).message]);
    }
  };
  useEffect(() => {
    void load();
  }, [name]);

  const restore = async (version: number) => {
    setAlerts([]);
    setNotice(undefined);
    try {
      await call('POST', `${policyPath(name)}/restore?version=${version}`);
      await load();
      setNotice(`Version ${version} is the current policy again (restored as a new version).`);
    } catch (error) {
      setAlerts([(error as Error).message]);
    }
  };

  const byVersion = (version: number | undefined) => versions?.find((record) => record.version === version);
  const left = byVersion(compared.left);
  const right = byVersion(compared.right);
  const current = versions?.[0];

  return (
    <section>
      <div class="heading-row">
        <h1 tabIndex={-1}>History of {name}</h1>
        <a href={links.policy(name)}>The policy</a>
        <a href={links.audit}>Audit</a>
      </div>
      {notice !== undefined && <Notice>{notice}</Notice>}
      <Alerts messages={alerts} />
      {versions === undefined ? (
        alerts.length === 0 && <p role="status">Loading…</p>
      ) : (
        <>
          <table>
            <caption class="visually-hidden">Versions of {name}, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Time</th>
                <th scope="col">Actor</th>
                <th scope="col">Operation</th>
                <th scope="col">Compare</th>
                {canWrite && <th scope="col">Restore</th>}
              </tr>
            </thead>
            <tbody>
              {versions.map((record) => (
                <tr key={record.id}>
                  <td>{record.version}</td>
                  <td class="nowrap">
                    <Time iso={record.time} />
                  </td>
                  <td>{record.actor}</td>
                  <td>
                    {record.operation}
                    {record.restored_from !== undefined && ` of version ${record.restored_from}`}
                  </td>
                  <td class="nowrap">
                    <label class="inline">
                      <input type="radio" name="left" checked={compared.left === record.version} onChange={() => setCompared({ ...compared, left: record.version })} />
                      Left<span class="visually-hidden">: version {record.version}</span>
                    </label>
                    <label class="inline">
                      <input type="radio" name="right" checked={compared.right === record.version} onChange={() => setCompared({ ...compared, right: record.version })} />
                      Right<span class="visually-hidden">: version {record.version}</span>
                    </label>
                  </td>
                  {canWrite && (
                    <td>
                      {record.after === null ? (
                        <span class="hint">a deletion</span>
                      ) : record === current ? (
                        <span class="hint">current</span>
                      ) : (
                        <ConfirmRestore version={record.version!} name={name} onConfirm={() => void restore(record.version!)} />
                      )}
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
          <h2>Compare</h2>
          {left !== undefined && right !== undefined ? <Diff left={left} right={right} /> : <p>Choose two versions (Left and Right) to compare.</p>}
        </>
      )}
    </section>
  );
}
