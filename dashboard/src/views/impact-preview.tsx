/** "Preview impact": what saving the policy being edited would do to the checks the server decided lately. */
import { useState } from 'preact/hooks';
import { call } from '../api.js';
import { Alerts } from '../components.js';
import type { SentPolicy } from '../policy-draft.js';
import type { Compared } from '../replay.js';
import { OpenInPlayground } from './open-in-playground.js';

interface Flips {
  allow_to_deny: number;
  deny_to_allow: number;
}

interface ImpactAnswer {
  replayed: number;
  from: string | null;
  to: string | null;
  changed: Flips;
  by_action: (Flips & { key: string })[];
  by_rule: (Flips & { before: string; after: string })[];
  sample: { check: Record<string, unknown>; before: Compared; after: Compared }[];
  decision_log?: { lines: number; skipped: { masked: number; refused: number; unreadable: number }; cut?: string };
}

/** Where the replayed checks came from, in words. */
function replayedFrom(impact: ImpactAnswer): string {
  const log = impact.decision_log;
  if (log === undefined) return 'recent checks';
  const { masked, refused, unreadable } = log.skipped;
  const skipped = masked + refused + unreadable;
  return `checks of the decision log's newest ${log.lines} lines${skipped === 0 ? '' : ` (${skipped} lines not replayable)`}${log.cut === undefined ? '' : `; ${log.cut}`}`;
}

const word = (allowed: boolean) => (allowed ? 'allowed' : 'denied');

export function ImpactPreview({ policy }: { policy: SentPolicy | undefined }) {
  const [impact, setImpact] = useState<ImpactAnswer | undefined>(undefined);
  const [alerts, setAlerts] = useState<string[]>([]);
  const [fromLog, setFromLog] = useState(false);
  const preview = async () => {
    setAlerts([]);
    if (policy === undefined) return setAlerts(['Fix the policy before previewing it.']);
    try {
      setImpact(await call<ImpactAnswer>('POST', '/admin/policies/impact', { policies: [policy], ...(fromLog && { source: 'decision_log' }) }));
    } catch (error) {
      setAlerts([(error as Error).message]);
    }
  };
  return (
    <div class="impact">
      <button type="button" onClick={preview}>
        Preview impact
      </button>{' '}
      <label class="inline">
        <input type="checkbox" checked={fromLog} onChange={(event) => setFromLog(event.currentTarget.checked)} /> Replay the decision log file
      </label>
      <Alerts messages={alerts} />
      {impact !== undefined && (
        <section aria-label="Impact">
          <p>
            Of {impact.replayed} {replayedFrom(impact)}{impact.from === null ? '' : ` (${impact.from} to ${impact.to})`}, saving would turn{' '}
            <strong>{impact.changed.allow_to_deny} from allow to deny</strong> and <strong>{impact.changed.deny_to_allow} from deny to allow</strong>.
          </p>
          {impact.by_rule.length > 0 && (
            <table>
              <thead>
                <tr>
                  <th>Decided now by</th>
                  <th>Would be decided by</th>
                  <th>Allow → deny</th>
                  <th>Deny → allow</th>
                </tr>
              </thead>
              <tbody>
                {impact.by_rule.map((group) => (
                  <tr key={`${group.before} ${group.after}`}>
                    <td>{group.before}</td>
                    <td>{group.after}</td>
                    <td>{group.allow_to_deny}</td>
                    <td>{group.deny_to_allow}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {impact.sample.length > 0 && (
            <ul aria-label="Changed checks">
              {impact.sample.map((changed, index) => (
                <li key={index}>
                  <code>{JSON.stringify(changed.check)}</code>: {word(changed.before.allowed)} now ({changed.before.reason}), {word(changed.after.allowed)} after ({changed.after.reason}){' '}
                  <OpenInPlayground check={changed.check} before={{ title: 'Now', ...changed.before }} after={{ title: 'After the change', ...changed.after }} />
                </li>
              ))}
            </ul>
          )}
        </section>
      )}
    </div>
  );
}
