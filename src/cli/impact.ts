import { parseArgs } from 'node:util';
import { ConfigError } from '../config/config.js';
import { DocumentError, readDocument } from '../document-files.js';
import type { ImpactAnswer } from '../schemas/impact.js';
import { adminRequest } from './admin-request.js';
import { offlineImpact } from './impact-offline.js';

const USAGE =
  'usage: verdict impact [<policy file>...] [--delete <name>]... [--url <server>] [--decision-log <lines>] [--format text|json] [--fail-on deny-to-allow|allow-to-deny|any]\n' +
  '       verdict impact --before <policy dir> --after <policy dir> --replay <decision log file>... [--lines <per file>] [--format text|json] [--fail-on ...]';
const FAIL_ON = ['deny-to-allow', 'allow-to-deny', 'any'] as const;
const FORMATS = ['text', 'json'] as const;
/** Lines replayed of each decision-log file offline, unless --lines says otherwise. */
const DEFAULT_OFFLINE_LINES = 100_000;
/** Groups printed per kind, most changes first. */
const LISTED = 10;

/**
 * `verdict impact <files>`: previews what writing the policies in `files` (and deleting those named by
 * --delete) would do to the checks the server at --url decided lately (POST /admin/policies/impact,
 * the admin key from ADMIN_API_KEY), prints it, and exits 1 when a change crosses --fail-on: for a CI
 * job that must not let a change allow what was denied, say. With --replay, offline: the decision
 * logs given, replayed against the --before and --after policy directories (see offlineImpact).
 */
export async function impactCommand(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: {
        url: { type: 'string' },
        delete: { type: 'string', multiple: true },
        'decision-log': { type: 'string' },
        'fail-on': { type: 'string' },
        format: { type: 'string', default: 'text' },
        replay: { type: 'string', multiple: true },
        before: { type: 'string' },
        after: { type: 'string' },
        lines: { type: 'string' },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new ConfigError(`${(error as Error).message}\n${USAGE}`);
  }
  const failOn = parsed.values['fail-on'];
  if (failOn !== undefined && !(FAIL_ON as readonly string[]).includes(failOn)) throw new ConfigError(`--fail-on takes ${FAIL_ON.join(', ')}, not '${failOn}'`);
  const format = parsed.values.format!;
  if (!(FORMATS as readonly string[]).includes(format)) throw new ConfigError(`--format takes ${FORMATS.join(', ')}, not '${format}'`);
  const { replay, before, after, lines } = parsed.values;
  const offline = replay !== undefined || before !== undefined || after !== undefined || lines !== undefined;
  const report = offline ? await replayedOffline(parsed.positionals, parsed.values) : await askedOfServer(parsed.positionals, parsed.values, env);
  console.log(format === 'json' ? JSON.stringify(report.answer, null, 2) : summary(report.replayed, report.answer));
  const { allow_to_deny: allowToDeny, deny_to_allow: denyToAllow } = report.answer.changed;
  const crossed = (failOn === 'deny-to-allow' && denyToAllow > 0) || (failOn === 'allow-to-deny' && allowToDeny > 0) || (failOn === 'any' && allowToDeny + denyToAllow > 0);
  if (crossed && format === 'text') console.log(`\nfailing: --fail-on ${failOn}`);
  return crossed ? 1 : 0;
}

/** What a preview gives to print: the report, and a line saying what was replayed. */
interface Previewed {
  replayed: string;
  answer: Pick<ImpactAnswer, 'changed' | 'by_action' | 'by_rule' | 'by_resource_type'>;
}

async function replayedOffline(positionals: string[], values: { replay?: string[]; before?: string; after?: string; lines?: string; delete?: string[]; url?: string }): Promise<Previewed> {
  const { replay, before, after, lines } = values;
  if (positionals.length > 0 || values.delete !== undefined || values.url !== undefined) throw new ConfigError(`an offline replay compares two policy directories: --before and --after, not policy files, --delete or --url\n${USAGE}`);
  if (replay === undefined || before === undefined || after === undefined) throw new ConfigError(`an offline replay needs --before <policy dir>, --after <policy dir> and --replay <decision log file>\n${USAGE}`);
  if (lines !== undefined && !/^[1-9]\d{0,6}$/.test(lines)) throw new ConfigError(`--lines takes how many of the newest lines of each file to replay (1 to 9999999), not '${lines}'`);
  const answer = await offlineImpact(before, after, replay, lines === undefined ? DEFAULT_OFFLINE_LINES : Number(lines));
  const skipped = answer.decision_logs.reduce((sum, log) => sum + log.skipped.masked + log.skipped.refused + log.skipped.unreadable, 0);
  const span = answer.from === null ? 'none' : `decided from ${answer.from} to ${answer.to}`;
  return { replayed: `replayed ${answer.replayed} checks of ${replay.length} decision log files (${span}; ${skipped} lines not replayable) from ${before} to ${after}`, answer };
}

async function askedOfServer(policyFiles: string[], values: { delete?: string[]; url?: string; 'decision-log'?: string }, env: NodeJS.ProcessEnv): Promise<Previewed> {
  const policies = policyFiles.flatMap((file) => {
    try {
      const document = readDocument(file);
      return Array.isArray(document) ? document : [document];
    } catch (error) {
      if (error instanceof DocumentError) throw new ConfigError(error.message);
      throw error;
    }
  });
  const deletions = values.delete ?? [];
  if (policies.length + deletions.length === 0) throw new ConfigError(`no change to preview: name policy files, or --delete a policy\n${USAGE}`);
  const url = values.url ?? 'http://127.0.0.1:8421';
  const logLines = values['decision-log'];
  if (logLines !== undefined && !/^[1-9]\d{0,5}$/.test(logLines)) throw new ConfigError(`--decision-log takes how many of the newest lines to replay (1 to 100000), not '${logLines}'`);
  const source = logLines === undefined ? {} : { source: 'decision_log', limit: Number(logLines) };
  const { status, text } = await adminRequest(url, env, '/admin/policies/impact', { policies, delete: deletions, ...source });
  if (status !== 200) throw new ConfigError(`${url} answered ${status} to POST /admin/policies/impact: ${text}`);
  const report = JSON.parse(text) as ImpactAnswer;
  const span = report.from === null ? 'none kept yet' : `decided from ${report.from} to ${report.to}`;
  return { replayed: `replayed ${report.replayed} ${replayedWhat(report)} of process ${report.process.pid} on ${report.process.hostname} (${span})`, answer: report };
}

function replayedWhat({ decision_log: log }: ImpactAnswer): string {
  if (log === undefined) return 'recent checks';
  const { masked, refused, unreadable } = log.skipped;
  return `checks from ${log.lines} lines of the decision log ${log.file} (not replayed: ${masked} masked, ${refused} refused, ${unreadable} unreadable${log.cut === undefined ? '' : `; ${log.cut}`})`;
}

function summary(replayed: string, report: Previewed['answer']): string {
  const { changed } = report;
  const lines = [
    replayed,
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
