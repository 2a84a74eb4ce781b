import type { Config } from '../config.js';
import { EmbeddedStore } from './embedded.js';
import { MongoStore } from './mongodb.js';
import { StoreUnavailableError, type Store, type StoreOptions } from './store.js';

/**
 * Runs a mongodb-memory-server start with the library's console warnings held back: it prints its
 * own stack traces when a start fails, where the caller's error says it in one line. They are
 * passed on when the start succeeds (one may warn of a version mismatch).
 */
export async function withStartWarningsHeld<T>(start: () => Promise<T>): Promise<T> {
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

/**
 * A started throw-away MongoDB for development, stopped with the store: mongod from
 * MONGOMS_SYSTEM_BINARY when it is set, else one that mongodb-memory-server downloads.
 */
async function startMemoryReplicaSet(): Promise<{ uri: string; stop: () => Promise<unknown> }> {
  const { MongoMemoryReplSet } = await import('mongodb-memory-server');
  try {
    const replicaSet = await withStartWarningsHeld(() => MongoMemoryReplSet.create({ replSet: { count: 1, storageEngine: 'wiredTiger' } }));
    return { uri: replicaSet.getUri(), stop: () => replicaSet.stop() };
  } catch (error) {
    const reason = (error as Error).message.split('\n')[0];
    const binary = process.env.MONGOMS_SYSTEM_BINARY;
    throw new StoreUnavailableError(
      binary
        ? `--store mongodb-memory could not start mongod from MONGOMS_SYSTEM_BINARY (${binary}): ${reason}`
        : '--store mongodb-memory could not start mongod: mongodb-memory-server downloads a mongod binary on first use, ' +
            `which needs the internet (or MONGOMS_SYSTEM_BINARY pointing at an installed mongod): ${reason}`,
    );
  }
}

/** Opens the store the configuration names: the embedded one by default, MongoDB for many processes. */
export async function openStore(config: Config, options: StoreOptions): Promise<Store> {
  switch (config.store) {
    case 'embedded':
      return new EmbeddedStore(config.dataDir, options);
    case 'mongodb':
      return MongoStore.open({ ...options, uri: config.mongodbUri, database: config.mongodbDatabase });
    case 'mongodb-memory': {
      const server = await startMemoryReplicaSet();
      const store = await MongoStore.open({ ...options, uri: server.uri, database: config.mongodbDatabase });
      const close = store.close.bind(store);
      store.close = async () => {
        await close();
        await server.stop();
      };
      return store;
    }
  }
}
