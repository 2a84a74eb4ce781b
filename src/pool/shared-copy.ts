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
