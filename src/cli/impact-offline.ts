import { DEFAULT_CONFIG, ConfigError } from '../config/config.js';
import { compile, type Snapshot } from '../engine/index.js';
import { PolicySetReader } from '../policy-files/policy-set.js';
import { readPolicyDirectory } from '../policy-files/read-directory.js';
import type { ImpactAnswer } from '../schemas/impact.js';
import { checksOfLogLines, newestLines } from '../services/decision-log-replay.js';
import { replayImpact, type ImpactReport } from '../services/impact.js';
import type { RecentCheck } from '../services/recent-checks.js';
import { runInSlices } from '../services/work-in-slices.js';
import { isShadow } from '../snapshot/policy-snapshots.js';

/** What one decision-log file gave an offline replay. */
type LogRead = NonNullable<ImpactAnswer['decision_log']>;

/** An offline impact report: the replay's, with the policy directories compared and each log read. */
export interface OfflineImpact extends Omit<ImpactReport, 'process'> {
  before: string;
  after: string;
  decision_logs: LogRead[];
}

/**
 * The live policies of a policy directory, compiled, read as `verdict start --policies` reads it: a
 * file that a write would refuse stops the replay, named with its field (ConfigError).
 */
function compiledDirectory(dir: string, flag: string, revision: number): Snapshot {
  const contents = readPolicyDirectory(dir, new PolicySetReader(DEFAULT_CONFIG));
  if ('problems' in contents) throw new ConfigError(`${flag} ${dir}: ${contents.problems.join('; ')}`);
  return compile(
    contents.policies.filter((policy) => !isShadow(policy)),
    revision,
  );
}

/**
 * Replays the checks of decision-log files (each process's file, or what the HTTP sink shipped, as
 * lines), the newest `linesPerFile` of each, against two policy directories: what a change of the
 * policies from `before` to `after` would do to the traffic of every process that logged it. Offline:
 * no server, no store; each check is decided on the attributes it logged as resolved, at its time.
 */
export async function offlineImpact(before: string, after: string, logFiles: readonly string[], linesPerFile: number): Promise<OfflineImpact> {
  const current = compiledDirectory(before, '--before', 1);
  const proposed = compiledDirectory(after, '--after', 2);
  const checks: RecentCheck[] = [];
  const logs: LogRead[] = [];
  for (const file of logFiles) {
    let read;
    try {
      read = await newestLines(file, linesPerFile);
    } catch (error) {
      throw new ConfigError(`--replay ${file}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`);
    }
    const { checks: ofFile, skipped } = await runInSlices(checksOfLogLines(read.lines));
    checks.push(...ofFile);
    logs.push({ file, lines: read.lines.length, skipped, ...(read.cut !== undefined && { cut: read.cut }) });
  }
  // Oldest first across the files, as one process's checks are.
  checks.sort((one, other) => one.at - other.at);
  const { process: _replayingProcess, ...report } = await runInSlices(replayImpact(current, proposed, checks, DEFAULT_CONFIG.maxAnswerSize, {}));
  return { before, after, ...report, decision_logs: logs };
}
