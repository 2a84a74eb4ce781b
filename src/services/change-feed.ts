import { systemClock, type Clock, type Timer } from '../clock.js';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import type { Snapshot } from '../engine/compile.js';
import { readsDecisionTime } from '../engine/reads-time.js';
import type { EntityAttributeCache } from '../registry/entity-cache.js';
import { HEARTBEAT_MILLIS, type ChangeLine } from '../schemas/wire.js';


export type ChangeSubscriber = (line: string) => void;

/** The most uris one line names: more changed in one turn of the event loop make `"all"`. */
export const MAX_URIS_PER_LINE = 1000;

/**
 * Publishes what changes this process's decisions to the feed's subscribers: the policy revision it
 * serves and the registered entities it forgot. Entity changes of one turn of the event loop go out
 * as one line (a bulk registration is one line, not thousands).
 */
export class ChangeFeed {
  private readonly subscribers = new Set<ChangeSubscriber>();
  private pendingUris = new Set<string>();
  private allEntities = false;
  private flushScheduled = false;
  private heartbeat: Timer | undefined;
  private readonly stopWatching: () => void;

  constructor(
    private readonly snapshots: PolicySnapshots,
    entities: EntityAttributeCache,
    private readonly clock: Clock = systemClock,
  ) {
    const published = () => this.send(this.revisionLine());
    const invalidated = (uri: string) => this.entityChanged(uri);
    const cleared = () => this.entityChanged(undefined);
    snapshots.on('published', published);
    entities.on('invalidated', invalidated);
    entities.on('cleared', cleared);
    this.stopWatching = () => {
      snapshots.off('published', published);
      entities.off('invalidated', invalidated);
      entities.off('cleared', cleared);
    };
  }

  /** The revision this process decides by now. */
  get revision(): number {
    return this.snapshots.current.revision;
  }

  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** Adds a subscriber, which is sent the revision served now at once; returns what removes it. */
  subscribe(subscriber: ChangeSubscriber): () => void {
    this.subscribers.add(subscriber);
    subscriber(lineOf(this.revisionLine()));
    this.heartbeat ??= this.clock.every(HEARTBEAT_MILLIS, () => this.send({ at: this.clock.now() }));
    return () => {
      this.subscribers.delete(subscriber);
      if (this.subscribers.size === 0) {
        this.heartbeat?.cancel();
        this.heartbeat = undefined;
      }
    };
  }

  close(): void {
    this.stopWatching();
    this.heartbeat?.cancel();
    this.subscribers.clear();
  }

  private revisionLine(): ChangeLine {
    const snapshot = this.snapshots.current;
    let timeDependent = readsTime.get(snapshot);
    if (timeDependent === undefined) readsTime.set(snapshot, (timeDependent = readsDecisionTime(snapshot.policies)));
    return { at: this.clock.now(), revision: snapshot.revision, time_dependent: timeDependent };
  }

  /** A registered entity changed (undefined: all of them may have). */
  private entityChanged(uri: string | undefined): void {
    if (this.subscribers.size === 0) return;
    if (uri === undefined || this.pendingUris.size >= MAX_URIS_PER_LINE) {
      this.allEntities = true;
      this.pendingUris.clear();
    } else if (!this.allEntities) this.pendingUris.add(uri);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      const entities = this.allEntities ? 'all' : [...this.pendingUris];
      this.allEntities = false;
      this.pendingUris = new Set();
      this.send({ at: this.clock.now(), entities });
    });
  }

  private send(line: ChangeLine): void {
    if (this.subscribers.size === 0) return;
    const text = lineOf(line);
    for (const subscriber of this.subscribers) subscriber(text);
  }
}

const lineOf = (line: ChangeLine) => `${JSON.stringify(line)}\n`;

/** Whether each snapshot's policies read the decision's time, found once per snapshot. */
const readsTime = new WeakMap<Snapshot, boolean>();
