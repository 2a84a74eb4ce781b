import { Piscina } from 'piscina';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import { ClientError, RequestValidationError } from '../errors.js';
import type { BulkOutcome, BulkTask } from './bulk-task.js';
import type { BulkLimits } from '../bulk.js';

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
  ) {
    this.pool = new Piscina({ filename: WORKER_FILE, minThreads: workers, maxThreads: workers, idleTimeout: Infinity });
  }

  /**
   * The decisions as JSON text, or undefined when the front must decide (an item names a
   * registered entity, or a worker failed: the caller decides inline, never a guess).
   * Throws the client errors the body deserves.
   */
  async decide(text: string): Promise<string | undefined> {
    const { current, policies } = this.snapshots;
    const task: BulkTask = { text, revision: current.revision, limits: this.limits };
    let outcome: BulkOutcome;
    try {
      outcome = await this.pool.run(task);
      if (outcome.kind === 'stale') outcome = await this.pool.run({ ...task, policies });
    } catch {
      return undefined;
    }
    switch (outcome.kind) {
      case 'decided':
        return outcome.json;
      case 'refused':
        if (typeof outcome.detail === 'string') throw new ClientError(outcome.statusCode, outcome.detail);
        throw new RequestValidationError(outcome.detail);
      default:
        return undefined;
    }
  }

  close(): Promise<void> {
    return this.pool.destroy();
  }
}
