import t, { type Test } from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ask, freePort, runVerdict, waitFor, type Child } from '../helpers/child.js';

// A start loads only what its configuration uses, and compiles nothing before a request needs it:
// the MongoDB driver, the rate limiter of admin authentication, the worker pool, Ajv (which the
// validators and fast-json-stringify's compiler need), the packages of the documentation and the
// dashboard, and the YAML parser are loaded when a start or a request needs them; Ajv only by a request
// that the hand-written checks of the hot routes do not accept. (cli-footprint.test.ts: a refused start
// or a health probe loads no server at all.) A preload script reports which packages the CLI process
// has loaded when it gets SIGWINCH (a signal the server leaves alone) and at exit; in a worker thread,
// which gets no signal, every 50 ms.

const PRELOAD = `
const { writeSync } = require('node:fs');
const packages = () => Object.keys(require.cache).map((path) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(path)?.[1]).filter(Boolean);
// Node's own fetch, which some of its modules load when they are imported rather than required.
const nodeFetch = () => (process.moduleLoadList.some((name) => name.includes('internal/deps/undici')) ? ['node:fetch'] : []);
const loaded = () => [...new Set([...packages(), ...nodeFetch()])];
const { isMainThread } = require('node:worker_threads');
if (isMainThread) {
  const report = () => writeSync(1, 'LOADED ' + JSON.stringify(loaded()) + '\\n');
  process.on('SIGWINCH', report);
  process.on('exit', report);
} else {
  setInterval(() => writeSync(1, 'WORKER LOADED ' + JSON.stringify(loaded()) + '\\n'), 50).unref();
}
`;

function reporting(t: Test): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-start-up-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const preload = join(dir, 'report-loaded.cjs');
  writeFileSync(preload, PRELOAD);
  return { NODE_OPTIONS: `--require ${preload}`, DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'silent', ADMIN_AUTHN_REQUIRED: 'false' };
}

/** The packages the process reports next (after SIGWINCH, or at exit). */
function nextReport(child: Child): Promise<string[]> {
  return new Promise((resolve) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      const line = text.split('\n').slice(0, -1).find((candidate) => candidate.startsWith('LOADED '));
      if (line === undefined) return;
      child.process.stdout!.off('data', onData);
      resolve(JSON.parse(line.slice('LOADED '.length)) as string[]);
    };
    child.process.stdout!.on('data', onData);
  });
}

const WORKER_REPORT = 'WORKER LOADED ';

/** The packages a worker thread reports in its second report from now: written after anything it did before now. */
async function nextWorkerReport(child: Child): Promise<string[]> {
  const from = child.output().stdout.length;
  // Whole lines only: the last piece may still be arriving.
  const reports = () => child.output().stdout.slice(from).split('\n').slice(0, -1).filter((line) => line.startsWith(WORKER_REPORT));
  while (reports().length < 2) await new Promise((resolve) => child.process.stdout!.once('data', resolve));
  return JSON.parse(reports()[1]!.slice(WORKER_REPORT.length)) as string[];
}

const workerThreads = async (url: string) => {
  const metrics = (await ask(url, 'GET', '/metrics')).body as string;
  return Number(/^verdict_worker_pool_threads (\d+)$/m.exec(metrics)?.[1]);
};

t.test('a start on the embedded store loads no MongoDB driver, rate limiter, pool, schema compiler, pages or YAML parser before a request needs it', async (t) => {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // Every bulk to the pool: under auto, where it goes depends on this machine's cores and the costs measured.
  const server = runVerdict(t, ['start', '--store', 'embedded', '--port', String(port), '--workers', '1', '--evaluation', 'pool'], reporting(t));
  const ready = await waitFor(url, '/ready', 200, server);
  t.same(ready.body.checks, { snapshot: 'ok', store: 'ok', feed: 'ok', workers: 'ok' }, 'ready, worker threads not started yet');
  t.equal(await workerThreads(url), 0, 'no worker thread runs');
  let report = nextReport(server);
  server.process.kill('SIGWINCH');
  const atStart = await report;
  t.ok(atStart.includes('fastify'), 'the report sees the packages the server loaded');
  // (prom-client loads @opentelemetry/api, a small package of interfaces, whenever it is installed: not listed.)
  for (const unused of ['mongodb', '@fastify/rate-limit', 'piscina', 'ajv', 'jose', 'undici', '@grpc/grpc-js', '@opentelemetry/sdk-trace-base', '@opentelemetry/exporter-trace-otlp-http', 'yaml', 'node:fetch', '@fastify/swagger', '@fastify/swagger-ui', '@fastify/static']) t.notOk(atStart.includes(unused), `${unused} is not loaded`);

  const item = { principal: { attributes: { role: 'admin' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' };
  const bulk = await ask(url, 'POST', '/check/bulk', Array.from({ length: 200 }, () => item));
  t.equal(bulk.status, 200);
  t.equal(bulk.body.length, 200, 'a bulk is decided');
  t.equal(await workerThreads(url), 1, 'the worker thread started with it');
  t.same((await ask(url, 'GET', '/ready')).body.checks.workers, 'ok');
  const inWorker = await nextWorkerReport(server);
  t.ok(inWorker.includes('piscina'), "the worker thread's report sees the packages it loaded");
  t.notOk(inWorker.includes('ajv'), 'the worker thread decided a valid bulk without loading Ajv');
  t.equal((await ask(url, 'POST', '/check', item)).status, 200, 'a check validates its body and serializes its answer');
  t.equal((await ask(url, 'POST', '/access/v1/evaluation', { subject: { type: 'user', id: 'ann' }, resource: { type: 'doc', id: 'd1' }, action: { name: 'read' } })).status, 200);
  report = nextReport(server);
  server.process.kill('SIGWINCH');
  const afterBulk = await report;
  t.ok(afterBulk.includes('piscina'), 'the pool is loaded once a bulk needed it');
  t.notOk(afterBulk.includes('ajv'), 'valid checks, bulks and evaluations load no Ajv on the front');
  t.notOk(afterBulk.includes('@fastify/swagger'), 'no page is made for a check');

  const refused = await ask(url, 'POST', '/check?explain=perhaps', item);
  t.equal(refused.status, 422, 'a query string the schema refuses is judged by Ajv');
  t.match(refused.body.detail[0], { loc: ['query', 'explain'], type: 'type_error' });
  const refusedBulk = await ask(url, 'POST', '/check/bulk', Array.from({ length: 200 }, () => ({ ...item, action: 7 })));
  t.equal(refusedBulk.status, 422, 'a bulk body the hand check refuses is judged by Ajv, in the worker thread');
  report = nextReport(server);
  server.process.kill('SIGWINCH');
  t.ok((await report).includes('ajv'), 'Ajv is loaded once a request needed it');
  t.ok((await nextWorkerReport(server)).includes('ajv'), 'in the worker thread too');

  const document = await ask(url, 'GET', '/openapi.json');
  t.equal(document.status, 200);
  t.ok(Object.keys(document.body.paths).includes('/check'), "the OpenAPI document describes the server's routes");
  t.equal((await ask(url, 'GET', '/dashboard/')).status, 200, 'the dashboard is served');
  report = nextReport(server);
  server.process.kill('SIGWINCH');
  const afterPages = await report;
  for (const used of ['@fastify/swagger', '@fastify/swagger-ui', '@fastify/static']) t.ok(afterPages.includes(used), `${used} is loaded once a page needed it`);
});

t.test('admin authentication loads its rate limiter', async (t) => {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = runVerdict(t, ['start', '--store', 'embedded', '--port', String(port)], { ...reporting(t), ADMIN_AUTHN_REQUIRED: 'true', ADMIN_API_KEY: 'a-key-for-this-test' });
  await waitFor(url, '/ready', 200, server);
  const report = nextReport(server);
  server.process.kill('SIGWINCH');
  t.ok((await report).includes('@fastify/rate-limit'));
});
