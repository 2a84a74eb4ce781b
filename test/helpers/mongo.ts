import { randomUUID } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { existsSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
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

/** Where mongodb-memory-server downloads mongod to (its default), and the host it downloads from. */
const DOWNLOADED = join(homedir(), '.cache', 'mongodb-binaries');
const DOWNLOAD_HOST = 'fastdl.mongodb.org';

/**
 * Why no mongod could come from a download, known at once: none is named, none was downloaded before, and
 * the download's host does not resolve (a machine offline). mongodb-memory-server would otherwise try
 * the download three times, with pauses, some 7 s in each test process that asks.
 */
async function offline(): Promise<string | undefined> {
  if (process.env.MONGOMS_SYSTEM_BINARY || process.env.MONGOMS_DOWNLOAD_MIRROR || process.env.MONGOMS_DOWNLOAD_DIR) return undefined;
  if (existsSync(DOWNLOADED) && readdirSync(DOWNLOADED).some((name) => name.startsWith('mongod'))) return undefined;
  return lookup(DOWNLOAD_HOST).then(
    () => undefined,
    (error: NodeJS.ErrnoException) =>
      `has no mongod to start: none is installed (MONGOMS_SYSTEM_BINARY) or downloaded, and ${DOWNLOAD_HOST} does not resolve (${error.code}): this machine is offline`,
  );
}

async function memoryMongo(kind: 'replica set' | 'standalone'): Promise<{ uri: string; stop(): Promise<unknown> } | { failed: string }> {
  noMemoryMongo ??= await offline();
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
