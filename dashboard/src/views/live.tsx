/** This process's traffic over the last 15 minutes: charts by the second, the rules that decided most, the recent denials. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { call } from '../api.js';
import { go, links } from '../routes.js';
import { clock, figure, liveCharts, mergeSeconds, summarize, type LiveAnswer, type LiveSecond, type RecentDenial, type SentSide } from '../live-model.js';
import { holdReplay, replayOf } from '../replay.js';
import { Chart } from './chart.js';

const REFRESH_MILLISECONDS = 2000;
const DENIALS_SHOWN = 10;

interface LiveState {
  answer?: LiveAnswer;
  seconds: LiveSecond[];
  revision?: number;
  problem?: string;
}

async function fetchRevision(): Promise<number | undefined> {
  const response = await fetch('/health');
  return response.ok ? ((await response.json()) as { revision: number }).revision : undefined;
}

const share = (part: number, whole: number) => (whole === 0 ? '' : ` (${Math.round((part / whole) * 100)}%)`);

function Tile({ label, value }: { label: string; value: string }) {
  return (
    <div class="tile">
      <dt>{label}</dt>
      <dd>{value}</dd>
    </div>
  );
}

export function Live() {
  const [state, setState] = useState<LiveState>({ seconds: [] });
  /** The seconds held so far, all of one process: the one that started at `startedAt`. */
  const held = useRef<{ startedAt?: number; seconds: LiveSecond[] }>({ seconds: [] });

  useEffect(() => {
    let stopped = false;
    const refresh = async () => {
      const last = held.current.seconds.at(-1)?.at;
      const read = (since?: number) => call<LiveAnswer>('GET', `/admin/live${since === undefined ? '' : `?since=${since}`}`);
      try {
        const [newer, revision] = await Promise.all([read(last), fetchRevision().catch(() => undefined)]);
        let answer = newer;
        // Another process answered (a restart, or another of --processes N): its figures replace the ones held.
        if (answer.started_at !== held.current.startedAt) {
          if (last !== undefined) answer = await read();
          held.current = { startedAt: answer.started_at, seconds: [] };
        }
        held.current.seconds = mergeSeconds(held.current.seconds, answer.seconds, answer.now, answer.window_seconds);
        if (!stopped) setState({ answer, seconds: held.current.seconds, revision });
      } catch (error) {
        if (!stopped) setState((previous) => ({ ...previous, problem: (error as Error).message }));
      }
    };
    void refresh();
    const timer = setInterval(refresh, REFRESH_MILLISECONDS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, []);

  const { answer, seconds } = state;
  return (
    <section class="live">
      <h1 tabIndex={-1}>Live</h1>
      {state.problem !== undefined && (
        <p class="alert" role="alert">
          The live figures could not be read: {state.problem}
        </p>
      )}
      {answer === undefined ? (
        state.problem === undefined && <p role="status">Reading the live figures…</p>
      ) : (
        <Figures answer={answer} seconds={seconds} revision={state.revision} />
      )}
    </section>
  );
}

function Figures({ answer, seconds, revision }: { answer: LiveAnswer; seconds: LiveSecond[]; revision: number | undefined }) {
  const start = Math.max(answer.started_at, answer.now - answer.window_seconds * 1000);
  const end = answer.now;
  const summary = summarize(seconds);
  const decisions = summary.allowed + summary.denied;
  const sinceStart = start === answer.started_at;
  const windowName = sinceStart ? `since it started at ${clock(start, true)}` : `over the last ${Math.round(answer.window_seconds / 60)} minutes`;
  const noChecks = 'No check answered in this window: no percentile to show.';
  const noPool = seconds.some((second) => second.pool !== null) ? 'No figures yet.' : 'No worker pool: every check is decided on the front (--evaluation inline).';
  return (
    <>
      <p class="hint">
        This process {windowName}, by the second (to {clock(end, true)}), refreshed every {REFRESH_MILLISECONDS / 1000} seconds. Point at a chart, or
        focus it and use the arrow keys, to read each second.
      </p>
      {decisions === 0 && (
        <p class="notice" role="status">
          {sinceStart ? `No decisions since this process started at ${clock(start, true)}` : `No decisions in the last ${Math.round(answer.window_seconds / 60)} minutes`}:
          nothing was measured. The charts fill in as checks arrive.
        </p>
      )}
      <dl class="tiles">
        <Tile label="Snapshot revision" value={revision === undefined ? '–' : String(revision)} />
        <Tile label="Decisions/s (last 10 s)" value={summary.recentRate === undefined ? '–' : figure(summary.recentRate)} />
        <Tile label="Allowed" value={`${summary.allowed.toLocaleString('en')}${share(summary.allowed, decisions)}`} />
        <Tile label="Denied" value={`${summary.denied.toLocaleString('en')}${share(summary.denied, decisions)}`} />
        <Tile label="Errors (4xx / 5xx)" value={`${summary.errors4xx.toLocaleString('en')} / ${summary.errors5xx.toLocaleString('en')}`} />
      </dl>
      <div class="charts">
        <Chart title="Decisions" unit="/s" data={liveCharts.decisions(seconds)} start={start} end={end} empty="No seconds recorded yet." />
        <Chart title="Check latency (POST /check)" unit="ms" data={liveCharts.latency(seconds, 'check')} start={start} end={end} empty={noChecks} />
        <Chart title="Bulk latency (POST /check/bulk)" unit="ms" data={liveCharts.latency(seconds, 'bulk')} start={start} end={end} empty="No bulk answered in this window: no percentile to show." />
        <Chart title="Requests" unit="/s" data={liveCharts.requests(seconds)} start={start} end={end} empty="No seconds recorded yet." />
        <Chart title="Errors" unit="/s" data={liveCharts.errors(seconds)} start={start} end={end} empty="No seconds recorded yet." />
        <Chart title="Change-feed lag (longest each second)" unit="ms" data={liveCharts.feedLag(seconds)} start={start} end={end} empty="No store change applied in this window." />
        <Chart title="Worker pool utilisation" unit="%" top={100} data={liveCharts.poolUtilization(seconds)} start={start} end={end} empty={noPool} />
        <Chart title="Worker pool queue" unit="bulks" data={liveCharts.poolQueue(seconds)} start={start} end={end} empty={noPool} />
      </div>
      <TopRules rules={answer.rules} />
      <RecentDenials recent={answer.recent_denials} />
    </>
  );
}

function Bar({ part, whole, tone }: { part: number; whole: number; tone: string }) {
  return (
    <span class={`bar tone-${tone}`} aria-hidden="true">
      <span style={{ width: `${whole === 0 ? 0 : Math.max(1, (part / whole) * 100)}%` }} />
    </span>
  );
}

function TopRules({ rules }: { rules: LiveAnswer['rules'] }) {
  const { allowed, denied } = rules.default_effect;
  const byRules = rules.rules.reduce((total, rule) => total + rule.decisions, 0);
  const most = Math.max(1, ...rules.rules.map((rule) => rule.decisions), ...rules.policies.map((policy) => policy.allowed + policy.denied));
  return (
    <section aria-labelledby="top-rules">
      <h2 id="top-rules">Top rules since {clock(rules.since)}</h2>
      {byRules + allowed + denied === 0 ? (
        <p>No decisions since {clock(rules.since, true)}.</p>
      ) : (
        <>
          <p>
            The default effect decided {(allowed + denied).toLocaleString('en')} ({allowed.toLocaleString('en')} allowed, {denied.toLocaleString('en')} denied): no rule
            matched, or there were no policies.
          </p>
          <div class="two-columns">
            <table>
              <caption>Rules that decided most</caption>
              <thead>
                <tr>
                  <th scope="col">Policy</th>
                  <th scope="col">Rule</th>
                  <th scope="col">Effect</th>
                  <th scope="col">Decisions</th>
                </tr>
              </thead>
              <tbody>
                {rules.rules.map((rule) => (
                  <tr key={`${rule.policy}/${rule.rule}/${rule.effect}`}>
                    <td>
                      <a href={links.policy(rule.policy)}>{rule.policy}</a>
                    </td>
                    <td>{rule.rule}</td>
                    <td>
                      <span class={rule.effect === 'allow' ? 'badge allowed' : 'badge denied'}>{rule.effect}</span>
                    </td>
                    <td class="count">
                      {rule.decisions.toLocaleString('en')}
                      <Bar part={rule.decisions} whole={most} tone={rule.effect === 'allow' ? 'allowed' : 'denied'} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <table>
              <caption>Policies that decided most</caption>
              <thead>
                <tr>
                  <th scope="col">Policy</th>
                  <th scope="col">Allowed</th>
                  <th scope="col">Denied</th>
                </tr>
              </thead>
              <tbody>
                {rules.policies.map((policy) => (
                  <tr key={policy.policy}>
                    <td>
                      <a href={links.policy(policy.policy)}>{policy.policy}</a>
                    </td>
                    <td class="count">{policy.allowed.toLocaleString('en')}</td>
                    <td class="count">{policy.denied.toLocaleString('en')}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}

/** `first` (a uri, an action's name, a label), then the attributes with their values, or their keys with the values hidden. */
function describe(first: string | null, attributes: Record<string, unknown> | undefined, keys: string[] | undefined): string {
  const parts = first === null ? [] : [first];
  if (attributes !== undefined && Object.keys(attributes).length > 0) parts.push(JSON.stringify(attributes));
  if (keys !== undefined && keys.length > 0) parts.push(`{${keys.map((key) => `${key}: •••`).join(', ')}}`);
  return parts.join(' ');
}

const describeSide = ({ uri, attributes, attribute_keys }: SentSide) => describe(uri, attributes, attribute_keys);

/** The action with its attributes, and the context when the check sent one. */
function describeAction(denial: RecentDenial): string {
  const action = describe(denial.action, denial.action_attributes, denial.action_attribute_keys);
  const context = describe('context', denial.context, denial.context_keys);
  return context === 'context' ? action : `${action}; ${context}`;
}

function RecentDenials({ recent }: { recent: LiveAnswer['recent_denials'] }) {
  const [all, setAll] = useState(false);
  const shown = all ? recent.denials : recent.denials.slice(0, DENIALS_SHOWN);
  const open = (denial: RecentDenial) => {
    holdReplay(replayOf(denial));
    go(links.playground);
  };
  return (
    <section aria-labelledby="recent-denials">
      <h2 id="recent-denials">Recent denials</h2>
      {recent.capacity === 0 ? (
        <p>Recent denials are not kept (the server runs with --recent-denials 0).</p>
      ) : recent.denials.length === 0 ? (
        <p>No denial since this process started.</p>
      ) : (
        <>
          <p class="hint">
            The last {recent.capacity} denied checks are kept, newest first
            {recent.per_second > 0 ? `, at most ${recent.per_second} of each second (--recent-denials-rate)` : ''}.
            {recent.values ? ' Attribute values are shown (--recent-denials-values).' : ' Attribute values are hidden (•••); start Verdict with --recent-denials-values to see them.'}
          </p>
          <table class="denials">
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Principal</th>
                <th scope="col">Resource</th>
                <th scope="col">Action</th>
                <th scope="col">Reason</th>
                <th scope="col">
                  <span class="visually-hidden">Replay</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {shown.map((denial, index) => (
                <tr key={`${denial.at}-${index}`}>
                  <td class="nowrap">{clock(denial.at, true)}</td>
                  <td class="mono">{describeSide(denial.principal)}</td>
                  <td class="mono">{describeSide(denial.resource)}</td>
                  <td>{describeAction(denial)}</td>
                  <td>{denial.reason}</td>
                  <td>
                    <button type="button" onClick={() => open(denial)}>
                      Open in playground
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {recent.denials.length > DENIALS_SHOWN && (
            <button type="button" onClick={() => setAll(!all)}>
              {all ? `Show the last ${DENIALS_SHOWN}` : `Show all ${recent.denials.length}`}
            </button>
          )}
        </>
      )}
    </section>
  );
}
