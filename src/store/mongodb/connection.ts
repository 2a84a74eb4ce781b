import type { Document, MongoClientOptions } from 'mongodb';

// How a Verdict process connects to MongoDB: the client's options, whatever the connection string
// says, and which servers it refuses.

/** How long MongoDB operations may take, in ms (see clientOptions). */
export interface MongoTimeouts {
  /** A write (or a snapshot read) starts no new attempt, and sends no commit again, after this. */
  retry: number;
  /** The longest MongoDB waits for a majority to acknowledge a write (its `wtimeout`). */
  majority: number;
  /** The longest the driver waits for one answer, or for a free connection: past `majority`, so that MongoDB's own answer comes first. */
  answer: number;
}

export const MONGODB_TIMEOUTS: MongoTimeouts = { retry: 10_000, majority: 5_000, answer: 15_000 };

/**
 * How every Verdict connects, whatever the URI says: majority writes and reads, reads from the
 * primary (a secondary may not have a write yet that this process has acknowledged), and every
 * stage of an operation bounded (`timeoutMS`, which would bound an operation as a whole, has no
 * effect from driver 7.8). The read concern is given as `readConcernLevel`, the key a URI uses, so
 * that this one wins over the URI's.
 */
export function clientOptions(timeouts: MongoTimeouts, serverSelectionTimeoutMS: number, uri: string): MongoClientOptions {
  // The pool's size is the operator's to choose in the URI (see SIDECAR_POOL).
  const pool = Object.fromEntries(Object.entries(SIDECAR_POOL).filter(([option]) => !new RegExp(`[?&]${option}=`, 'i').test(uri)));
  return {
    writeConcern: { w: 'majority', wtimeoutMS: timeouts.majority },
    readConcernLevel: 'majority',
    readPreference: 'primary',
    serverSelectionTimeoutMS,
    socketTimeoutMS: timeouts.answer,
    waitQueueTimeoutMS: timeouts.answer,
    ...pool,
  };
}

/**
 * Connections to each member for one process, unless the URI says otherwise: a sidecar's checks read
 * from its entity cache and its writes are rare, so a few connections serve it, and a fleet of
 * hundreds of pods must not hold the driver's default of 100 each (docs/deploying.md gives the
 * arithmetic). An idle connection is closed after a minute.
 */
export const SIDECAR_POOL = { maxPoolSize: 10, maxIdleTimeMS: 60_000 } as const;

/**
 * Why a server that answered `hello` with this cannot hold the store, or undefined when it can:
 * transactions and change streams need a replica set member or a mongos, and a connection made
 * directly to one member (`directConnection`) must reach the primary, since it reaches no other.
 * (Servers older than MongoDB 4.4, which lack the rest of what is used, are refused by the driver itself.)
 */
export function topologyRefusal(hello: Document, directConnection = false): string | undefined {
  if (hello.msg === 'isdbgrid') return undefined;
  if (typeof hello.setName !== 'string') {
    return 'it is a standalone server, and Verdict needs a replica set (transactions and change streams): start mongod with --replSet and initiate it, or connect to a replica set or mongos';
  }
  if (!directConnection || hello.isWritablePrimary === true) return undefined;
  const member = hello.secondary === true ? 'a secondary' : hello.arbiterOnly === true ? 'an arbiter' : 'a member';
  return (
    `the URI connects directly (directConnection=true) to ${String(hello.me ?? 'its host')}, ${member} of replica set ${hello.setName}, not its primary, ` +
    `so every write would fail: name the replica set instead (replicaSet=${hello.setName}, without directConnection) or connect directly to the primary`
  );
}

