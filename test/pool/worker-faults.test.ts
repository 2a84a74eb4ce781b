import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { EmbeddedStore } from '../../src/store/embedded/store.js';
import { PolicySnapshots } from '../../src/snapshot/policy-snapshots.js';
import { BulkPool } from '../../src/pool/bulk-pool.js';
import { bulkLimitsOf } from '../../src/requests/bulk-request.js';
import { FAULT_ACTION, FAULTY_WORKER_FILE } from '../helpers/worker-fault.js';
import { startServer, temporaryDataDir, type TestServer } from '../helpers/server.js';

// Real worker threads running the real worker, made to fail by helpers/faulty-worker.ts as the
// VERDICT_TEST_WORKER_FAULT variable says when they start: a bulk holding FAULT_ACTION makes one exit (crash) or spin (hang).

const item = (department: string, action = 'read') => ({
  principal: { attributes: { department } },
  resource: { attributes: { kind: 'doc' } },
  action,
});
const faulty = [item('it'), item('hr', FAULT_ACTION), item('hr')];
const normal = [item('it'), item('hr'), item('ops')];
const READS = { allowed: true, reason: 'Rule reads allowed the action in policy it-reads' };
const DENIED = { allowed: false, reason: 'Action denied by default effect' };

function withFault(t: Test, fault: 'crash' | 'hang'): void {
  process.env.VERDICT_TEST_WORKER_FAULT = fault;
  t.teardown(() => {
    delete process.env.VERDICT_TEST_WORKER_FAULT;
  });
}

async function pooledServer(t: Test, workerTimeoutMs = DEFAULT_CONFIG.workerTimeoutMs, workers = 1): Promise<TestServer> {
  const server = await startServer({ evaluation: 'pool', workers, workerTimeoutMs }, { poolWorkerFile: FAULTY_WORKER_FILE });
  t.teardown(server.close);
  const policy = {
    name: 'it reads',
    rules: [{ name: 'reads', effect: 'allow', principal_conditions: [{ path: 'attributes.department', operator: '==', value: 'it' }], actions: ['read'] }],
  };
  t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
  return server;
}

t.test('a worker that crashes mid-batch: the bulk is still decided, correctly, and later ones too', async (t) => {
  withFault(t, 'crash');
  const server = await pooledServer(t, DEFAULT_CONFIG.workerTimeoutMs, 2);
  const answer = await server.call('POST', '/check/bulk', faulty);
  t.equal(answer.status, 200);
  t.same(answer.body, [READS, DENIED, DENIED], 'decided on the front, never allowed by accident');
  const concurrent = await Promise.all(
    Array.from({ length: 12 }, (_, index) => server.call('POST', '/check/bulk', index % 4 === 0 ? faulty : normal)),
  );
  concurrent.forEach((response, index) => {
    t.equal(response.status, 200, `bulk ${index}`);
    t.same(response.body, [READS, DENIED, DENIED], `bulk ${index} decided`);
  });
  t.equal((await server.call('GET', '/health')).status, 200);
});

t.test('the pool replaces a crashed worker: the next bulk is decided by a worker again', async (t) => {
  withFault(t, 'crash');
  const dataDir = temporaryDataDir();
  const store = new EmbeddedStore(dataDir);
  const snapshots = await PolicySnapshots.load(store);
  const pool = new BulkPool(snapshots, { workers: 1, limits: bulkLimitsOf(DEFAULT_CONFIG), timeoutMillis: DEFAULT_CONFIG.workerTimeoutMs, workerFile: FAULTY_WORKER_FILE });
  t.teardown(async () => {
    await pool.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  t.equal(await pool.decide(JSON.stringify(faulty)), undefined, 'the crashed bulk goes back to the front');
  const decided = await pool.decide(JSON.stringify(normal));
  t.type(decided, 'string', 'a worker (the replacement) decided the next bulk');
  t.equal(JSON.parse(decided!).length, 3);
});

t.test('a worker that hangs: the bulk is answered 503 with a detail in bounded time, and the pool recovers', async (t) => {
  withFault(t, 'hang');
  const server = await pooledServer(t, 5000);
  // Bulks queued on the same worker behind the hung one are still decided.
  const [answer, ...queuedBehind] = await Promise.all([faulty, normal, normal].map((body) => server.call('POST', '/check/bulk', body)));
  t.equal(answer!.status, 503);
  t.same(answer!.body, { detail: 'A bulk check took longer than 5000 ms; retry shortly' });
  for (const queued of queuedBehind) t.same([queued.status, queued.body], [200, [READS, DENIED, DENIED]]);
  // One worker: had it not been replaced, this bulk would time out as well.
  const next = await server.call('POST', '/check/bulk', normal);
  t.equal(next.status, 200);
  t.same(next.body, [READS, DENIED, DENIED]);
  t.same((await server.call('POST', '/check', item('it'))).body, READS, 'single checks never wait on the pool');
});
