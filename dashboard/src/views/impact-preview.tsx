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
}

const word = (allowed: boolean) => (allowed ? 'allowed' : 'denied');

export function ImpactPreview({ policy }: { policy: SentPolicy | undefined }) {
  const [impact, setImpact] = useState<ImpactAnswer | undefined>(undefined);
  const [alerts, setAlerts] = useState<string[]>([]);
  const preview = async () => {
    setAlerts([]);
    if (policy === undefined) return setAlerts(['Fix the policy before previewing it.']);
    try {
      setImpact(await call<ImpactAnswer>('POST', '/admin/policies/impact', { policies: [policy] }));
    } catch (error) {
      setAlerts([(error as Error).message]);
    }
  };
  return (
    <div class="impact">
      <button type="button" onClick={preview}>
        Preview impact
      </button>
      <Alerts messages={alerts} />
      {impact !== undefined && (
        <section aria-label="Impact">
          <p>
            Of {impact.replayed} recent checks{impact.from === null ? '' : ` (${impact.from} to ${impact.to})`}, saving would turn{' '}
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
