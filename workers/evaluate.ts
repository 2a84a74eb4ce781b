/**
 * The pool's worker: reads a bulk body (parse, validate) and decides it against the snapshot it
 * holds, off the front thread. The snapshot arrives with a task only when this worker's copy is
 * older than the revision the front held when it queued the task (see src/pool/bulk-pool.ts).
 */
import { threadId, workerData } from 'node:worker_threads';
import { compile, evaluate, type Decision, type Snapshot } from '../src/engine/index.js';
import { compileBulkValidator, namesRegisteredEntity, readBulkBody } from '../src/registry/bulk-request.js';
import { ClientError, RequestValidationError } from '../src/errors.js';
import type { BulkOutcome, BulkTask, WorkerStart } from '../src/pool/bulk-task.js';
import { RunningTasks } from '../src/pool/running-tasks.js';
import type { CheckInput } from '../src/registry/check-request.js';
import { decisionLine } from '../src/decision-log/line.js';
import { injectFaultIfAsked } from './faults.js';

let snapshot: Snapshot | undefined;
const validate = compileBulkValidator();
const runningTasks = new RunningTasks((workerData as WorkerStart).runningTasks);
const slot = runningTasks.claim(threadId);

export default function decideBulk(task: BulkTask): BulkOutcome {
  runningTasks.mark(slot, task.id);
  try {
    return decide(task);
  } finally {
    runningTasks.mark(slot, 0);
  }
}

function decide(task: BulkTask): BulkOutcome {
  if (task.policies !== undefined && (snapshot === undefined || task.revision > snapshot.revision)) {
    snapshot = compile(task.policies, task.revision);
  }
  if (snapshot === undefined || snapshot.revision < task.revision) return { kind: 'stale' };
  injectFaultIfAsked(task.text);
  let inputs;
  try {
    inputs = readBulkBody(task.text, validate, task.limits);
  } catch (error) {
    if (error instanceof ClientError) return { kind: 'refused', statusCode: error.statusCode, detail: error.detail };
    if (error instanceof RequestValidationError) return { kind: 'refused', statusCode: 422, detail: error.issues };
    throw error;
  }
  if (inputs.some(namesRegisteredEntity)) return { kind: 'needs-registry' };
  const decided: { decisions: Decision[]; logLines?: string[] } = task.logDecisions ? decideLogging(snapshot, inputs) : { decisions: inputs.map((input) => evaluate(snapshot!, input)) };
  let allowed = 0;
  for (const decision of decided.decisions) if (decision.allowed) allowed++;
  return { kind: 'decided', json: JSON.stringify(decided.decisions), allowed, denied: decided.decisions.length - allowed, logLines: decided.logLines };
}

/** Decides and times each item, for the decision log. */
function decideLogging(current: Snapshot, inputs: CheckInput[]): { decisions: Decision[]; logLines: string[] } {
  const logLines: string[] = [];
  const decisions = inputs.map((input) => {
    const startedAt = performance.now();
    const decision = evaluate(current, input);
    const latencyMs = performance.now() - startedAt;
    logLines.push(decisionLine({ time: Date.now(), input, request: input, decision, revision: current.revision, latencyMs }));
    return decision;
  });
  return { decisions, logLines };
}
