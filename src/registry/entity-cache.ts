import { EventEmitter } from 'node:events';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { LRUCache } from 'lru-cache';
import type { EntityReads } from '../store/store.js';
import { attributeMapOf } from './entities.js';
import type { RegisteredAttributes } from './resolve.js';
import { attributesSizeWithin } from '../engine/json-size.js';

/** What an entry costs beside its uri and attributes (the map, the cache's slot), counted in its size. */
const ENTRY_OVERHEAD_BYTES = 64;

/** What an unregistered uri contributes: nothing. Cached like any entry so misses stay off the store too. */
const UNREGISTERED: ReadonlyMap<string, unknown> = new Map();

/**
 * Registered attributes by uri, kept in the front process so that checks naming a uri do not
 * touch the store. Bounded (least recently used entries go first) for registries larger than
 * memory; a miss falls back to the store. Every registry write invalidates its uri. Emits
 * `invalidated` (the uri) and `cleared` for the decision change feed (see ChangeFeed).
 */
export class EntityAttributeCache extends EventEmitter<{ invalidated: [uri: string]; cleared: [] }> {
  /**
   * Made by the first entry stored: LRUCache allocates its slots for every entry up front, which
   * costs a start whose registry is empty about 9 ms (at 100k entries, the default).
   */
  private entries: LRUCache<string, ReadonlyMap<string, unknown>> | undefined;
  /** Advances on every invalidation, so a store read that raced with a write is not cached. */
  private generation = 0;
  private closed = false;

  constructor(
    private readonly store: EntityReads,
    private readonly maxEntries: number,
    /** The most its entries may hold together, in bytes by entrySize: an entity larger than that is read from the store each time. */
    readonly maxBytes: number,
  ) {
    super();
    this.setMaxListeners(0);
  }

  /** Synchronous on a hit; a promise only when the store must be read. */
  readonly lookup: RegisteredAttributes = (uri) => {
    const cached = this.entries?.get(uri);
    if (cached !== undefined) return cached === UNREGISTERED ? undefined : cached;
    return this.load(uri);
  };

  /**
   * Loads registered entities, in uri order, until the cache is full, so that checks find them in
   * memory. Run once at start, beside the checks: it yields between pages, and a check that comes
   * first reads the store as any miss does. Each page is an index range after the last uri of the
   * one before, never a skip past the rows already read. A page read while an entry was invalidated
   * is left out, since it may hold what the write replaced.
   */
  async warm(pageSize = 1000): Promise<void> {
    const capacity = this.maxEntries;
    let after = '';
    for (let loaded = 0; loaded < capacity && !this.closed; loaded += pageSize) {
      const generation = this.generation;
      const page = await this.store.listEntitiesAfter(after, Math.min(pageSize, capacity - loaded));
      if (this.closed) return;
      if (generation === this.generation) {
        for (const entity of page) {
          if (this.entries?.has(entity.uri) !== true) this.remember(entity.uri, attributeMapOf(entity));
        }
      }
      if (page.length < pageSize) return;
      after = page.at(-1)!.uri;
      await nextTurn();
    }
  }

  /** Stops a warm-up under way (before the store closes). */
  close(): void {
    this.closed = true;
  }

  invalidate(uri: string): void {
    this.generation++;
    this.entries?.delete(uri);
    this.emit('invalidated', uri);
  }

  /** Forgets everything (the change feed lost track); entries are read again from the store. */
  clear(): void {
    this.generation++;
    this.entries?.clear();
    this.emit('cleared');
  }

  private async load(uri: string): Promise<ReadonlyMap<string, unknown> | undefined> {
    const generation = this.generation;
    const entity = await this.store.getEntity(uri);
    const attributes = entity === undefined ? UNREGISTERED : attributeMapOf(entity);
    if (generation === this.generation) this.remember(uri, attributes);
    return attributes === UNREGISTERED ? undefined : attributes;
  }

  private remember(uri: string, attributes: ReadonlyMap<string, unknown>): void {
    this.entries ??= new LRUCache({ max: this.maxEntries, maxSize: this.maxBytes, sizeCalculation: (value, key) => this.entrySize(key, value) });
    this.entries.set(uri, attributes);
  }

  /** About what an entry holds, in bytes of JSON; past the whole bound, one more than it (never kept). The walk stops there. */
  private entrySize(uri: string, attributes: ReadonlyMap<string, unknown>): number {
    const size = ENTRY_OVERHEAD_BYTES + uri.length + attributesSizeWithin(attributes, { visits: Infinity, bytes: this.maxBytes });
    return Number.isFinite(size) && size <= this.maxBytes ? size : this.maxBytes + 1;
  }

  /** Entries held. */
  get size(): number {
    return this.entries?.size ?? 0;
  }

  /** What the entries hold, in bytes by entrySize. */
  get heldBytes(): number {
    return this.entries?.calculatedSize ?? 0;
  }
}
