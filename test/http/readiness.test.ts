import t from 'tap';
import { rmSync } from 'node:fs';
import { EmbeddedStore } from '../../src/store/embedded/store.js';
import { STORE_PROBE_TIMEOUT_MS } from '../../src/services/readiness-conditions.js';
import { Readiness } from '../../src/services/readiness.js';
import { startServer, temporaryDataDir } from '../helpers/server.js';
import { InjectedFaults, interceptedStore } from '../helpers/intercepted-store.js';

// /ready is 503 only for what stops this process deciding correctly; a store it cannot reach leaves
// it deciding from its last snapshot (a MongoDB shared by every sidecar would otherwise take every
// application pod out of service at once): 200, `degraded`, and the store's state in `checks`.
// Faults are injected into a real embedded store (no store outage can be produced on demand here).

const allowRead = {
  name: 'read',
  rules: [{ name: 'everyone', effect: 'allow', principal_conditions: [], resource_conditions: [], actions: ['read'] }],
};
const readCheck = { principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } }, action: 'read' };
const POOL_EVALUATION = 'pool (--evaluation pool): every bulk decided by the 1 worker thread';

t.test('a store that fails to answer: /ready stays 200, degraded, naming the store; decisions go on', async (t) => {
  const dataDir = temporaryDataDir();
  // Written before the faulted server starts: a write of its own would come back to it on the change
  // feed, and a rebuild for it that fell in the fault window would rightly degrade the snapshot too.
  const writer = await startServer({ dataDir });
  t.equal((await writer.call('POST', '/admin/policies', allowRead)).status, 200);
  await writer.close();
  const faults = new InjectedFaults();
  const server = await startServer({ dataDir, evaluation: 'pool' }, { store: interceptedStore(new EmbeddedStore(dataDir), { policyRevision: faults.around }) });
  t.teardown(async () => {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const healthy = await server.call('GET', '/ready');
  t.equal(healthy.status, 200);
  t.same(healthy.body, { status: 'ready', degraded: false, checks: { snapshot: 'ok', store: 'ok', feed: 'ok', workers: 'ok' } }, 'not degraded while the store answers; a probe reads only the conditions');
  t.same((await server.call('GET', '/ready?verbose=true')).body.checks, { snapshot: 'ok', store: 'ok', feed: 'ok', workers: 'ok', evaluation: POOL_EVALUATION, worker_threads: '1 worker thread (--workers 1)' }, 'verbose adds what the process chose');

  faults.failing = Infinity;
  const ready = await server.call('GET', '/ready');
  t.equal(ready.status, 200, 'still ready: it decides from its last snapshot');
  t.equal(ready.body.status, 'ready');
  t.equal(ready.body.degraded, true);
  t.equal(ready.body.checks.store, 'unreachable: injected store fault');
  t.same({ ...ready.body.checks, store: undefined }, { snapshot: 'ok', feed: 'ok', workers: 'ok', store: undefined }, 'every other condition holds');
  t.equal(ready.body.detail, 'Ready, degraded: store (unreachable: injected store fault)');
  const decision = await server.call('POST', '/check', readCheck);
  t.equal(decision.status, 200, 'a check is answered');
  t.equal(decision.body.allowed, true, 'from the policies it had');
  const bulk = await server.call('POST', '/check/bulk', [readCheck, { ...readCheck, action: 'write' }]);
  t.same(bulk.body.map((answer: { allowed: boolean }) => answer.allowed), [true, false], 'bulk checks in the worker pool too');

  faults.recover();
  const recovered = await server.call('GET', '/ready');
  t.same(recovered.body, { status: 'ready', degraded: false, checks: { snapshot: 'ok', store: 'ok', feed: 'ok', workers: 'ok' } }, 'no longer degraded once it answers');
});

t.test(`a store that does not answer within ${STORE_PROBE_TIMEOUT_MS} ms: /ready 200, degraded, saying so`, async (t) => {
  const dataDir = temporaryDataDir();
  let hanging = true;
  const never = new Promise<never>(() => undefined);
  const server = await startServer({ dataDir }, { store: interceptedStore(new EmbeddedStore(dataDir), { policyRevision: (proceed) => (hanging ? never : proceed()) }) });
  t.teardown(async () => {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const ready = await server.call('GET', '/ready');
  t.equal(ready.status, 200);
  t.equal(ready.body.degraded, true);
  t.equal(ready.body.checks.store, `unreachable: no answer within ${STORE_PROBE_TIMEOUT_MS} ms`);
  hanging = false;
  t.equal((await server.call('GET', '/ready')).body.degraded, false);
});

t.test('what stops correct decisions is 503 whatever else is degraded; degraded conditions are named either way', async (t) => {
  let storeFails = false;
  let workers = 1;
  const readiness = new Readiness({
    required: { snapshot: () => undefined, workers: () => (workers > 0 ? undefined : 'no worker thread is running') },
    degrading: {
      store: () => {
        if (storeFails) throw new Error('unreachable: connection refused');
        return undefined;
      },
    },
  });
  t.same(await readiness.report(), { ready: true, degraded: false, checks: { snapshot: 'ok', workers: 'ok', store: 'ok' } });
  storeFails = true;
  t.same(await readiness.report(), { ready: true, degraded: true, checks: { snapshot: 'ok', workers: 'ok', store: 'unreachable: connection refused' } });
  workers = 0;
  t.same(
    await readiness.report(),
    { ready: false, degraded: true, checks: { snapshot: 'ok', workers: 'no worker thread is running', store: 'unreachable: connection refused' } },
    'a required condition failing is not ready',
  );
  workers = 1;
  readiness.beginShutdown();
  const report = await readiness.report();
  t.equal(report.ready, false, 'shutting down is not ready');
  t.equal(report.checks.shutdown, 'shutting down');
  storeFails = false;
  t.same(await readiness.report(), { ready: false, degraded: false, checks: { snapshot: 'ok', workers: 'ok', store: 'ok', shutdown: 'shutting down' } }, 'for good');
});
