import t from 'tap';
import { rmSync } from 'node:fs';
import { EmbeddedStore } from '../../src/store/embedded/store.js';
import { MongoStore } from '../../src/store/mongodb/store.js';
import type { Store } from '../../src/store/store.js';
import type { Config } from '../../src/config/config.js';
import type { Policy } from '../../src/schemas/policy.js';
import { startServer, temporaryDataDir } from '../helpers/server.js';
import { interceptedStore } from '../helpers/intercepted-store.js';
import { reachableMongo } from '../helpers/mongo.js';
import { TEST_WRITER } from '../helpers/writer.js';

// Another process writes while a server starts: right after the server has loaded its policies,
// and right after it has warmed its entity cache, before it follows the change feed. The server
// must still reach what was written. (The store calls are intercepted only to place the other
// process's writes at those two moments; the stores are real.)

interface Backing {
  config: Partial<Config>;
  open(): Promise<Store>;
  drop(): Promise<unknown>;
}

const policy: Policy = {
  version: '1.0',
  name: 'started',
  description: null,
  rules: [
    {
      name: 'staff',
      effect: 'allow',
      principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'staff' }],
      resource_conditions: [],
      actions: ['enter'],
    },
  ],
  default_effect: 'deny',
};
const entity = (role: string) => ({
  uri: 'user:kim',
  type: 'principal' as const,
  attributes: [{ key: 'role', value: role, updated_at: '2026-01-01T00:00:00.000Z', registered_at: '2026-01-01T00:00:00.000Z' }],
  registered_at: '2026-01-01T00:00:00.000Z',
});

async function eventually(probe: () => Promise<unknown>, expected: unknown): Promise<unknown> {
  let last: unknown;
  for (let waited = 0; waited < 10_000; waited += 20) {
    last = await probe();
    if (JSON.stringify(last) === JSON.stringify(expected)) return last;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return last;
}

function writesDuringStartUp(name: string, backing: () => Promise<Backing>): void {
  t.test(`${name}: writes by another process while a server starts are applied`, async (t) => {
    const { config, open, drop } = await backing();
    const other = await open();
    await other.createEntity(entity('guest'), TEST_WRITER);
    let loads = 0;
    let warmUps = 0;
    const own = await open();
    const store = interceptedStore(own, {
      loadPolicies: async (proceed) => {
        const loaded = await proceed();
        if (loads++ === 0) await other.createPolicy(policy, TEST_WRITER);
        return loaded;
      },
      listEntitiesAfter: async (proceed) => {
        const page = await proceed();
        if (warmUps++ === 0) await other.updateEntity('user:kim', () => entity('staff'), TEST_WRITER);
        return page;
      },
    });
    const server = await startServer(config, { store });
    t.teardown(async () => {
      await server.close();
      await other.close();
      await drop();
    });
    t.equal(loads > 0 && warmUps > 0, true, 'both writes happened during the start');
    const revision = async () => (await server.call('GET', '/health')).body.revision;
    t.equal(await eventually(revision, 1), 1, 'the server reaches the revision written during its start');
    const decision = async () => (await server.call('POST', '/check', { principal: { uri: 'user:kim' }, resource: { attributes: { kind: 'door' } }, action: 'enter' })).body;
    t.same(await eventually(decision, { allowed: true, reason: 'Rule staff allowed the action in policy started' }), {
      allowed: true,
      reason: 'Rule staff allowed the action in policy started',
    }, 'and decides with the entity as updated after its cache was warmed');
  });
}

writesDuringStartUp('embedded', async () => {
  const dataDir = temporaryDataDir();
  return {
    config: { dataDir },
    open: async () => new EmbeddedStore(dataDir),
    drop: async () => rmSync(dataDir, { recursive: true, force: true }),
  };
});

const mongo = await reachableMongo();
if ('skipped' in mongo) {
  console.log(`# writes during start-up on MongoDB SKIPPED: ${mongo.skipped}`);
  t.test('mongodb: writes by another process while a server starts are applied', { skip: mongo.skipped }, () => undefined);
} else {
  t.teardown(mongo.stop);
  writesDuringStartUp('mongodb', async () => {
    const database = mongo.freshDatabase();
    return {
      config: { store: 'mongodb', mongodbUri: mongo.uri, mongodbDatabase: database },
      open: () => MongoStore.open({ uri: mongo.uri, database }),
      drop: () => mongo.dropDatabase(database),
    };
  });
}
