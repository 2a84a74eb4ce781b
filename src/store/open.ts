import type { Config } from '../config/config.js';
import { EmbeddedStore } from './embedded/store.js';
import { type Store, type StoreOptions } from './store.js';
import { StoreUnavailableError } from './errors.js';
import type { MemoryMongo } from './mongodb/memory.js';

/** A started throw-away replica set for development, or one line saying why there is none. */
async function startMemoryReplicaSet(): Promise<MemoryMongo> {
  const { MemoryMongoStartError, startMemoryMongo } = await import('./mongodb/memory.js');
  try {
    return await startMemoryMongo('replica set');
  } catch (error) {
    if (error instanceof MemoryMongoStartError) throw new StoreUnavailableError(`--store mongodb-memory ${error.message}`);
    throw error;
  }
}

/** What the configuration says of a MongoDB store but where it is. */
const mongoSettings = (config: Config) => ({
  database: config.mongodbDatabase,
  maintenance: config.storeMaintenance === 'on',
  serverSelectionTimeoutMS: config.mongodbSelectionTimeoutMs,
  timeouts: { retry: config.mongodbWriteRetryMs, majority: config.mongodbMajorityTimeoutMs, answer: config.mongodbAnswerTimeoutMs },
});

/**
 * Opens the store the configuration names: the embedded one by default, MongoDB for many processes.
 * The MongoDB driver is loaded only by a configuration that uses it.
 */
export async function openStore(config: Config, options: StoreOptions): Promise<Store> {
  switch (config.store) {
    case 'embedded':
      return new EmbeddedStore(config.dataDir, options);
    case 'mongodb': {
      const { MongoStore } = await import('./mongodb/store.js');
      return MongoStore.open({ ...options, ...mongoSettings(config), uri: config.mongodbUri });
    }
    case 'mongodb-memory': {
      const { MongoStore } = await import('./mongodb/store.js');
      const server = await startMemoryReplicaSet();
      const store = await MongoStore.open({ ...options, ...mongoSettings(config), uri: server.uri });
      const close = store.close.bind(store);
      store.close = async () => {
        await close();
        await server.stop();
      };
      return store;
    }
  }
}
