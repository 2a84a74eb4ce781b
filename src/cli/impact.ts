import { parseArgs } from 'node:util';
import { ConfigError } from '../config/config.js';
import { DocumentError, readDocument } from '../document-files.js';
import type { ImpactAnswer } from '../schemas/impact.js';
import { adminRequest } from './admin-request.js';

const USAGE = 'usage: verdict impact [<policy file>...] [--delete <name>]... [--url <server>] [--decision-log <lines>] [--fail-on deny-to-allow|allow-to-deny|any]';
const FAIL_ON = ['deny-to-allow', 'allow-to-deny', 'any'] as const;
/** Groups printed per kind, most changes first. */
const LISTED = 10;

/**
 * `verdict impact <files>`: previews what writing the policies in `files` (and deleting those named by
 * --delete) would do to the checks the server at --url decided lately (POST /admin/policies/impact,
 * the admin key from ADMIN_API_KEY), prints it, and exits 1 when a change crosses --fail-on: for a CI
 * job that must not let a change allow what was denied, say.
 */
export async function impactCommand(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: { url: { type: 'string' }, delete: { type: 'string', multiple: true }, 'decision-log': { type: 'string' }, 'fail-on': { type: 'string' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new ConfigError(`${(error as Error).message}\n${USAGE}`);
  }
  const failOn = parsed.values['fail-on'];
  if (failOn !== undefined && !(FAIL_ON as readonly string[]).includes(failOn)) throw new ConfigError(`--fail-on takes ${FAIL_ON.join(', ')}, not '${failOn}'`);
  const policies = parsed.positionals.flatMap((file) => {
    try {
      const document = readDocument(file);
      return Array.isArray(document) ? document : [document];
    } catch (error) {
      if (error instanceof DocumentError) throw new ConfigError(error.message);
      throw error;
    }
  });
  const deletions = parsed.values.delete ?? [];
  if (policies.length + deletions.length === 0) throw new ConfigError(`no change to preview: name policy files, or --delete a policy\n${USAGE}`);
  const url = parsed.values.url ?? 'http://127.0.0.1:8421';
  const logLines = parsed.values['decision-log'];
  if (logLines !== undefined && !/^[1-9]\d{0,5}$/.test(logLines)) throw new ConfigError(`--decision-log takes how many of the newest lines to replay (1 to 100000), not '${logLines}'`);
  const source = logLines === undefined ? {} : { source: 'decision_log', limit: Number(logLines) };
  const { status, text } = await adminRequest(url, env, '/admin/policies/impact', { policies, delete: deletions, ...source });
  if (status !== 200) throw new ConfigError(`${url} answered ${status} to POST /admin/policies/impact: ${text}`);
  const report = JSON.parse(text) as ImpactAnswer;
  console.log(summary(report));
  const { allow_to_deny: allowToDeny, deny_to_allow: denyToAllow } = report.changed;
  const crossed = (failOn === 'deny-to-allow' && denyToAllow > 0) || (failOn === 'allow-to-deny' && allowToDeny > 0) || (failOn === 'any' && allowToDeny + denyToAllow > 0);
  if (crossed) console.log(`\nfailing: --fail-on ${failOn}`);
  return crossed ? 1 : 0;
}

function replayedWhat({ decision_log: log }: ImpactAnswer): string {
  if (log === undefined) return 'recent checks';
  const { masked, refused, unreadable } = log.skipped;
  return `checks from ${log.lines} lines of the decision log ${log.file} (not replayed: ${masked} masked, ${refused} refused, ${unreadable} unreadable${log.cut === undefined ? '' : `; ${log.cut}`})`;
}

function summary(report: ImpactAnswer): string {
  const { changed } = report;
  const span = report.from === null ? 'none kept yet' : `decided from ${report.from} to ${report.to}`;
  const lines = [
    `replayed ${report.replayed} ${replayedWhat(report)} of process ${report.process.pid} on ${report.process.hostname} (${span})`,
    `allow → deny: ${changed.allow_to_deny}`,
    `deny → allow: ${changed.deny_to_allow}`,
  ];
  const groups = (title: string, rows: { label: string; allow_to_deny: number; deny_to_allow: number }[]) => {
    if (rows.length === 0) return;
    lines.push('', title);
    for (const row of rows.slice(0, LISTED)) lines.push(`  ${row.label}: ${row.allow_to_deny} allow → deny, ${row.deny_to_allow} deny → allow`);
    if (rows.length > LISTED) lines.push(`  … and ${rows.length - LISTED} more`);
  };
  groups('by action', report.by_action.map((group) => ({ label: group.key, ...group })));
  groups('by rule, before → after', report.by_rule.map((group) => ({ label: `${group.before} → ${group.after}`, ...group })));
  groups('by resource type', report.by_resource_type.map((group) => ({ label: group.key, ...group })));
  return lines.join('\n');
}
