import type { Decision } from './wire.js';

export interface CacheLimits {
  /** Most decisions kept (default 10,000). */
  maxEntries: number;
  /** Most bytes kept, counted as the characters of each key and reason (default 8 MiB). */
  maxBytes: number;
}

interface Entry {
  decision: Decision;
  uris: readonly string[];
  bytes: number;
  /** Read since it last came up for eviction: it gets a second chance. */
  used: boolean;
}

/**
 * Decisions by the check they answer, while nothing that could change them has changed: kept only
 * at the policy revision the change feed names, indexed by the registered entities (uris) each one
 * read, so that a change drops exactly those. Entries go oldest first, but one read since it last
 * came up gets a second chance (CLOCK): a hit only marks its entry, where moving it would cost two
 * map writes on the hottest path.
 */
export class DecisionCache {
  private readonly entries = new Map<string, Entry>();
  private readonly byUri = new Map<string, Set<string>>();
  private bytes = 0;
  /** Advances on every drop: an answer asked for before one may hold what was dropped, and is not kept. */
  epoch = 0;

  constructor(private readonly limits: CacheLimits) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): Decision | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    entry.used = true;
    return entry.decision;
  }

  /** Keeps `decision` for `key`, unless something was dropped since `epoch` (when it was asked for) or it is larger than the cache. */
  set(key: string, decision: Decision, uris: readonly string[], epoch: number): void {
    if (epoch !== this.epoch) return;
    const bytes = key.length + decision.reason.length + 64;
    if (bytes > this.limits.maxBytes) return;
    this.remove(key);
    this.entries.set(key, { decision, uris, bytes, used: false });
    this.bytes += bytes;
    for (const uri of uris) {
      let keys = this.byUri.get(uri);
      if (keys === undefined) this.byUri.set(uri, (keys = new Set()));
      keys.add(key);
    }
    while (this.entries.size > this.limits.maxEntries || this.bytes > this.limits.maxBytes) this.evictOne();
  }

  /** Removes the oldest entry not read since it last came up; those read go to the back, unmarked. */
  private evictOne(): void {
    for (const [key, entry] of this.entries) {
      if (!entry.used) return this.remove(key);
      entry.used = false;
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
  }

  /** Drops the decisions that read any of `uris`. */
  dropUris(uris: readonly string[]): void {
    this.epoch++;
    for (const uri of uris) for (const key of this.byUri.get(uri) ?? []) this.remove(key);
  }

  clear(): void {
    this.epoch++;
    this.entries.clear();
    this.byUri.clear();
    this.bytes = 0;
  }

  private remove(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
    for (const uri of entry.uris) {
      const keys = this.byUri.get(uri);
      keys?.delete(key);
      if (keys?.size === 0) this.byUri.delete(uri);
    }
  }
}
