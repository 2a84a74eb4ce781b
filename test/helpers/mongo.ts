import { randomUUID } from 'node:crypto';

export interface ReachableMongo {
  uri: string;
  /** A database name no other test uses. */
  freshDatabase(): string;
  dropDatabase(name: string): Promise<void>;
  stop(): Promise<unknown>;
}

/**
 * A MongoDB to test against: MONGODB_URI when set, else a throw-away replica set from
 * mongodb-memory-server; otherwise the reason there is none, for the test to print as it skips.
 */
export async function reachableMongo(): Promise<ReachableMongo | { skipped: string }> {
  let uri = process.env.MONGODB_URI;
  let stop: () => Promise<unknown> = async () => undefined;
  if (!uri) {
    try {
      const { MongoMemoryReplSet } = await import('mongodb-memory-server');
      const replicaSet = await MongoMemoryReplSet.create({ replSet: { count: 1, storageEngine: 'wiredTiger' } });
      uri = replicaSet.getUri();
      stop = () => replicaSet.stop();
    } catch (error) {
      const reason = (error as Error).message.split('\n')[0]!.replace(/https?:\/\/\S+/g, '<download site>');
      return { skipped: `MONGODB_URI is not set and mongodb-memory-server could not start mongod (${reason})` };
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
