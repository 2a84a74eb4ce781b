import t from 'tap';
import { rmSync } from 'node:fs';
import { EmbeddedStore } from '../../src/store/embedded/store.js';
import { startServer, temporaryDataDir, type TestServer } from '../helpers/server.js';
import { InjectedFaults, interceptedStore } from '../helpers/intercepted-store.js';

// A server whose store fails to load policies for a while (faults injected into a real embedded
// store) beside a second server on the same data directory that keeps writing.

const allowAll = (name: string) => ({
  name,
  rules: [{ name: 'everyone', effect: 'allow', principal_conditions: [], resource_conditions: [], actions: [name] }],
});
const check = (server: TestServer, action: string) =>
  server.call('POST', '/check', { principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } }, action });

async function revisionOf(server: TestServer): Promise<number> {
  return (await server.call('GET', '/health')).body.revision;
}

async function reaches(server: TestServer, revision: number): Promise<boolean> {
  for (let waited = 0; waited < 10_000; waited += 20) {
    if ((await revisionOf(server)) >= revision) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

const rebuildFailures = async (server: TestServer) =>
  Number(/^verdict_snapshot_rebuild_failures_total (\d+)$/m.exec(String((await server.call('GET', '/metrics')).body))?.[1]);

t.test('a server whose rebuilds failed stays ready, degraded, says so on /ready, recovers, and applies the next change', async (t) => {
  const dataDir = temporaryDataDir();
  const faults = new InjectedFaults();
  const follower = await startServer({ dataDir }, { store: interceptedStore(new EmbeddedStore(dataDir), { loadPolicies: faults.around }) });
  const writer = await startServer({ dataDir });
  t.teardown(async () => {
    await follower.close();
    await writer.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  faults.failing = Infinity;
  const before = Date.now();
  t.equal((await writer.call('POST', '/admin/policies', allowAll('read'))).status, 200);
  await faults.failed(1);
  const ready = await follower.call('GET', '/ready');
  t.equal(ready.status, 200, 'ready: it decides from its last snapshot, as every process on the failing store would');
  t.equal(ready.body.degraded, true, 'degraded while its snapshot cannot be rebuilt');
  t.match(ready.body.checks.snapshot, /^rebuilds failing since (\S+) \(\d+ attempts?\): injected store fault$/);
  const since = Date.parse(/since (\S+) /.exec(ready.body.checks.snapshot)![1]!);
  t.ok(since >= before - 1000 && since <= Date.now(), 'since when, as an ISO time');
  t.match(ready.body.detail, /^Ready, degraded: snapshot \(rebuilds failing/);
  t.ok((await rebuildFailures(follower)) >= 1, 'verdict_snapshot_rebuild_failures_total counts them');
  t.equal(await revisionOf(follower), 0, 'it still serves the last good snapshot');

  faults.recover();
  t.ok(await reaches(follower, 1), 'once the store answers, it catches up without another write');
  t.equal((await check(follower, 'read')).body.allowed, true);
  t.same((await follower.call('GET', '/ready')).body.degraded, false, 'and is no longer degraded');

  t.equal((await writer.call('POST', '/admin/policies', allowAll('write'))).status, 200);
  t.ok(await reaches(follower, 2), 'the next change is applied');
  t.equal((await check(follower, 'write')).body.allowed, true);
});

t.test('a policy write whose snapshot rebuild fails is answered 503 saying it was saved, and applied later', async (t) => {
  const dataDir = temporaryDataDir();
  const faults = new InjectedFaults();
  const server = await startServer({ dataDir }, { store: interceptedStore(new EmbeddedStore(dataDir), { loadPolicies: faults.around }) });
  t.teardown(async () => {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  faults.failing = 1;
  const answer = await server.call('POST', '/admin/policies', allowAll('read'));
  t.equal(answer.status, 503);
  t.match(answer.body.detail, /^Policy 'read' was saved, but this process could not load it yet/);
  t.equal((await server.call('GET', '/admin/policies/read')).status, 200, 'the write is durable');
  t.ok(await reaches(server, 1), 'and this process applies it on its own');
  t.equal((await check(server, 'read')).body.allowed, true);
});
