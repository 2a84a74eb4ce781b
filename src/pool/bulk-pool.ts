import { IDLE_THREAD_TIMEOUT_MS } from './worker-sizing.js';
import type { Piscina } from 'piscina';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import type { DecisionRequest, Snapshot } from '../engine/index.js';
import { ClientError, RequestValidationError } from '../errors.js';
import { isWorkerSettled, type PoolOutcome, type PoolTask, type TaskAtRevision, type WorkerStart } from './bulk-task.js';
import type { Settled } from '../settle-memory.js';
import { LatestCopies } from './shared-copy.js';
import type { PlanSettings, PlanWork } from '../decide/plan-answers.js';
import type { BulkLimits } from '../requests/bulk-request.js';
import { RunningTasks } from './running-tasks.js';
import { POOL_WORKER_FILE } from '../../workers/entry-points.js';
import type { BulkTally } from '../live/live-counters.js';
import type { ItemViolations } from '../attribute-schemas/enforcement.js';
import type { SchemaEnforcement } from '../config/config.js';
import type { ShadowedBulk } from '../decide/shadowed.js';
import type { DeciderAttributes, RequestOrigin } from '../decision-log/line.js';

/** What a pool is made with. */
export interface BulkPoolOptions {
  /** Its threads, started by the first task. */
  workers: number;
  /** The threads it keeps when idle (default: all of them); with fewer, a thread idle for IDLE_THREAD_TIMEOUT_MS stops. */
  idleThreads?: number;
  limits: BulkLimits;
  /** How long a task may run in a thread before the thread is stopped and the task answered 503. */
  timeoutMillis: number;
  /** Told of every bulk a thread decided. */
  observe?: BulkObserver;
  /** How many of a bulk's last denials to have sent back for the live view, asked at each bulk (default: none). */
  denialsWanted?: () => number;
  /** How many of a bulk's checks to have sent back, as decided, for the observer's `kept` (default: none). */
  checksWanted?: () => number;
  /** The file the threads run: the pool's worker (tests give one that wraps it, to crash or hang it). */
  workerFile?: URL;
  /** How attribute schemas are enforced: workers compile those of the policies they are sent, and hand a bulk that breaks them under `reject` to the front. */
  schemaEnforcement?: SchemaEnforcement;
  /** The share of a bulk's checks the shadow policies decide, while there are some (default: all). */
  shadowSamplePercent?: number;
  /** Whether the threads settle their memory when they go quiet, as the front does (default: no). */
  settleMemory?: boolean;
}

/** A worker did not finish a bulk in time: answered 503, the client may retry. */
export class WorkerTimeoutError extends Error {}

/**
 * Told of every bulk a worker decided: its body (UTF-8), its decisions as JSON, what decided them,
 * what its items broke of the attribute schemas, at which revision, in how long.
 */
export type BulkObserver = (bulk: {
  body: Buffer;
  json: string;
  tally: BulkTally;
  violations: ItemViolations;
  revision: number;
  elapsedMs: number;
  /** The request the bulk answered, for the decision log. */
  origin: RequestOrigin | undefined;
  /** Its first checks as decided, as many as `checksWanted` asked for. */
  kept: DecisionRequest[];
  /** What the shadow policies said of its sampled checks, while there are some. */
  shadowed?: ShadowedBulk;
  /** What decided each check, when its items are traced. */
  traced?: DeciderAttributes[];
}) => void;

/**
 * Bulks a worker may hold at once: it starts the next as soon as one is done, without waiting for
 * the front's event loop to hand it over.
 */
const TASKS_QUEUED_PER_WORKER = 4;

/**
 * Worker threads that take big bulk checks, and plans, off the front thread: JSON parsing,
 * validation and evaluation all happen in a worker, so bulk throughput is not bounded by one core,
 * and work as long as a plan never holds up the checks the front answers. A task is decided at the
 * snapshot revision the front held when it queued it, or a later one. The threads (and Piscina)
 * start with the first task given to the pool: a process that never gets one never pays for them.
 */
export class BulkPool {
  /** Undefined until the first bulk. */
  private starting: Promise<Piscina<PoolTask, PoolOutcome>> | undefined;
  private pool: Piscina<PoolTask, PoolOutcome> | undefined;
  private readonly runningTasks: RunningTasks;
  /** When the watchdog first saw each task running in a worker (performance.now()), by task id. */
  private readonly runningSince = new Map<number, number>();
  /** Tasks whose worker was terminated for taking too long. */
  private readonly timedOut = new Set<number>();
  private watchdog: NodeJS.Timeout | undefined;
  private lastTaskId = 0;
  private closed = false;
  /** What tasks carry to workers that hold other policies than theirs: one copy of each, however many tasks carry it. */
  readonly copies = new LatestCopies(['policies', 'shadows', 'changes'] as const);

  private readonly workers: number;
  private readonly idleThreads: number;
  private readonly limits: BulkLimits;
  private readonly timeoutMillis: number;
  private readonly observe: BulkObserver;
  private readonly denialsWanted: () => number;
  private readonly checksWanted: () => number;
  private readonly workerFile: URL;
  private readonly schemaEnforcement: SchemaEnforcement;
  private readonly shadowSamplePercent: number;
  private readonly settleMemory: boolean;
  private settledListener: (settled: Settled) => void = () => {};

  constructor(
    private readonly snapshots: PolicySnapshots,
    options: BulkPoolOptions,
  ) {
    this.workers = options.workers;
    this.idleThreads = options.idleThreads ?? options.workers;
    this.limits = options.limits;
    this.timeoutMillis = options.timeoutMillis;
    this.observe = options.observe ?? (() => {});
    this.denialsWanted = options.denialsWanted ?? (() => 0);
    this.checksWanted = options.checksWanted ?? (() => 0);
    this.workerFile = options.workerFile ?? POOL_WORKER_FILE;
    this.schemaEnforcement = options.schemaEnforcement ?? 'off';
    this.shadowSamplePercent = options.shadowSamplePercent ?? 100;
    this.settleMemory = options.settleMemory ?? false;
    this.runningTasks = RunningTasks.create(this.workers);
  }

  /** Told each time a thread settled its memory. */
  onSettled(listener: (settled: Settled) => void): void {
    this.settledListener = listener;
  }

  /** The pool, started on first use. */
  private started(): Promise<Piscina<PoolTask, PoolOutcome>> {
    this.starting ??= import('piscina').then(({ Piscina }) => {
      const workerData: WorkerStart = {
        runningTasks: this.runningTasks.buffer,
        schemaEnforcement: this.schemaEnforcement,
        shadowSamplePercent: this.shadowSamplePercent,
        settleMemory: this.settleMemory,
      };
      const pool = new Piscina<PoolTask, PoolOutcome>({
        filename: this.workerFile.href,
        minThreads: this.idleThreads,
        maxThreads: this.workers,
        idleTimeout: this.idleThreads < this.workers ? IDLE_THREAD_TIMEOUT_MS : Infinity,
        concurrentTasksPerWorker: TASKS_QUEUED_PER_WORKER,
        // A thread waiting for work runs its event loop ('sync' would block it), so that it can settle its memory when quiet.
        atomics: this.settleMemory ? 'async' : 'sync',
        workerData,
      });
      pool.on('workerDestroy', (worker: { id: number }) => this.runningTasks.release(worker.id));
      pool.on('message', (message: unknown) => {
        if (isWorkerSettled(message)) this.settledListener(message.settled);
      });
      this.watchdog = setInterval(this.stopOverdueWorkers, Math.min(1000, Math.max(10, this.timeoutMillis / 10))).unref();
      this.pool = pool;
      return pool;
    });
    return this.starting;
  }

  /**
   * The decisions as JSON text (each with its explanation when `explain`), or undefined when the front must decide (an item names a
   * registered entity or breaks the attribute schemas under `reject`, or the worker died: Piscina replaces it and the caller decides inline,
   * never a guess). Throws the client errors the body deserves, and WorkerTimeoutError when a
   * worker ran the bulk for longer than the timeout (the worker is terminated and replaced; bulks
   * queued on it are decided on the front). `timed` is told how long the worker took, in ms of its wall time, when it decided the bulk;
   * `origin` names the request, for the decision log.
   */
  async decide(body: Buffer | string, explain = false, timed?: (workerMs: number) => void, origin?: RequestOrigin): Promise<string | undefined> {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    // Each run moves a copy of the bytes to the worker: no structured clone of a decoded string,
    // and the front keeps the body, to decide it itself when the worker cannot.
    const outcome = await this.atRevision('A bulk check', (pool, at) => {
      const moved = new Uint8Array(bytes).buffer;
      const traceItems = origin?.trace?.tracesItems === true;
      return pool.run({ kind: 'checks', ...at, limits: this.limits, explain, body: moved, keepChecks: this.checksWanted(), keepDenials: this.denialsWanted(), traceItems }, { transferList: [moved] });
    });
    if (outcome?.kind === 'decided') {
      this.observe({ ...outcome, body: bytes, origin });
      timed?.(outcome.elapsedMs);
    }
    return this.answered(outcome);
  }

  /**
   * The answers to `work` as JSON text (one plan's when `single`, else a list's), made in a worker
   * at the front's revision; undefined when the front must make them (the worker died). Throws as
   * decide does: the client errors of plans too long, and WorkerTimeoutError.
   */
  async plans(work: PlanWork[], settings: PlanSettings, single: boolean): Promise<string | undefined> {
    return this.answered(await this.atRevision('A plan', (pool, at) => pool.run({ kind: 'plans', ...at, work, settings, single })));
  }

  /** The JSON a worker made, or undefined; throws the client error it refused with. */
  private answered(outcome: PoolOutcome | undefined): string | undefined {
    switch (outcome?.kind) {
      case 'decided':
      case 'planned':
        return outcome.json;
      case 'refused':
        if (typeof outcome.detail === 'string') throw new ClientError(outcome.statusCode, outcome.detail);
        throw new RequestValidationError(outcome.detail);
      default:
        return undefined;
    }
  }

  /**
   * Runs a task (`send` given its id and revision) in a worker at the revision the front holds now,
   * sending along what a worker holding another needs; undefined when the pool is closed or the
   * worker failed. Throws WorkerTimeoutError (`what` took longer than the timeout) when the
   * watchdog terminated it: doing inline what a worker could not finish in time would stall the front.
   */
  private async atRevision(what: string, send: (pool: Piscina<PoolTask, PoolOutcome>, at: TaskAtRevision) => Promise<PoolOutcome>): Promise<PoolOutcome | undefined> {
    const { current, generation, shadow, shadowVersion } = this.snapshots;
    const wholeSet = () => this.wholeSet(current, generation);
    this.lastTaskId = (this.lastTaskId % 0x7fffffff) + 1;
    const task: TaskAtRevision = { id: this.lastTaskId, revision: current.revision, generation, ...(shadow && { shadow: { version: shadowVersion } }) };
    // A worker that answers stale may lack the shadows' set too: it comes along with what it lacks of the live one.
    const shadowSet = () => shadow && this.shadowSet(shadow, shadowVersion);
    try {
      if (this.closed) return undefined;
      const pool = await this.started();
      let outcome = await send(pool, task);
      if (outcome.kind === 'stale') outcome = await send(pool, { ...task, ...this.catchUpFrom(outcome.holds, task, wholeSet), ...shadowSet() });
      // The changes reached another worker, which holds yet another revision.
      if (outcome.kind === 'stale') outcome = await send(pool, { ...task, ...wholeSet(), ...shadowSet() });
      return outcome;
    } catch {
      if (this.timedOut.has(task.id)) throw new WorkerTimeoutError(`${what} took longer than ${this.timeoutMillis} ms`);
      return undefined;
    } finally {
      this.timedOut.delete(task.id);
    }
  }

  /**
   * What a worker needs to hold `snapshot` (of `generation`) whatever it holds: its policies, and (when they are enforced) the
   * schemas that came with them; read with the snapshot, since the next snapshot may bring others.
   */
  private wholeSet(snapshot: Snapshot, generation: number): Pick<TaskAtRevision, 'whole'> {
    const schemas = this.schemaEnforcement === 'off' ? undefined : this.snapshots.schemas?.document;
    // Known by its revision, not held: a snapshot the front has moved on from is not kept alive by its copy.
    return { whole: this.copies.of('policies', [snapshot.revision, generation, schemas], () => ({ policies: snapshot.policies, positions: snapshot.positions, ...(schemas && { schemas }) }))! };
  }

  /** The shadow policies of `version`, for a worker that may not hold them. */
  private shadowSet(shadow: Snapshot, version: number): Pick<TaskAtRevision, 'shadow'> {
    return { shadow: { version, policies: this.copies.of('shadows', [version], () => shadow.policies)! } };
  }

  /** What a worker holding `holds` needs to decide `task`: the policies written since, when they are kept, else the whole set. */
  private catchUpFrom(holds: Extract<PoolOutcome, { kind: 'stale' }>['holds'], task: Pick<TaskAtRevision, 'revision' | 'generation'>, wholeSet: () => Pick<TaskAtRevision, 'whole'>): Pick<TaskAtRevision, 'changes' | 'whole'> {
    if (holds === undefined || holds.generation !== task.generation) return wholeSet();
    const changes = this.copies.of('changes', [holds.revision, task.revision, task.generation], () => this.snapshots.changesBetween(holds.revision, task.revision, task.generation));
    return changes === undefined ? wholeSet() : { changes: { from: holds.revision, policies: changes } };
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
