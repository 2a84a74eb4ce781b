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

interface ShadowReport {
  policies: { name: string; in_place_of: string | null }[];
  decided: Outcomes;
  history: (Outcomes & { at: string })[];
  disagreements: { at: string; check: Record<string, unknown>; live: Compared; shadow: Compared }[];
}

const word = (allowed: boolean) => (allowed ? 'allowed' : 'denied');
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
  return { data: { times, series: [{ label: 'agreed', tone: 'allowed', values }] }, start, end };
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
          <Chart title="Agreement with the live policies, each minute" unit="%" top={100} {...agreementOverTime(report.history, Date.now())} empty="No check decided both ways in the last hour." />
          {report.disagreements.length > 0 && (
            <ul aria-label="Latest disagreements">
              {report.disagreements.map((disagreement, index) => (
                <li key={index}>
                  {disagreement.at}: <code>{JSON.stringify(disagreement.check)}</code> {word(disagreement.live.allowed)} ({disagreement.live.reason}); the shadows: {word(disagreement.shadow.allowed)} ({disagreement.shadow.reason}){' '}
                  <OpenInPlayground check={disagreement.check} before={{ title: 'The live policies', ...disagreement.live }} after={{ title: 'With the shadows', ...disagreement.shadow }} />
                </li>
              ))}
            </ul>
          )}
        </>
      )}
    </section>
  );
}
