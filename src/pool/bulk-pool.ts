import type { Piscina } from 'piscina';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import type { Snapshot } from '../engine/index.js';
import { ClientError, RequestValidationError } from '../errors.js';
import type { BulkOutcome, BulkTask, WorkerStart } from './bulk-task.js';
import type { BulkLimits } from '../registry/bulk-request.js';
import { RunningTasks } from './running-tasks.js';
import type { BulkTally } from '../live/live-counters.js';

/** A worker did not finish a bulk in time: answered 503, the client may retry. */
export class WorkerTimeoutError extends Error {}

/** Told of every bulk a worker decided: its body (UTF-8), its decisions as JSON, what decided them, at which revision, in how long. */
export type BulkObserver = (bulk: { body: Buffer; json: string; tally: BulkTally; revision: number; elapsedMs: number }) => void;

const WORKER_FILE = new URL('../../workers/evaluate.js', import.meta.url).href;

/**
 * Bulks a worker may hold at once: it starts the next as soon as one is done, without waiting for
 * the front's event loop to hand it over.
 */
const TASKS_QUEUED_PER_WORKER = 4;

/**
 * Worker threads that take big bulk checks off the front thread: JSON parsing, validation and
 * evaluation all happen in a worker, so bulk throughput is not bounded by one core. A task is
 * decided at the snapshot revision the front held when it queued it, or a later one. The threads
 * (and Piscina) start with the first bulk given to the pool: a process that never gets one never
 * pays for them.
 */
export class BulkPool {
  /** Undefined until the first bulk. */
  private starting: Promise<Piscina<BulkTask, BulkOutcome>> | undefined;
  private pool: Piscina<BulkTask, BulkOutcome> | undefined;
  private readonly runningTasks: RunningTasks;
  /** When the watchdog first saw each task running in a worker (performance.now()), by task id. */
  private readonly runningSince = new Map<number, number>();
  /** Tasks whose worker was terminated for taking too long. */
  private readonly timedOut = new Set<number>();
  private watchdog: NodeJS.Timeout | undefined;
  private lastTaskId = 0;
  private closed = false;

  constructor(
    private readonly workers: number,
    private readonly snapshots: PolicySnapshots,
    private readonly limits: BulkLimits,
    private readonly timeoutMillis: number,
    private readonly observe: BulkObserver = () => {},
    private readonly recentDenials = 0,
  ) {
    this.runningTasks = RunningTasks.create(workers);
  }

  /** The pool, started on first use. */
  private started(): Promise<Piscina<BulkTask, BulkOutcome>> {
    this.starting ??= import('piscina').then(({ Piscina }) => {
      const workerData: WorkerStart = { runningTasks: this.runningTasks.buffer, recentDenials: this.recentDenials };
      const pool = new Piscina<BulkTask, BulkOutcome>({
        filename: WORKER_FILE,
        minThreads: this.workers,
        maxThreads: this.workers,
        idleTimeout: Infinity,
        concurrentTasksPerWorker: TASKS_QUEUED_PER_WORKER,
        workerData,
      });
      pool.on('workerDestroy', (worker: { id: number }) => this.runningTasks.release(worker.id));
      this.watchdog = setInterval(this.stopOverdueWorkers, Math.min(1000, Math.max(10, this.timeoutMillis / 10))).unref();
      this.pool = pool;
      return pool;
    });
    return this.starting;
  }

  /**
   * The decisions as JSON text (each with its explanation when `explain`), or undefined when the front must decide (an item names a
   * registered entity, or the worker died: Piscina replaces it and the caller decides inline,
   * never a guess). Throws the client errors the body deserves, and WorkerTimeoutError when a
   * worker ran the bulk for longer than the timeout (the worker is terminated and replaced; bulks
   * queued on it are decided on the front).
   */
  async decide(body: Buffer | string, explain = false): Promise<string | undefined> {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    const { current, generation } = this.snapshots;
    this.lastTaskId = (this.lastTaskId % 0x7fffffff) + 1;
    const task = { id: this.lastTaskId, revision: current.revision, generation, limits: this.limits, explain };
    // Each run moves a copy of the bytes to the worker: no structured clone of a decoded string,
    // and the front keeps the body, to decide it itself when the worker cannot.
    const run = (pool: Piscina<BulkTask, BulkOutcome>, extra: Partial<BulkTask> = {}) => {
      const moved = new Uint8Array(bytes).buffer;
      return pool.run({ ...task, ...extra, body: moved }, { transferList: [moved] });
    };
    let outcome: BulkOutcome;
    try {
      if (this.closed) return undefined;
      const pool = await this.started();
      outcome = await run(pool);
      if (outcome.kind === 'stale') outcome = await run(pool, this.catchUpFrom(outcome.holds, task, current));
      // The changes reached another worker, which holds yet another revision.
      if (outcome.kind === 'stale') outcome = await run(pool, { policies: current.policies, positions: current.positions });
    } catch {
      // Deciding inline what a worker could not finish in time would stall the front as well.
      if (this.timedOut.has(task.id)) throw new WorkerTimeoutError(`A bulk check took longer than ${this.timeoutMillis} ms`);
      return undefined;
    } finally {
      this.timedOut.delete(task.id);
    }
    switch (outcome.kind) {
      case 'decided':
        this.observe({ ...outcome, body: bytes });
        return outcome.json;
      case 'refused':
        if (typeof outcome.detail === 'string') throw new ClientError(outcome.statusCode, outcome.detail);
        throw new RequestValidationError(outcome.detail);
      default:
        return undefined;
    }
  }

  /** What a worker holding `holds` needs to decide `task`, at `snapshot`: the policies written since, when they are kept, else the whole set. */
  private catchUpFrom(holds: Extract<BulkOutcome, { kind: 'stale' }>['holds'], task: Pick<BulkTask, 'revision' | 'generation'>, snapshot: Snapshot): Pick<BulkTask, 'changes' | 'policies' | 'positions'> {
    const changes = holds?.generation === task.generation ? this.snapshots.changesBetween(holds.revision, task.revision, task.generation) : undefined;
    if (holds === undefined || changes === undefined) return { policies: snapshot.policies, positions: snapshot.positions };
    return { changes: { from: holds.revision, policies: changes } };
  }

  /**
   * Terminates each worker that has been running one task for longer than the timeout (seen
   * running on two ticks that far apart). Time spent waiting in a queue does not count: under a
   * backlog, healthy workers are left alone.
   */
  private readonly stopOverdueWorkers = (): void => {
    const now = performance.now();
    const seen = new Set<number>();
    for (const { threadId, taskId } of this.runningTasks.running()) {
      seen.add(taskId);
      const since = this.runningSince.get(taskId);
      if (since === undefined) this.runningSince.set(taskId, now);
      if (since === undefined || now - since <= this.timeoutMillis) continue;
      this.timedOut.add(taskId);
      this.runningTasks.release(threadId);
      void this.pool?.threads.find((worker) => worker.threadId === threadId)?.terminate();
    }
    for (const taskId of this.runningSince.keys()) if (!seen.has(taskId)) this.runningSince.delete(taskId);
  };

  /** Whether the threads have been started (by the first bulk). */
  get inUse(): boolean {
    return this.starting !== undefined;
  }

  get threads(): number {
    return this.pool?.threads.length ?? 0;
  }

  get queueSize(): number {
    return this.pool?.queueSize ?? 0;
  }

  get utilization(): number {
    return this.pool?.utilization ?? 0;
  }

  /** Worker time spent on tasks since the pool started, in ms (Piscina's own estimate, as for utilization). */
  get busyMilliseconds(): number {
    return this.pool === undefined ? 0 : this.pool.utilization * this.pool.duration * this.pool.maxThreads;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.watchdog);
    if (this.starting !== undefined) await (await this.starting).destroy();
  }
}
