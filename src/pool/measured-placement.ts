import { performance, type EventLoopUtilization } from 'node:perf_hooks';

/** Where a bulk is decided: on the front thread, or by a worker of the pool. */
export type BulkPath = 'inline' | 'pool';

/**
 * What each path has been measured to cost, per byte of bulk body: each the median of the last
 * windows that measured it; a path not yet measured is left out.
 */
export interface PathCosts {
  /** The front thread's busy time per byte while it decides bulks itself (reading the requests and answering included). */
  inlineFrontMsPerByte?: number;
  /** The front thread's busy time per byte while the pool decides them (the hand-off and the answer included). */
  poolFrontMsPerByte?: number;
  /** A worker's wall time per byte deciding a bulk: longer than the work takes when the worker waits for a core. */
  poolWorkerMsPerByte?: number;
}

/**
 * The path that serves more bulk bytes per second at saturation, from measured costs; undefined
 * while either path is unmeasured. Inline, the front thread is the bound. Pooled, the bound is the
 * slower of the front (handing bulks off and answering them) and the pool, whose `workers` threads
 * each take `poolWorkerMsPerByte`. A worker that shares a core, with the front or with whatever
 * else runs on the machine, takes longer in wall time, and so counts for less.
 */
export function fasterPath(costs: PathCosts, workers: number): BulkPath | undefined {
  const { inlineFrontMsPerByte, poolFrontMsPerByte, poolWorkerMsPerByte } = costs;
  if (inlineFrontMsPerByte === undefined || poolFrontMsPerByte === undefined || poolWorkerMsPerByte === undefined) return undefined;
  const pooledMsPerByte = Math.max(poolFrontMsPerByte, poolWorkerMsPerByte / workers);
  return pooledMsPerByte < inlineFrontMsPerByte ? 'pool' : 'inline';
}

/** How a MeasuredPlacement samples. */
export interface MeasuringOptions {
  /** The pool's threads. */
  workers: number;
  /** How long each window measures, in ms of wall time: all its bulks take one path, and its costs are measured together. */
  windowMillis?: number;
  /** One window in this many takes the path not chosen, so that its costs follow a changing load. */
  trialEvery?: number;
  /** The front thread's event loop utilization (tests pass their own). */
  utilization?: (previous?: EventLoopUtilization) => EventLoopUtilization;
  now?: () => number;
}

/** One window: the path its bulks take, and what it measured of it since `since` (not measuring yet: undefined). */
interface Window {
  path: BulkPath;
  since?: { at: number; utilization: EventLoopUtilization };
  bytes: number;
  workerMs: number;
}

const WINDOW_MILLIS = 200;
const TRIAL_EVERY = 64;
/**
 * A path's costs are the medians of its last this many windows: a window on a machine shared with other
 * work may measure many times the usual (its thread preempted), and one such window must not move the choice.
 */
const WINDOWS_KEPT = 3;

/** The median of a few numbers (of two, their mean). */
const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

const perByte = (ms: number) => `${Number((ms * 1e6).toPrecision(3))} ns/byte`;

/**
 * Chooses, window by window, the path big bulks take under `--evaluation auto` when a core is
 * spare: the one measured faster by fasterPath. Each window's bulks all take one path; when it
 * closes, the front thread's busy time over it (its event loop utilization: whatever else the
 * front did meanwhile weighs on both paths alike) and, pooled, the workers' wall time, each per
 * byte of the bulks it decided, join that path's last windows (see WINDOWS_KEPT). A window measures from when the
 * path runs alone and at its pace: inline once the pooled bulks handed off before are all answered,
 * pooled once the first is answered (the time to fill the pool is no cost at saturation). The first
 * window measured of each path only warms it up. An unmeasured path is tried first, and then one
 * window in `trialEvery`.
 */
export class MeasuredPlacement {
  private readonly workers: number;
  private readonly windowMillis: number;
  private readonly trialEvery: number;
  private readonly utilization: (previous?: EventLoopUtilization) => EventLoopUtilization;
  private readonly now: () => number;
  /** The last windows' costs per byte, WINDOWS_KEPT at most of each path: the front's, and (pooled) a worker's. */
  private readonly samples: Record<BulkPath, { front: number; worker: number }[]> = { inline: [], pool: [] };
  private costs: PathCosts = {};
  /** Windows measured, by path, the first (warming up) included. */
  private readonly measured: Record<BulkPath, number> = { inline: 0, pool: 0 };
  private window: Window;
  /** Pooled bulks handed off and not yet answered. */
  private pooling = 0;

  constructor(options: MeasuringOptions) {
    this.workers = options.workers;
    this.windowMillis = options.windowMillis ?? WINDOW_MILLIS;
    this.trialEvery = options.trialEvery ?? TRIAL_EVERY;
    this.utilization = options.utilization ?? ((previous) => performance.eventLoopUtilization(previous));
    this.now = options.now ?? (() => performance.now());
    this.window = this.open('inline', undefined);
  }

  /** The path for the next bulk: the current window's, or the next's when it is over. */
  path(): BulkPath {
    const { since } = this.window;
    if (since !== undefined && this.now() - since.at >= this.windowMillis) this.window = this.open(this.close(this.window), this.window.path);
    return this.window.path;
  }

  /** A bulk of `bytes` was decided on the front thread. */
  decidedInline(bytes: number): void {
    if (this.window.path === 'inline' && this.window.since !== undefined) this.window.bytes += bytes;
  }

  /** A bulk is handed to the pool: answeredByPool must follow. */
  handedOff(): void {
    this.pooling += 1;
  }

  /** A bulk of `bytes` handed off came back: decided by a worker in `workerMs` of its wall time, or (undefined) not decided there. */
  answeredByPool(bytes: number, workerMs: number | undefined): void {
    this.pooling -= 1;
    const window = this.window;
    if (window.path === 'inline') {
      if (this.pooling === 0) window.since ??= this.measuringFromNow();
    } else if (workerMs !== undefined) {
      if (window.since === undefined) {
        window.since = this.measuringFromNow();
        return;
      }
      window.bytes += bytes;
      window.workerMs += workerMs;
    }
  }

  /** The costs measured so far, and how many windows measured each path. */
  get measures(): { costs: PathCosts; windows: Record<BulkPath, number> } {
    return { costs: { ...this.costs }, windows: { ...this.measured } };
  }

  /** In words, for /ready: the path taken now, and what each costs. */
  describe(): string {
    const { inlineFrontMsPerByte: inline, poolFrontMsPerByte: poolFront, poolWorkerMsPerByte: worker } = this.costs;
    const inlineCosts = inline === undefined ? 'not measured yet' : `${perByte(inline)} on the front`;
    const poolCosts = poolFront === undefined || worker === undefined ? 'not measured yet' : `${perByte(poolFront)} on the front, ${perByte(worker)} in a worker`;
    return (
      `${this.window.path} now; inline: ${inlineCosts} (${this.measured.inline} windows); pool: ${poolCosts} (${this.measured.pool} windows);` +
      ` the other path is tried one window in ${this.trialEvery}`
    );
  }

  /** A window taking `path`, after one that took `previous`: measuring at once unless it must wait for the path to run alone. */
  private open(path: BulkPath, previous: BulkPath | undefined): Window {
    const settled = path === 'inline' ? this.pooling === 0 : previous === 'pool';
    return { path, since: settled ? this.measuringFromNow() : undefined, bytes: 0, workerMs: 0 };
  }

  private measuringFromNow(): Window['since'] {
    return { at: this.now(), utilization: this.utilization() };
  }

  /** Adds the window's costs to its path's (a window that measured nothing is left out); the next window's path. */
  private close(window: Window): BulkPath {
    if (window.since !== undefined && window.bytes > 0) {
      // The first window of each path warms it up (compiling its code): its costs are not those of serving.
      if (this.measured[window.path] > 0) {
        const samples = this.samples[window.path];
        samples.push({ front: this.utilization(window.since.utilization).active / window.bytes, worker: window.workerMs / window.bytes });
        if (samples.length > WINDOWS_KEPT) samples.shift();
        this.costs = this.medians();
      }
      this.measured[window.path] += 1;
    }
    const chosen = fasterPath(this.costs, this.workers);
    if (chosen === undefined) return this.costs.inlineFrontMsPerByte === undefined ? 'inline' : 'pool';
    const windows = this.measured.inline + this.measured.pool;
    return window.path === chosen && windows % this.trialEvery === 0 ? (chosen === 'pool' ? 'inline' : 'pool') : chosen;
  }

  private medians(): PathCosts {
    const { inline, pool } = this.samples;
    return {
      ...(inline.length > 0 && { inlineFrontMsPerByte: median(inline.map(({ front }) => front)) }),
      ...(pool.length > 0 && { poolFrontMsPerByte: median(pool.map(({ front }) => front)), poolWorkerMsPerByte: median(pool.map(({ worker }) => worker)) }),
    };
  }
}
