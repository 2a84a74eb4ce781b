/**
 * Run by bench/run.ts as `node --expose-gc entity-cache-bytes.js <dataDir> <entities>`: fills the
 * front's entity cache from the embedded store in `dataDir` as a start does, and prints the V8 heap
 * it holds per cached entity, in bytes (live heap after a full collection, before and after).
 */
import { EmbeddedStore } from '../src/store/embedded/store.js';
import { EntityAttributeCache } from '../src/registry/entity-cache.js';

const [dataDir, entities] = [process.argv[2]!, Number(process.argv[3])];
const collect = (globalThis as { gc?: () => void }).gc;
if (collect === undefined) throw new Error('run with node --expose-gc');

const liveHeap = () => {
  collect();
  collect();
  return process.memoryUsage().heapUsed;
};

const store = new EmbeddedStore(dataDir);
const cache = new EntityAttributeCache(store, entities, 2 ** 40);
const before = liveHeap();
await cache.warm();
const after = liveHeap();
// The cache must hold what it was filled with until after the second measurement.
if (cache.lookup(`user:${entities - 1}`) === undefined) throw new Error(`the store in ${dataDir} holds fewer than ${entities} entities`);
await store.close();
console.log(Math.round((after - before) / entities));
