/** The shadow policies: how they would have decided the checks beside the live ones, their latest disagreements, promote and discard. */
import { useEffect, useState } from 'preact/hooks';
import { call, policyPath } from '../api.js';
import { Alerts, Notice } from '../components.js';
import { useCanWritePolicies } from '../access.js';
import type { ChartData } from '../live-model.js';
import type { Compared } from '../replay.js';
import { OpenInPlayground } from './open-in-playground.js';
import { Chart } from './chart.js';

interface Outcomes {
  agree: number;
  allow_to_deny: number;
  deny_to_allow: number;
}

interface Disagreement {
  at: string;
  check: Record<string, unknown>;
  live: Compared;
  shadow: Compared;
}

interface ShadowReport {
  policies: { name: string; in_place_of: string | null; source: string }[];
  decided: Outcomes;
  history: (Outcomes & { at: string })[];
  disagreements: Disagreement[];
}

const word = (allowed: boolean) => (allowed ? 'allowed' : 'denied');
const decided = ({ allowed, reason }: Compared) => `${word(allowed)} (${reason})`;

/** Disagreements that the same decisions made, live and with the shadows: how many, and the newest as the example. */
interface DisagreementGroup {
  live: string;
  shadow: string;
  count: number;
  example: Disagreement;
}

/** The disagreements grouped by what decided them both ways (as an impact preview groups by rule), the largest group first. */
function groupedByDecision(disagreements: readonly Disagreement[]): DisagreementGroup[] {
  const groups = new Map<string, DisagreementGroup>();
  for (const disagreement of disagreements) {
    const [live, shadow] = [decided(disagreement.live), decided(disagreement.shadow)];
    const key = JSON.stringify([live, shadow]);
    const group = groups.get(key);
    if (group === undefined) groups.set(key, { live, shadow, count: 1, example: disagreement });
    else group.count++;
  }
  return [...groups.values()].sort((one, other) => other.count - one.count);
}
const MINUTE = 60_000;

/** The share of checks the shadows agreed on, each minute of the last hour; a gap where they decided none. */
function agreementOverTime(history: ShadowReport['history'], now: number): { data: ChartData; start: number; end: number } {
  const end = Math.floor(now / MINUTE) * MINUTE;
  const start = end - 59 * MINUTE;
  const byMinute = new Map(history.map((minute) => [Date.parse(minute.at), minute]));
  const times: number[] = [];
  const values: (number | null)[] = [];
  for (let time = start; time <= end; time += MINUTE) {
    const minute = byMinute.get(time);
    const total = minute === undefined ? 0 : minute.agree + minute.allow_to_deny + minute.deny_to_allow;
    times.push(time);
    values.push(total === 0 ? null : (minute!.agree / total) * 100);
  }
  // The axis runs to the end of the current minute, which each minute's step reaches.
  return { data: { times, series: [{ label: 'agreed', tone: 'allowed', values }] }, start, end: end + MINUTE };
}

export function Shadow() {
  const canWrite = useCanWritePolicies();
  const [report, setReport] = useState<ShadowReport | undefined>(undefined);
  const [alerts, setAlerts] = useState<string[]>([]);
  const [done, setDone] = useState<string | undefined>(undefined);
  const load = () => call<ShadowReport>('GET', '/admin/shadow').then(setReport, (error: Error) => setAlerts([error.message]));
  useEffect(() => void load(), []);
  const act = async (what: string, method: string, path: string) => {
    setAlerts([]);
    try {
      await call(method, path);
      setDone(what);
      await load();
    } catch (error) {
      setAlerts([(error as Error).message]);
    }
  };
  const { agree = 0, allow_to_deny: allowToDeny = 0, deny_to_allow: denyToAllow = 0 } = report?.decided ?? {};
  const total = agree + allowToDeny + denyToAllow;
  return (
    <section>
      <div class="heading-row">
        <h1 tabIndex={-1}>Shadow policies</h1>
        <button type="button" onClick={() => void load()}>
          Refresh
        </button>
      </div>
      {done !== undefined && <Notice>{done}</Notice>}
      <Alerts messages={alerts} />
      {report === undefined ? (
        alerts.length === 0 && <p role="status">Loading…</p>
      ) : (
        <>
          {report.policies.length === 0 ? (
            <p>No shadow policy. Write a policy with "shadow": true (beside the live ones) or "shadow": "&lt;policy&gt;" (in its place).</p>
          ) : (
            <ul aria-label="Shadow policies">
              {report.policies.map((policy) => (
                <li key={policy.name}>
                  <a href={`#/policy/${encodeURIComponent(policy.name)}`}>{policy.name}</a>
                  {policy.in_place_of === null ? ' beside the live policies' : ` in place of ${policy.in_place_of}`}
                  {policy.source !== 'admin API' && ` (${policy.source})`}
                  {canWrite && (
                    <>
                      {' '}
                      <button type="button" onClick={() => act(`Promoted ${policy.name}.`, 'POST', `${policyPath(policy.name)}/promote`)}>
                        Promote {policy.name}
                      </button>{' '}
                      <button type="button" class="quiet" onClick={() => act(`Discarded ${policy.name}.`, 'DELETE', policyPath(policy.name))}>
                        Discard {policy.name}
                      </button>
                    </>
                  )}
                </li>
              ))}
            </ul>
          )}
          <p role="status" aria-label="Agreement">
            {total === 0
              ? 'No check decided both ways yet on this process.'
              : `Agreed on ${agree} of ${total} checks (${((agree / total) * 100).toFixed(1)}%): ${allowToDeny} allowed that the shadows would deny, ${denyToAllow} denied that they would allow.`}
          </p>
          <div class="charts">
            <Chart title="Agreement with the live policies, each minute" unit="%" top={100} step={MINUTE} {...agreementOverTime(report.history, Date.now())} empty="No check decided both ways in the last hour." />
          </div>
          {report.disagreements.length > 0 && (
            <>
              <h2>The latest {report.disagreements.length} disagreements, by what decided them</h2>
              <ul aria-label="Disagreements by what decided">
                {groupedByDecision(report.disagreements).map(({ live, shadow, count, example }) => (
                  <li key={`${live} ${shadow}`}>
                    <strong>
                      {count} {count === 1 ? 'check' : 'checks'}
                    </strong>
                    : {live} → the shadows: {shadow}. The newest, at {example.at}: <code>{JSON.stringify(example.check)}</code>{' '}
                    <OpenInPlayground check={example.check} before={{ title: 'The live policies', ...example.live }} after={{ title: 'With the shadows', ...example.shadow }} />
                  </li>
                ))}
              </ul>
            </>
          )}
        </>
      )}
    </section>
  );
}
