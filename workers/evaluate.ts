/**
 * The pool's worker: reads a bulk body (decode, parse, validate) and decides it against the snapshot it
 * holds, or makes plans for principals the front resolved, off the front thread. When this worker's copy is not at the revision the front held when
 * it queued the task (older, or newer after the store was reset and its revisions started again),
 * it answers `stale` and the task comes back with the policies written since the revision it holds,
 * to derive the snapshot from, or with the whole set (see src/pool/bulk-pool.ts).
 */
import { parentPort, threadId, workerData } from 'node:worker_threads';
import { AnswerBudget, compile, decisionsJson, derive, ExplanationTooLarge, type Decision, type Snapshot } from '../src/engine/index.js';
import { decideResolved } from '../src/decide/kernel.js';
import { shadowedBulk } from '../src/decide/shadowed.js';
import { explanationsTooLarge } from '../src/decide/answer-limits.js';
import { compileBulkValidator, onlyTheFrontDecides, readBulkBody } from '../src/requests/bulk-request.js';
import { ClientError, RequestValidationError } from '../src/errors.js';
import type { BulkTask, PlanTask, PoolOutcome, PoolTask, TaskAtRevision, WorkerSettled, WorkerStart } from '../src/pool/bulk-task.js';
import { planAnswers } from '../src/decide/plan-answers.js';
import { RunningTasks } from '../src/pool/running-tasks.js';
import { readSharedCopy } from '../src/pool/shared-copy.js';
import { tallyBulk } from '../src/live/bulk-tally.js';
import { decisionAttributes } from '../src/tracing/request-trace.js';
import type { ItemViolations } from '../src/attribute-schemas/enforcement.js';
import { SchemasInForce } from '../src/attribute-schemas/schemas-in-force.js';
import { QuietSettling } from '../src/settle-memory.js';

let snapshot: Snapshot | undefined;
/** The generation of the front's snapshots that `snapshot` belongs to (see PolicySnapshots.generation). */
let generation = -1;
const validate = compileBulkValidator();
const start = workerData as WorkerStart;
const runningTasks = new RunningTasks(start.runningTasks);
const slot = runningTasks.claim(threadId);
/** The schemas that came with the policies of `snapshot`. */
const schemas = new SchemasInForce(start.schemaEnforcement);
/** The snapshot the shadow policies are decided by, and its version (see TaskAtRevision.shadow). */
let shadow: { version: number; snapshot: Snapshot } | undefined;
/** When this thread last took a task (epoch ms). */
let lastTaskAt = 0;
if (start.settleMemory) {
  new QuietSettling({ workedSince: (epochMs) => lastTaskAt >= epochMs, settled: (settled) => parentPort?.postMessage({ settled } satisfies WorkerSettled) }).start();
}

export default function runTask(task: PoolTask): PoolOutcome {
  lastTaskAt = Date.now();
  runningTasks.mark(slot, task.id);
  try {
    const current = snapshotAt(task);
    const stale: PoolOutcome = { kind: 'stale', holds: snapshot && { revision: snapshot.revision, generation } };
    if (current === undefined) return stale;
    if (task.kind === 'plans') return plan(task, current);
    const shadows = shadowsAt(task);
    return shadows === 'stale' ? stale : decide(task, current, shadows);
  } finally {
    runningTasks.mark(slot, 0);
  }
}

/** The snapshot at the task's revision, made from what the task brings when this worker holds another; undefined when it cannot be. */
function snapshotAt(task: TaskAtRevision): Snapshot | undefined {
  const isTasks = (held: Snapshot | undefined) => held !== undefined && held.revision === task.revision && generation === task.generation;
  if (task.changes !== undefined && snapshot?.revision === task.changes.from && generation === task.generation) {
    snapshot = derive(snapshot, readSharedCopy(task.changes.policies), task.revision) ?? snapshot;
  } else if (task.whole !== undefined && !isTasks(snapshot)) {
    const whole = readSharedCopy(task.whole);
    snapshot = compile(whole.policies, task.revision, whole.positions);
    generation = task.generation;
    schemas.apply(whole.schemas);
  }
  return isTasks(snapshot) ? snapshot : undefined;
}

/** The shadows' snapshot the task names (none while there are no shadows), made from what it brings when this worker holds another; 'stale' when it cannot be. */
function shadowsAt({ shadow: named, revision }: TaskAtRevision): Snapshot | undefined | 'stale' {
  if (named === undefined) return undefined;
  if (shadow?.version === named.version) return shadow.snapshot;
  if (named.policies === undefined) return 'stale';
  shadow = { version: named.version, snapshot: compile(readSharedCopy(named.policies), revision) };
  return shadow.snapshot;
}

function plan(task: PlanTask, current: Snapshot): PoolOutcome {
  try {
    const answers = planAnswers(current, task.work, task.settings, !task.single);
    return { kind: 'planned', json: JSON.stringify(task.single ? answers[0] : answers) };
  } catch (error) {
    if (error instanceof ClientError) return { kind: 'refused', statusCode: error.statusCode, detail: error.detail };
    throw error;
  }
}

function decide(task: BulkTask, current: Snapshot, shadows: Snapshot | undefined): PoolOutcome {
  const startedAt = performance.now();
  const text = Buffer.from(task.body).toString('utf8');
  let inputs;
  try {
    inputs = readBulkBody(text, validate, task.limits);
  } catch (error) {
    if (error instanceof ClientError) return { kind: 'refused', statusCode: error.statusCode, detail: error.detail };
    if (error instanceof RequestValidationError) return { kind: 'refused', statusCode: 422, detail: error.issues };
    throw error;
  }
  if (inputs.some(onlyTheFrontDecides)) return { kind: 'needs-front' };
  // What each item breaks of the schemas: under warn it is decided all the same, and the front records it.
  const enforced = schemas.enforced;
  const broken = enforced === undefined ? undefined : inputs.map((input) => enforced.violations(input));
  const violations: ItemViolations = broken === undefined ? [] : broken.flatMap((item, index) => (item.length === 0 ? [] : [{ item: index, violations: item }]));
  // Rare, and a client's mistake: the front decides such a bulk, refusing such items as it refuses every check.
  if (violations.length > 0 && enforced!.enforcement === 'reject') return { kind: 'breaks-schema' };
  const explanations = task.explain ? new AnswerBudget(task.limits.maxAnswerSize) : undefined;
  let decisions: Decision[];
  try {
    decisions = inputs.map((input, index) => decideResolved(current, input, broken?.[index], explanations).answer);
  } catch (error) {
    if (!(error instanceof ExplanationTooLarge)) throw error;
    const refused = explanationsTooLarge(error.maxLength, inputs.length);
    return { kind: 'refused', statusCode: refused.statusCode, detail: refused.detail };
  }
  const tally = tallyBulk(inputs, decisions, task.keepDenials, broken);
  // Decided by the shadows too before the time is taken: on the front, the shadows' decisions are part of a bulk's time as well.
  const shadowed = shadows && shadowedBulk(shadows, inputs, decisions, start.shadowSamplePercent);
  const elapsedMs = performance.now() - startedAt;
  const json = explanations === undefined ? decisionsJson(decisions) : JSON.stringify(decisions);
  const traced = task.traceItems ? decisions.map(decisionAttributes) : undefined;
  return { kind: 'decided', json, tally, violations, revision: current.revision, elapsedMs, kept: inputs.slice(0, task.keepChecks), ...(shadowed && { shadowed }), ...(traced && { traced }) };
}
