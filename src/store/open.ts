import type { Config } from '../config.js';
import { EmbeddedStore } from './embedded.js';
import { MongoStore } from './mongodb.js';
import { StoreUnavailableError, type Store, type StoreOptions } from './store.js';

/** A started throw-away MongoDB for development, stopped with the store. */
async function startMemoryReplicaSet(): Promise<{ uri: string; stop: () => Promise<unknown> }> {
  const { MongoMemoryReplSet } = await import('mongodb-memory-server');
  try {
    const replicaSet = await MongoMemoryReplSet.create({ replSet: { count: 1, storageEngine: 'wiredTiger' } });
    return { uri: replicaSet.getUri(), stop: () => replicaSet.stop() };
  } catch (error) {
    throw new StoreUnavailableError(
      `--store mongodb-memory could not start mongod: mongodb-memory-server downloads a mongod binary on first use, ` +
        `which needs the internet (or MONGOMS_SYSTEM_BINARY pointing at an installed mongod): ${(error as Error).message}`,
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
