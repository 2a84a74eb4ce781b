import t, { type Test } from 'tap';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { EmbeddedStore } from '../../src/store/embedded/store.js';
import { PolicySnapshots } from '../../src/snapshot/policy-snapshots.js';
import { PolicyDirectory } from '../../src/policy-files/policy-directory.js';
import { AuditTrail } from '../../src/audit/audit-trail.js';
import { PolicyService } from '../../src/services/policies.js';
import { filePolicies, storePolicies } from '../../src/services/policy-roles.js';
import type { Policy } from '../../src/schemas/policy.js';
import { temporaryDataDir } from '../helpers/server.js';

// PolicyService in this process, over a real embedded store and, for policies from files, a real
// directory: its two roles, reading and writing, without a socket in between.

/** The 409 of a write to policies that come from files (a 422 would mean the policy was read first). */
const MANAGED_FROM_FILES = { message: /^Policies are managed from files in .* \(--policies\): change the files there instead/, statusCode: 409 };

const by = { actor: 'anonymous', client: '127.0.0.1', requestId: 'test', route: 'test' };
const policy = (name: string): Policy => ({
  version: '1.0',
  name,
  description: null,
  default_effect: 'deny',
  rules: [{ name: 'reads', effect: 'allow', principal_conditions: [], resource_conditions: [], actions: ['read'] }],
});

async function opened(t: Test): Promise<{ store: EmbeddedStore; dataDir: string }> {
  const dataDir = temporaryDataDir();
  const store = new EmbeddedStore(dataDir);
  t.teardown(async () => {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { store, dataDir };
}

t.test('policies in the store: a write goes to the store, and reads answer from it', async (t) => {
  const { store } = await opened(t);
  const snapshots = await PolicySnapshots.load(store);
  t.teardown(() => snapshots.close());
  const policies = new PolicyService(store, snapshots, DEFAULT_CONFIG, new AuditTrail(store), storePolicies(store));
  await policies.create(policy('first'), by);
  t.equal((await store.getPolicy('first'))?.name, 'first', 'stored');
  t.equal(snapshots.current.policyCount, 1, 'and in force when the write returns');
  t.same((await policies.list()).map(({ name }) => name), ['first']);
  t.equal((await policies.get('first')).name, 'first');
});

t.test('policies from files: read as the set in force; every write is 409, before what it sends is read', async (t) => {
  const { store, dataDir } = await opened(t);
  const dir = join(dataDir, 'policies');
  mkdirSync(dir);
  writeFileSync(join(dir, 'from-file.json'), JSON.stringify(policy('from-file')));
  const files = PolicyDirectory.open(dir, store, DEFAULT_CONFIG);
  const snapshots = await PolicySnapshots.load(files);
  t.teardown(() => snapshots.close());
  const policies = new PolicyService(store, snapshots, DEFAULT_CONFIG, new AuditTrail(store), filePolicies(files));
  t.same((await policies.list()).map(({ name }) => name), ['from-file']);
  t.equal((await policies.get('from-file')).name, 'from-file');
  await t.rejects(policies.create(policy('other'), by), MANAGED_FROM_FILES, 'create');
  await t.rejects(policies.create({ name: '' } as Policy, by), MANAGED_FROM_FILES, 'create, of a policy that is not valid either');
  await t.rejects(policies.replace('from-file', policy('from-file'), by), MANAGED_FROM_FILES, 'replace');
  await t.rejects(policies.delete('from-file', by), MANAGED_FROM_FILES, 'delete');
  await t.rejects(policies.restore('from-file', 1, by), MANAGED_FROM_FILES, 'restore');
  t.equal(await store.getPolicy('other'), undefined, 'nothing reached the store');
});
