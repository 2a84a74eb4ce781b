import { EventEmitter } from 'node:events';
import { compile, derive, type ChangedPolicy, type Snapshot } from '../engine/index.js';
import type { FeedPosition, LoadedPolicies, StoredSchemas } from '../store/store.js';
import type { PolicySource } from './policy-source.js';
import type { Policy } from '../schemas/policy.js';

/** After a failed rebuild the next attempt waits this long, doubling after each failure up to `max`. */
const RETRY_MILLIS = { first: 100, max: 5000 };

/** Rebuilds have been failing: since when (epoch ms), how many attempts, and the last error. */
export interface RebuildFailure {
  since: number;
  failures: number;
  error: Error;
}

interface SnapshotEvents {
  /** A new snapshot is current. */
  published: [Snapshot];
  /** A rebuild could not read the store; another attempt is scheduled. */
  rebuildFailed: [Error, RebuildFailure];
  /** A rebuild succeeded after failures. */
  recovered: [RebuildFailure];
  closed: [];
}

/**
 * A snapshot, the epoch of the store history it was built from (see LoadedPolicies.epoch), and the
 * changes it was derived by, if it was; else the schema document loaded with its policies.
 */
interface Built {
  snapshot: Snapshot;
  epoch: number | undefined;
  changes?: readonly ChangedPolicy[];
  schemas?: StoredSchemas;
  /** The shadow policies of the whole set, when it was loaded whole (a derived one says them in `shadowChanges`). */
  shadows?: readonly Policy[];
  /** The shadow policies written since the snapshot derived from: each now, or null when it is no shadow any more. */
  shadowChanges?: readonly ChangedPolicy[];
}

/** One snapshot derived from the one before: the revisions it went from and to, and the policies the store said changed. */
interface Step {
  from: number;
  to: number;
  changes: readonly ChangedPolicy[];
}

/** Steps kept for workers that are a few revisions behind (see changesBetween). */
const STEPS_KEPT = 16;

/** Whether a policy is a shadow: decided beside the live policies, never in their place (see shadowSet). */
export const isShadow = (policy: Policy) => policy.shadow !== undefined;

/** The snapshot of the live policies of a whole set, and its shadows apart. */
function built({ policies, revision, positions, epoch, schemas }: LoadedPolicies): Built {
  const live = policies.flatMap((policy, index) => (isShadow(policy) ? [] : [index]));
  const snapshot = compile(
    live.map((index) => policies[index]!),
    revision,
    positions && live.map((index) => positions[index]!),
  );
  return { snapshot, epoch, schemas, shadows: policies.filter(isShadow) };
}

/**
 * The changes of the live set (a policy become a shadow leaves it) and of the shadows (a shadow made
 * live leaves them), from the policies the store said changed.
 */
function splitChanges(changes: readonly ChangedPolicy[]): { live: ChangedPolicy[]; shadows: ChangedPolicy[] } {
  return {
    live: changes.map((change) => (change.now !== null && isShadow(change.now.policy) ? { name: change.name, now: null } : change)),
    shadows: changes.map((change) => (change.now !== null && isShadow(change.now.policy) ? change : { name: change.name, now: null })),
  };
}

/**
 * The set the shadows are decided by: the live policies, each shadow in place of the live policy it
 * names (or after them all, when it names none, or one not in force).
 */
export function shadowSet(live: readonly Policy[], shadows: readonly Policy[]): Policy[] {
  const set = new Map(live.map((policy) => [policy.name, policy]));
  for (const shadow of shadows) {
    const replaced = typeof shadow.shadow === 'string' && set.has(shadow.shadow) ? shadow.shadow : undefined;
    if (replaced === undefined) set.set(shadow.name, shadow);
    else set.set(replaced, shadow);
  }
  return [...set.values()];
}

/**
 * Holds the snapshot that checks are evaluated against and rebuilds it from its policy source (the
 * store, or a directory of policy files) after each policy change: from the policies the change
 * wrote when the source can tell them (see catchUp), else from the whole set. Rebuilds run one at a time and a
 * snapshot never replaces a newer one, unless a reload is forced (the store's history was reset). A
 * rebuild that fails does not stop the ones after it, and is retried with back-off until one
 * succeeds; `failing` says since when.
 */
export class PolicySnapshots extends EventEmitter<SnapshotEvents> {
  /** When `current` was built (epoch milliseconds). */
  builtAt = Date.now();
  /** Set while rebuilds fail; undefined once one succeeds. */
  failing: RebuildFailure | undefined;
  /** Rebuilds queue behind this; it never rejects, so one failure cannot block the rest. */
  private queue: Promise<unknown> = Promise.resolve();
  private forcedReloadsAsked = 0;
  private forcedReloadsDone = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryMillis = RETRY_MILLIS.first;
  private closed = false;
  /**
   * Counts the loads of the whole set: snapshots of one generation descend from one load by their
   * changes, so a revision names one set of policies only within a generation (a forced reload may
   * bring a store's history back to a revision it had reached before, with other policies).
   */
  generation = 0;
  /** The snapshots derived in a row in this generation, oldest first (at most STEPS_KEPT). */
  private readonly steps: Step[] = [];
  /** The shadow policies by name (see shadowSet). */
  private readonly shadowPolicies = new Map<string, Policy>();
  /** The snapshot the shadows are decided by, the revision's live policies with the shadows in; undefined while there are none. */
  shadow: Snapshot | undefined;
  /** Counts the shadow snapshots made: a worker holding this version of it holds `shadow`. */
  shadowVersion = 0;

  private constructor(
    private readonly source: PolicySource,
    public current: Snapshot,
    /**
     * The attribute schema document loaded with `current`'s policies. A schema write is a policy
     * revision that the source only gives with the whole set, so every generation has one document.
     */
    public schemas: StoredSchemas | undefined,
    /** The store's epoch when `current`'s policies were last loaded whole (see LoadedPolicies.epoch). */
    private epoch: number | undefined,
    /** Where the store's change feed stood at the first load: following changes from here misses none. */
    readonly loadedAt: FeedPosition,
  ) {
    super();
    this.setMaxListeners(0);
  }

  /** The policies `current` was compiled from, for workers that compile their own copy. */
  get policies(): readonly Policy[] {
    return this.current.policies;
  }

  static async load(source: PolicySource): Promise<PolicySnapshots> {
    const loaded = await source.loadPolicies();
    const first = built(loaded);
    const snapshots = new PolicySnapshots(source, first.snapshot, first.schemas, first.epoch, loaded.feedPosition);
    snapshots.followShadows(first);
    return snapshots;
  }

  /**
   * Resolves once the current snapshot includes every policy write that had completed when it was
   * called; rejects when the store could not be read (a retry is then scheduled). `force` reloads
   * even if the revision has not moved, and lets it move back (the store was dropped and refilled).
   */
  refresh(options: { force?: boolean } = {}): Promise<Snapshot> {
    if (options.force) this.forcedReloadsAsked++;
    const rebuilt = this.queue.then(() => this.rebuild());
    this.queue = rebuilt.catch(() => undefined);
    return rebuilt;
  }

  /**
   * Resolves true as soon as the current snapshot has reached `revision` (at once when it has),
   * false after `timeoutMs` or when the snapshots close. It waits on rebuilds, never on the store.
   */
  reached(revision: number, timeoutMs: number): Promise<boolean> {
    if (this.current.revision >= revision) return Promise.resolve(true);
    if (this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const finish = (reached: boolean) => {
        clearTimeout(timer);
        this.off('published', onPublished);
        this.off('closed', onClosed);
        resolve(reached);
      };
      const onPublished = (snapshot: Snapshot) => {
        if (snapshot.revision >= revision) finish(true);
      };
      const onClosed = () => finish(false);
      const timer = setTimeout(() => finish(false), timeoutMs);
      this.on('published', onPublished);
      this.on('closed', onClosed);
    });
  }

  /** Stops retrying and ends every wait (see reached); the current snapshot stays. */
  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.emit('closed');
  }

  private async rebuild(): Promise<Snapshot> {
    const forcing = this.forcedReloadsAsked;
    const force = forcing > this.forcedReloadsDone;
    try {
      if (force) this.publish(await this.reload());
      else if ((await this.source.policyRevision()) > this.current.revision) {
        const next = await this.catchUp();
        if (next.snapshot.revision > this.current.revision) this.publish(next);
      }
      this.forcedReloadsDone = forcing;
      this.succeeded();
      return this.current;
    } catch (error) {
      this.failed(error as Error);
      throw error;
    }
  }

  /**
   * The snapshot of the source's revision, derived from the current one and the policies written
   * since when the source can tell them and they can be placed (see derive); else from the whole set.
   */
  private async catchUp(): Promise<Built> {
    const loaded = await this.source.loadPolicies(this.current.revision);
    if (!('changes' in loaded)) return built(loaded);
    if (loaded.epoch !== this.epoch) return this.reload();
    if (loaded.revision <= this.current.revision) return { snapshot: this.current, epoch: this.epoch };
    const { live, shadows } = splitChanges(loaded.changes);
    const derived = derive(this.current, live, loaded.revision);
    return derived === undefined ? this.reload() : { snapshot: derived, epoch: this.epoch, changes: live, shadowChanges: shadows };
  }

  private async reload(): Promise<Built> {
    return built(await this.source.loadPolicies());
  }

  /**
   * The policies written from revision `from` up to `to` of `generation`, each as it stands at `to`,
   * when every snapshot between was derived in this generation and is still kept: what a worker
   * holding `from` needs to derive `to` itself (see workers/evaluate.ts). Undefined otherwise: it
   * needs the whole set.
   */
  changesBetween(from: number, to: number, generation: number): ChangedPolicy[] | undefined {
    if (generation !== this.generation) return undefined;
    const first = this.steps.findIndex((step) => step.from === from);
    if (first === -1) return undefined;
    const byName = new Map<string, ChangedPolicy>();
    for (const step of this.steps.slice(first)) {
      if (step.to > to) break;
      for (const change of step.changes) byName.set(change.name, change);
      if (step.to === to) return [...byName.values()];
    }
    return undefined;
  }

  private publish(next: Built): void {
    const { snapshot, epoch, changes, schemas } = next;
    this.followShadows(next);
    if (changes === undefined) {
      this.generation++;
      this.steps.length = 0;
      this.schemas = schemas;
    } else if (this.steps.push({ from: this.current.revision, to: snapshot.revision, changes }) > STEPS_KEPT) this.steps.shift();
    this.current = snapshot;
    this.epoch = epoch;
    this.builtAt = Date.now();
    this.emit('published', snapshot);
  }

  /** Takes the shadows a built snapshot brings (all of them, or those written since), and compiles their set with its live policies. */
  private followShadows({ snapshot, shadows, shadowChanges }: Built): void {
    if (shadows !== undefined) {
      this.shadowPolicies.clear();
      for (const policy of shadows) this.shadowPolicies.set(policy.name, policy);
    }
    for (const { name, now } of shadowChanges ?? []) {
      if (now === null) this.shadowPolicies.delete(name);
      else this.shadowPolicies.set(name, now.policy);
    }
    this.shadow = this.shadowPolicies.size === 0 ? undefined : compile(shadowSet(snapshot.policies, [...this.shadowPolicies.values()]), snapshot.revision);
    this.shadowVersion++;
  }

  private succeeded(): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.retryMillis = RETRY_MILLIS.first;
    const failure = this.failing;
    this.failing = undefined;
    if (failure !== undefined) this.emit('recovered', failure);
  }

  private failed(error: Error): void {
    this.failing = { since: this.failing?.since ?? Date.now(), failures: (this.failing?.failures ?? 0) + 1, error };
    this.emit('rebuildFailed', error, this.failing);
    if (this.closed || this.retryTimer !== undefined) return;
    // A retry never keeps the process alive on its own.
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.refresh().catch(() => undefined);
    }, this.retryMillis).unref();
    this.retryMillis = Math.min(this.retryMillis * 2, RETRY_MILLIS.max);
  }
}
