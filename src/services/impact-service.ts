import { compile, derive, type ChangedPolicy, type Snapshot } from '../engine/index.js';
import type { Policy } from '../schemas/policy.js';
import { isPolicyRecord } from '../audit/record.js';
import { ClientError, RequestValidationError } from '../errors.js';
import type { ValidationIssue } from '../schemas/errors.js';
import { isShadow, type PolicySnapshots } from '../snapshot/policy-snapshots.js';
import { replayImpact } from './impact.js';
import { DEFAULT_LOG_REPLAY_LINES, type ImpactAnswer, type ImpactRequest } from '../schemas/impact.js';
import type { PolicyService } from './policies.js';
import type { PolicySetReader } from '../policy-files/policy-set.js';
import type { RecentCheck, RecentChecks } from './recent-checks.js';
import { runInSlices } from './work-in-slices.js';
import { checksOfLogLines, newestLines } from './decision-log-replay.js';
import type { DecisionLogMask } from '../decision-log/mask.js';

/**
 * Impact previews: what a proposed change of the policies would do to the checks this process
 * decided lately (its RecentChecks, or the newest lines of its decision log file), before it is
 * written. Nothing is written.
 */
export class ImpactService {
  constructor(
    private readonly snapshots: PolicySnapshots,
    private readonly reader: PolicySetReader,
    private readonly policies: Pick<PolicyService, 'version'>,
    private readonly recent: RecentChecks,
    private readonly maxAnswerSize: number,
    /** The decision log's file (`--decision-log <path>`); undefined when it goes to stdout, a URL, or nowhere. */
    private readonly decisionLogFile: string | undefined,
    /** The values the sample never shows (`--decision-log-mask`). */
    private readonly mask: DecisionLogMask = {},
  ) {}

  async preview(change: ImpactRequest): Promise<ImpactAnswer> {
    const current = this.snapshots.current;
    const proposed = proposedSnapshot(current, await this.proposedSet(current, change));
    const { checks, decisionLog } = change.source === 'decision_log' ? await this.fromDecisionLog(change.limit ?? DEFAULT_LOG_REPLAY_LINES) : { checks: this.recent.list() };
    const report = await runInSlices(replayImpact(current, proposed, checks, this.maxAnswerSize, this.mask));
    return {
      ...report,
      source: change.source ?? 'recent_checks',
      recent_checks: { capacity: this.recent.capacity, skipped_for_size: this.recent.skipped },
      ...(decisionLog !== undefined && { decision_log: decisionLog }),
    };
  }

  /** The checks of the newest `limit` lines of the decision log file, and what was read of it. */
  private async fromDecisionLog(limit: number): Promise<{ checks: RecentCheck[]; decisionLog: NonNullable<ImpactAnswer['decision_log']> }> {
    const file = this.decisionLogFile;
    if (file === undefined) {
      throw new ClientError(409, "This server writes no decision log file (--decision-log <path>): replay 'recent_checks' instead");
    }
    const { lines, cut } = await newestLines(file, limit);
    const { checks, skipped } = await runInSlices(checksOfLogLines(lines));
    return { checks, decisionLog: { file, lines: lines.length, skipped, ...(cut !== undefined && { cut }) } };
  }

  /** The policies in force with the change made: replaced in place, created last, deleted, restored (in place, or last if deleted). */
  private async proposedSet(current: Snapshot, change: ImpactRequest): Promise<Policy[]> {
    const { policies: sent = [], delete: deleted = [], restore = [] } = change;
    if (sent.length + deleted.length + restore.length === 0) throw new ClientError(400, "Nothing to preview: give 'policies', 'delete' or 'restore'");
    const read = this.reader.read(sent, (index) => ['body', 'policies', index]);
    if ('issues' in read) throw new RequestValidationError(read.issues);
    const restored: Policy[] = [];
    for (const [index, { name, version }] of restore.entries()) {
      const record = await this.policies.version(name, version);
      if (!isPolicyRecord(record) || record.after === null) throw new ClientError(400, `Version ${version} of policy '${name}' is its deletion; restore an earlier version (restore ${index})`);
      restored.push(record.after);
    }
    const set = new Map(current.policies.map((policy) => [policy.name, policy]));
    const issues: ValidationIssue[] = [];
    deleted.forEach((name, index) => {
      if (!set.delete(name)) issues.push({ loc: ['body', 'delete', index], msg: `no policy named '${name}' is in force`, type: 'value_error' });
    });
    if (issues.length > 0) throw new RequestValidationError(issues);
    // A policy written as a shadow leaves the live set (it would be stored under its name) and decides nothing live.
    for (const policy of [...restored, ...read.policies]) {
      if (isShadow(policy)) set.delete(policy.name);
      else set.set(policy.name, policy);
    }
    return [...set.values()];
  }
}

/**
 * The snapshot of the proposed set: derived from the one in force by the policies that differ, as a
 * write's snapshot is (a preview of a change to a few of 10,000 policies compiles those few, not
 * all of them, on the front thread); compiled whole where it cannot be derived.
 */
function proposedSnapshot(current: Snapshot, proposed: readonly Policy[]): Snapshot {
  const positionOf = new Map(current.policies.map((policy, index) => [policy.name, { policy, position: current.positions[index]! }]));
  let next = current.positions.reduce((highest, position) => Math.max(highest, position), -1) + 1;
  const kept = new Set(proposed.map((policy) => policy.name));
  const changes: ChangedPolicy[] = current.policies.filter((policy) => !kept.has(policy.name)).map((policy) => ({ name: policy.name, now: null }));
  for (const policy of proposed) {
    const now = positionOf.get(policy.name);
    if (now?.policy !== policy) changes.push({ name: policy.name, now: { policy, position: now?.position ?? next++ } });
  }
  return derive(current, changes, current.revision) ?? compile(proposed, current.revision);
}
