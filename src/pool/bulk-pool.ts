import { Piscina } from 'piscina';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import { ClientError, RequestValidationError } from '../errors.js';
import type { BulkOutcome, BulkTask } from './bulk-task.js';
import type { BulkLimits } from '../registry/bulk-request.js';

/** A worker did not finish a bulk in time: answered 503, the client may retry. */
export class WorkerTimeoutError extends Error {}

/** Told of every bulk a worker decided: how many allowed and denied, and the decision log lines when asked for. */
export type BulkObserver = (outcome: { allowed: number; denied: number; logLines?: string[] }) => void;

const WORKER_FILE = new URL('../../workers/evaluate.js', import.meta.url).href;

/**
 * Worker threads that take big bulk checks off the front thread: JSON parsing, validation and
 * evaluation all happen in a worker, so bulk throughput is not bounded by one core. A task is
 * decided at the snapshot revision the front held when it queued it, or a later one.
 */
export class BulkPool {
  private readonly pool: Piscina<BulkTask, BulkOutcome>;

  constructor(
    workers: number,
    private readonly snapshots: PolicySnapshots,
    private readonly limits: BulkLimits,
    private readonly timeoutMillis: number,
    private readonly observe: BulkObserver = () => {},
    private readonly logDecisions = false,
  ) {
    this.pool = new Piscina({ filename: WORKER_FILE, minThreads: workers, maxThreads: workers, idleTimeout: Infinity });
  }

  /**
   * The decisions as JSON text, or undefined when the front must decide (an item names a
   * registered entity, or the worker died: Piscina replaces it and the caller decides inline,
   * never a guess). Throws the client errors the body deserves, and WorkerTimeoutError when a
   * worker took longer than the timeout (it is terminated and replaced).
   */
  async decide(text: string): Promise<string | undefined> {
    const { current, policies } = this.snapshots;
    const task: BulkTask = { text, revision: current.revision, limits: this.limits, logDecisions: this.logDecisions };
    const signal = AbortSignal.timeout(this.timeoutMillis);
    let outcome: BulkOutcome;
    try {
      outcome = await this.pool.run(task, { signal });
      if (outcome.kind === 'stale') outcome = await this.pool.run({ ...task, policies }, { signal });
    } catch {
      // Deciding inline what a worker could not finish in time would stall the front as well.
      if (signal.aborted) throw new WorkerTimeoutError(`A bulk check took longer than ${this.timeoutMillis} ms`);
      return undefined;
    }
    switch (outcome.kind) {
      case 'decided':
        this.observe(outcome);
        return outcome.json;
      case 'refused':
        if (typeof outcome.detail === 'string') throw new ClientError(outcome.statusCode, outcome.detail);
        throw new RequestValidationError(outcome.detail);
      default:
        return undefined;
    }
  }

  get threads(): number {
    return this.pool.threads.length;
  }

  get queueSize(): number {
    return this.pool.queueSize;
  }

  get utilization(): number {
    return this.pool.utilization;
  }

  close(): Promise<void> {
    return this.pool.destroy();
  }
}
