import { randomUUID } from 'node:crypto';
import { startMemoryMongo } from '../../src/store/mongodb/memory.js';

export interface ReachableMongo {
  uri: string;
  /** A database name no other test uses. */
  freshDatabase(): string;
  dropDatabase(name: string): Promise<void>;
  stop(): Promise<unknown>;
}

/**
 * Why mongodb-memory-server had no mongod to start, once it failed: both kinds run the same binary,
 * a download that failed does not succeed a moment later, and each try costs seconds (seven here,
 * where DNS fails), so the other tests of the process skip at once.
 */
let noMemoryMongo: string | undefined;

async function memoryMongo(kind: 'replica set' | 'standalone'): Promise<{ uri: string; stop(): Promise<unknown> } | { failed: string }> {
  if (noMemoryMongo !== undefined) return { failed: noMemoryMongo };
  try {
    return await startMemoryMongo(kind);
  } catch (error) {
    noMemoryMongo = (error as Error).message;
    return { failed: noMemoryMongo };
  }
}

/**
 * A MongoDB replica set to test against: MONGODB_URI when set, else a throw-away one from
 * mongodb-memory-server (which runs MONGOMS_SYSTEM_BINARY when set, else downloads mongod where
 * the internet is reachable); otherwise the reason there is none, for the test to print as it skips.
 */
export async function reachableMongo(): Promise<ReachableMongo | { skipped: string }> {
  let uri = process.env.MONGODB_URI;
  let stop: () => Promise<unknown> = async () => undefined;
  if (!uri) {
    const started = await memoryMongo('replica set');
    if ('failed' in started) return { skipped: `no MongoDB: MONGODB_URI is not set, and mongodb-memory-server ${started.failed}` };
    ({ uri, stop } = started);
  }
  const connection = uri;
  return {
    uri: connection,
    freshDatabase: () => `verdict-test-${randomUUID().slice(0, 8)}`,
    dropDatabase: async (name) => {
      const { MongoClient } = await import('mongodb');
      const client = await MongoClient.connect(connection);
      await client.db(name).dropDatabase();
      await client.close();
    },
    stop,
  };
}

/**
 * A standalone mongod (not a replica set member), to see it refused: MONGODB_STANDALONE_URI when
 * set, else one from mongodb-memory-server; otherwise why there is none.
 */
export async function reachableStandalone(): Promise<{ uri: string; stop(): Promise<unknown> } | { skipped: string }> {
  const uri = process.env.MONGODB_STANDALONE_URI;
  if (uri) return { uri, stop: async () => undefined };
  const started = await memoryMongo('standalone');
  return 'failed' in started ? { skipped: `no standalone mongod: MONGODB_STANDALONE_URI is not set, and mongodb-memory-server ${started.failed}` } : started;
}

/** The first host of a connection string, and the string pointed at `port` on loopback instead, connecting to that one server only. */
export function throughLoopbackPort(uri: string, port: number): { target: { host: string; port: number }; uri: string } {
  const match = /^(mongodb:\/\/(?:[^@/]*@)?)([^/?]+)(\/[^?]*)?(\?.*)?$/.exec(uri);
  if (match === null) throw new Error('MONGODB_URI is not a mongodb:// connection string with hosts');
  const [host, hostPort] = match[2]!.split(',')[0]!.split(':');
  const query = new URLSearchParams((match[4] ?? '?').slice(1));
  query.delete('replicaSet');
  query.set('directConnection', 'true');
  return {
    target: { host: host!, port: Number(hostPort ?? 27017) },
    uri: `${match[1]}127.0.0.1:${port}${match[3] ?? '/'}?${query.toString()}`,
  };
}
