import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { EmbeddedStore } from '../../../src/store/embedded/store.js';
import { MongoStore } from '../../../src/store/mongodb/store.js';
import type { LoadedPolicyChanges, Store, StoreOptions } from '../../../src/store/store.js';
import { DuplicateKeyError } from '../../../src/store/errors.js';
import type { AuditRecord } from '../../../src/audit/record.js';
import type { Policy } from '../../../src/schemas/policy.js';
import type { Entity } from '../../../src/schemas/entity.js';
import { temporaryDataDir } from '../../helpers/server.js';
import { reachableMongo } from '../../helpers/mongo.js';
import { TEST_WRITER } from '../../helpers/writer.js';

// What each capability's contract (the files beside this one) runs on: every driver, the same tests.

/** Two handles on one backing store (two processes' view of it), and how to drop it afterwards. */
export interface Backing {
  open(options?: Partial<StoreOptions>): Promise<Store>;
  drop(): Promise<void>;
}

/** A capability's contract, run on one driver (`name`) over fresh backing stores. */
export type Contract = (t: Test, name: string, backing: () => Promise<Backing>) => void;

export const by = TEST_WRITER;

export const policy = (name: string, extra: Partial<Policy> = {}): Policy => ({
  version: '1.0',
  name,
  description: null,
  rules: [{ name: 'r', effect: 'allow', principal_conditions: [], resource_conditions: [], actions: ['read'] }],
  default_effect: 'deny',
  ...extra,
});

export const entity = (uri: string, values: Record<string, unknown> = { a: 1 }): Entity => ({
  uri,
  type: 'principal',
  attributes: Object.entries(values).map(([key, value]) => ({ key, value, updated_at: 't1', registered_at: 't0' })),
  registered_at: 't0',
});

export async function refusedAsDuplicate(t: Test, write: Promise<unknown>): Promise<void> {
  await write.then(
    () => t.fail('a duplicate was accepted'),
    (error: unknown) => t.type(error, DuplicateKeyError, 'refused as a duplicate'),
  );
}

/** What a list of records says, compactly: operation, target and (for policies) version. */
export const summary = (records: AuditRecord[]) => records.map((record) => [record.operation, record.target, 'version' in record ? record.version : null]);

/** What a load since a revision says, compactly: the revision, and each changed policy's description and position (null: deleted), by name. */
export function changesOf(loaded: LoadedPolicyChanges) {
  if (!('changes' in loaded)) return { revision: loaded.revision, whole: loaded.policies.map((p) => p.name) };
  const changes = [...loaded.changes].sort((a, b) => a.name.localeCompare(b.name));
  return { revision: loaded.revision, changes: changes.map(({ name, now }) => [name, now === null ? null : [now.policy.description, now.position]]) };
}

/** Two handles on a fresh backing store (`store` opened with `options`), both closed and the store dropped when `t` ends. */
export async function openHandles(t: Test, backing: () => Promise<Backing>, options?: Partial<StoreOptions>): Promise<{ store: Store; other: Store }> {
  const { open, drop } = await backing();
  const opened: Store[] = [];
  t.teardown(async () => {
    for (const handle of opened) await handle.close();
    await drop();
  });
  const store = await open(options);
  opened.push(store);
  const other = await open();
  opened.push(other);
  return { store, other };
}

/** Runs `contract` (of the capability `capability`) on the embedded store, and on MongoDB where one is reachable: skipped loudly elsewhere. */
export async function onEveryDriver(capability: string, contract: Contract): Promise<void> {
  contract(t, 'embedded', async () => {
    const dataDir = temporaryDataDir();
    return { open: async (options) => new EmbeddedStore(dataDir, options), drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  });
  const mongo = await reachableMongo();
  if ('skipped' in mongo) {
    console.log(`# MongoDB ${capability} contract SKIPPED: ${mongo.skipped}`);
    t.test(`mongodb: the ${capability} contract`, { skip: mongo.skipped }, () => undefined);
    return;
  }
  t.teardown(mongo.stop);
  contract(t, 'mongodb', async () => {
    const database = mongo.freshDatabase();
    return { open: (options) => MongoStore.open({ ...options, uri: mongo.uri, database }), drop: () => mongo.dropDatabase(database) };
  });
}
