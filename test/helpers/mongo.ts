import { randomUUID } from 'node:crypto';
import { withStartWarningsHeld } from '../../src/store/open.js';

export interface ReachableMongo {
  uri: string;
  /** A database name no other test uses. */
  freshDatabase(): string;
  dropDatabase(name: string): Promise<void>;
  stop(): Promise<unknown>;
}

const HOW_TO_RUN = 'set MONGODB_URI to a replica set, or MONGOMS_SYSTEM_BINARY to a mongod binary';

/** The first line of why mongodb-memory-server could not start mongod, without download addresses. */
const startFailure = (error: unknown) => (error as Error).message.split('\n')[0]!.replace(/https?:\/\/\S+/g, '<download site>');

/**
 * A MongoDB replica set to test against: MONGODB_URI when set, else a throw-away one from
 * mongodb-memory-server (which runs MONGOMS_SYSTEM_BINARY when set, else downloads mongod where
 * the internet is reachable); otherwise the reason there is none, for the test to print as it skips.
 */
export async function reachableMongo(): Promise<ReachableMongo | { skipped: string }> {
  let uri = process.env.MONGODB_URI;
  let stop: () => Promise<unknown> = async () => undefined;
  if (!uri) {
    try {
      const { MongoMemoryReplSet } = await import('mongodb-memory-server');
      const replicaSet = await withStartWarningsHeld(() => MongoMemoryReplSet.create({ replSet: { count: 1, storageEngine: 'wiredTiger' } }));
      uri = replicaSet.getUri();
      stop = () => replicaSet.stop();
    } catch (error) {
      return { skipped: `no MongoDB: ${HOW_TO_RUN} (mongodb-memory-server could not start mongod: ${startFailure(error)})` };
    }
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
  try {
    const { MongoMemoryServer } = await import('mongodb-memory-server');
    const server = await withStartWarningsHeld(() => MongoMemoryServer.create());
    return { uri: server.getUri(), stop: () => server.stop() };
  } catch (error) {
    return { skipped: `no standalone mongod: set MONGODB_STANDALONE_URI, or MONGOMS_SYSTEM_BINARY to a mongod binary (${startFailure(error)})` };
  }
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
