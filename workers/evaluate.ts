/**
 * The pool's worker: reads a bulk body (parse, validate) and decides it against the snapshot it
 * holds, off the front thread. The snapshot arrives with a task only when this worker's copy is
 * older than the revision the front held when it queued the task (see src/pool/bulk-pool.ts).
 */
import { compile, evaluate, type Snapshot } from '../src/engine/index.js';
import { compileBulkValidator, namesRegisteredEntity, readBulkBody } from '../src/registry/bulk-request.js';
import { ClientError, RequestValidationError } from '../src/errors.js';
import type { BulkOutcome, BulkTask } from '../src/pool/bulk-task.js';
import { decisionLine } from '../src/decision-log/line.js';

/**
 * Test only (test/worker-faults.test.ts): with VERDICT_TEST_WORKER_FAULT=crash or hang, a bulk
 * holding the action FAULT_ACTION makes this worker exit or spin forever, as a real fault would.
 */
const FAULT = process.env.VERDICT_TEST_WORKER_FAULT;
export const FAULT_ACTION = 'verdict-test-worker-fault';

function injectFault(): void {
  if (FAULT === 'crash') process.exit(1);
  if (FAULT === 'hang') for (;;);
}

let snapshot: Snapshot | undefined;
const validate = compileBulkValidator();

export default function decideBulk(task: BulkTask): BulkOutcome {
  if (task.policies !== undefined && (snapshot === undefined || task.revision > snapshot.revision)) {
    snapshot = compile(task.policies, task.revision);
  }
  if (snapshot === undefined || snapshot.revision < task.revision) return { kind: 'stale' };
  if (FAULT !== undefined && task.text.includes(FAULT_ACTION)) injectFault();
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
  const logLines: string[] | undefined = task.logDecisions ? [] : undefined;
  let allowed = 0;
  const decisions = inputs.map((input) => {
    const startedAt = performance.now();
    const decision = evaluate(current, input);
    if (decision.allowed) allowed++;
    const latencyMs = performance.now() - startedAt;
    logLines?.push(decisionLine({ time: Date.now(), input, request: input, decision, revision: current.revision, latencyMs }));
    return decision;
  });
  return { kind: 'decided', json: JSON.stringify(decisions), allowed, denied: decisions.length - allowed, logLines };
}
