import { deserialize, serialize } from 'node:v8';

/**
 * A value serialized once into a SharedArrayBuffer. Sending one to a worker copies nothing (the
 * buffer is shared, not cloned), so a value that many tasks carry at once (a policy set, to workers
 * that hold none) exists once in memory, and a worker decodes it only if it needs it.
 */
export type SharedCopy<T> = SharedArrayBuffer & { readonly copyOf?: T };

export function sharedCopy<T>(value: T): SharedCopy<T> {
  const bytes = serialize(value);
  const shared = new SharedArrayBuffer(bytes.length);
  new Uint8Array(shared).set(bytes);
  return shared;
}

export function readSharedCopy<T>(shared: SharedCopy<T>): T {
  return deserialize(Buffer.from(shared)) as T;
}

/**
 * The latest shared copy of each kind of value sent to workers, made again only when what it is made
 * from changes (`from`, compared item by item), and counted by kind.
 */
export class LatestCopies<Kind extends string> {
  private readonly latest = new Map<Kind, { from: readonly unknown[]; copy: SharedCopy<unknown> }>();
  private readonly made = new Map<Kind, number>();

  constructor(readonly kinds: readonly Kind[]) {
    for (const kind of kinds) this.made.set(kind, 0);
  }

  /** The copy of what `make` gives from `from`: the one made last, while `from` is the same; undefined (nothing kept) when `make` gives nothing. */
  of<T>(kind: Kind, from: readonly unknown[], make: () => T | undefined): SharedCopy<T> | undefined {
    const latest = this.latest.get(kind);
    if (latest !== undefined && latest.from.length === from.length && latest.from.every((item, index) => item === from[index])) return latest.copy as SharedCopy<T>;
    const value = make();
    if (value === undefined) return undefined;
    const copy = sharedCopy(value);
    this.latest.set(kind, { from, copy });
    this.made.set(kind, this.made.get(kind)! + 1);
    return copy;
  }

  /** How many copies of `kind` were made. */
  madeOf(kind: Kind): number {
    return this.made.get(kind)!;
  }

  /** What the copies kept hold, in bytes. */
  get bytes(): number {
    let bytes = 0;
    for (const { copy } of this.latest.values()) bytes += copy.byteLength;
    return bytes;
  }
}
