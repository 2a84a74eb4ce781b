export interface MemoryMongo {
  uri: string;
  stop: () => Promise<unknown>;
}

/** Why mongodb-memory-server could not start a mongod (one line, no stack trace). */
export class MemoryMongoStartError extends Error {}

/**
 * Runs a mongodb-memory-server start with the library's console warnings held back: it prints its
 * own stack traces when a start fails, where the caller's error says it in one line. They are
 * passed on when the start succeeds (one may warn of a version mismatch).
 */
async function withStartWarningsHeld<T>(start: () => Promise<T>): Promise<T> {
  const warnings: unknown[][] = [];
  const warn = console.warn;
  console.warn = (...args: unknown[]) => warnings.push(args);
  try {
    const started = await start();
    for (const warning of warnings) warn(...warning);
    return started;
  } finally {
    console.warn = warn;
  }
}

const firstLine = (text: string) => text.trim().split('\n')[0]!.trim();

/** A download that failed, as the end of a sentence whose subject is whoever wanted a mongod. */
function downloadFailure(error: { url: string; msg: string }): string {
  return (
    `has no mongod to start: downloading it from ${new URL(error.url).host} failed (${firstLine(error.msg)}). ` +
    'mongodb-memory-server downloads mongod on first use, which needs the internet; offline, set MONGOMS_SYSTEM_BINARY to an installed mongod'
  );
}

/** Any other failure to start, likewise. */
function startFailure(error: unknown): string {
  const reason = firstLine(error instanceof Error ? error.message : String(error));
  const binary = process.env.MONGOMS_SYSTEM_BINARY;
  return binary ? `could not start mongod from MONGOMS_SYSTEM_BINARY (${binary}): ${reason}` : `could not start mongod: ${reason}`;
}

/**
 * A throw-away MongoDB from mongodb-memory-server (`--store mongodb-memory`, and the tests' MongoDB
 * where none is configured): a single-node replica set, or a standalone server. It runs the mongod
 * MONGOMS_SYSTEM_BINARY names, else one it downloads on first use. Every failure (no download, a
 * binary that is no mongod, a mongod that will not start) ends in a MemoryMongoStartError.
 */
export async function startMemoryMongo(topology: 'replica set' | 'standalone'): Promise<MemoryMongo> {
  const { MongoMemoryReplSet, MongoMemoryServer, errors } = await import('mongodb-memory-server');
  try {
    if (topology === 'standalone') {
      const server = await withStartWarningsHeld(() => MongoMemoryServer.create());
      return { uri: server.getUri(), stop: () => server.stop() };
    }
    const replicaSet = await withStartWarningsHeld(() => MongoMemoryReplSet.create({ replSet: { count: 1, storageEngine: 'wiredTiger' } }));
    return { uri: replicaSet.getUri(), stop: () => replicaSet.stop() };
  } catch (error) {
    throw new MemoryMongoStartError(error instanceof errors.DownloadError ? downloadFailure(error) : startFailure(error));
  }
}
