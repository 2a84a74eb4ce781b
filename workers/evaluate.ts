/**
 * The pool's worker: reads a bulk body (parse, validate) and decides it against the snapshot it
 * holds, off the front thread. The snapshot arrives with a task only when this worker's copy is
 * not at the revision the front held when it queued the task (see src/pool/bulk-pool.ts): older,
 * or newer after the store was reset and its revisions started again.
 */
import { threadId, workerData } from 'node:worker_threads';
import { compile, evaluate, withExplanation, type Decision, type Snapshot } from '../src/engine/index.js';
import { compileBulkValidator, namesRegisteredEntity, readBulkBody } from '../src/registry/bulk-request.js';
import { ClientError, RequestValidationError } from '../src/errors.js';
import type { BulkOutcome, BulkTask, WorkerStart } from '../src/pool/bulk-task.js';
import { RunningTasks } from '../src/pool/running-tasks.js';
import { injectFaultIfAsked } from './faults.js';
import { tallyBulk } from '../src/live/bulk-tally.js';

let snapshot: Snapshot | undefined;
const validate = compileBulkValidator();
const start = workerData as WorkerStart;
const runningTasks = new RunningTasks(start.runningTasks);
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
  if (task.policies !== undefined && (snapshot === undefined || task.revision !== snapshot.revision)) {
    snapshot = compile(task.policies, task.revision);
  }
  if (snapshot === undefined || snapshot.revision !== task.revision) return { kind: 'stale' };
  const startedAt = performance.now();
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
  const current = snapshot;
  const decisions = inputs.map((input): Decision => {
    const decision = evaluate(current, input);
    return task.explain ? withExplanation(current, input, decision) : decision;
  });
  const tally = tallyBulk(inputs, decisions, start.recentDenials);
  const elapsedMs = performance.now() - startedAt;
  return { kind: 'decided', json: JSON.stringify(decisions), tally, revision: current.revision, elapsedMs };
}
