import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { ask, freePort, runVerdict, waitFor, type Answer } from './helpers/child.js';

const check = { principal: { attributes: { role: 'admin' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' };
const QUIET = { LOG_LEVEL: 'warn', ADMIN_AUTHN_REQUIRED: 'false' };

function scratch(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-ops-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('readiness is 503 naming what is loading until the store answers, and healthcheck says so', async (t) => {
  const unreachableMongo = `mongodb://127.0.0.1:${await freePort()}/`;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  runVerdict(t, ['start', '--store', 'mongodb', '--port', String(port), '--mongodb-uri', unreachableMongo], QUIET);
  const ready = await waitFor(url, '/ready', 503);
  t.equal(ready.body.status, 'not ready');
  t.equal(ready.body.checks.snapshot, 'loading policies');
  t.match(ready.body.detail, /snapshot/);
  t.same((await ask(url, 'GET', '/health')).body, { status: 'starting', revision: 0 }, 'liveness says starting, not ok');
  const refused = await ask(url, 'POST', '/check', check);
  t.equal(refused.status, 503);
  t.match(refused.body.detail, /starting/);

  const probe = runVerdict(t, ['healthcheck', '--port', String(port)]);
  const { code, stderr } = await probe.exited;
  t.equal(code, 1, 'healthcheck exits 1 while not ready');
  t.match(stderr, /not ready/);
});

t.test('a server on TCP and a Unix socket: ready, checks, healthcheck, metrics on their own port, logs without secrets', async (t) => {
  const dir = scratch(t);
  const socket = join(dir, 'verdict.sock');
  const [port, metricsPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${port}`;
  const key = 'sekret-admin-key-4711';
  const token = 'Bearer bearer-token-0815';
  const server = runVerdict(
    t,
    ['start', '--store', 'embedded', '--port', String(port), '--socket', socket, '--metrics-port', String(metricsPort), '--data-dir', join(dir, 'data')],
    { LOG_LEVEL: 'debug', ADMIN_AUTHN_REQUIRED: 'true', ADMIN_API_KEY: key },
  );
  const ready = await waitFor(url, '/ready', 200);
  t.same(ready.body, { status: 'ready', degraded: false, checks: { snapshot: 'ok', store: 'ok', workers: 'ok' } });

  const overSocket = await ask(`unix:${socket}`, 'POST', '/check', check);
  t.equal(overSocket.status, 200);
  t.same(overSocket.body, { allowed: false, reason: 'Action denied by default because there are no policies' });
  t.equal((await ask(`unix:${socket}`, 'GET', '/ready')).status, 200, 'the socket answers readiness too');
  t.equal((await ask(url, 'GET', '/admin/policies', undefined, { 'way-api-key': key, authorization: token })).status, 200);

  for (const args of [['--socket', socket], ['--port', String(port)], ['--port', String(port), '--live']]) {
    const { code, stdout } = await runVerdict(t, ['healthcheck', ...args]).exited;
    t.equal(code, 0, `healthcheck ${args.join(' ')} exits 0`);
    t.match(stdout, / 200 /);
  }

  t.equal((await ask(url, 'GET', '/metrics')).status, 404, 'no /metrics on the API port when it has its own');
  const metrics = await ask(`http://127.0.0.1:${metricsPort}`, 'GET', '/metrics');
  t.equal(metrics.status, 200);
  t.match(metrics.body, /verdict_decisions_total\{allowed="false"\} 1/);

  server.process.kill('SIGTERM');
  const { code, stdout } = await server.exited;
  t.equal(code, 0);
  t.notOk(stdout.includes(key), 'the admin key is never logged');
  t.notOk(stdout.includes('bearer-token-0815'), 'nor the authorization header');
  const lines = stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line));
  t.ok(
    lines.some((line) => line.req?.url === '/admin/policies'),
    'requests are logged at debug',
  );
  t.ok(lines.filter((line) => line.reqId !== undefined).length >= 2, 'request lines carry a request id');
});

t.test('SIGTERM during a stream of checks: readiness flips, every request sent is answered, exit 0', async (t) => {
  const dir = scratch(t);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = runVerdict(t, ['start', '--store', 'embedded', '--port', String(port), '--data-dir', dir, '--shutdown-delay-ms', '500', '--shutdown-grace-ms', '5000'], QUIET);
  await waitFor(url, '/ready', 200);

  // Clients behave as a load balancer does: they stop sending once readiness says 503.
  let notReady = false;
  let signalled = false;
  let answeredAfterSignal = 0;
  const answers: Answer[] = [];
  const failures: string[] = [];
  const stream = async () => {
    while (!notReady) {
      try {
        const answer = await ask(url, 'POST', '/check/bulk', Array.from({ length: 200 }, () => check));
        answers.push(answer);
        if (signalled) answeredAfterSignal++;
      } catch (error) {
        failures.push(String(error));
        return;
      }
    }
  };
  const streams = Array.from({ length: 8 }, stream);
  await new Promise((resolve) => setTimeout(resolve, 300));
  server.process.kill('SIGTERM');
  signalled = true;
  const duringShutdown = await waitFor(url, '/ready', 503, 1000);
  notReady = true;
  t.equal(duringShutdown.body.checks.shutdown, 'shutting down', 'readiness names the shutdown');
  await Promise.all(streams);
  const { code, stderr } = await server.exited;

  t.same(failures, [], 'no request failed');
  t.ok(answers.length > 0);
  t.ok(
    answers.every((answer) => answer.status === 200 && answer.body.length === 200),
    'every request was answered in full',
  );
  t.ok(answeredAfterSignal > 0, 'requests in flight at the signal, and sent before readiness flipped, were answered');
  t.equal(code, 0);
  t.equal(stderr, '');
  await t.rejects(ask(url, 'GET', '/health'), 'the listener is closed');
});

t.test('SIGTERM under keep-alive load: no request is cut, over several runs', async (t) => {
  const dir = scratch(t);
  const CLIENTS = 16;
  const checkBody = JSON.stringify(check);
  for (let run = 1; run <= 3; run++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const server = runVerdict(t, ['start', '--port', String(port), '--data-dir', join(dir, `run-${run}`)], QUIET);
    await waitFor(url, '/ready', 200);
    const pool = new Pool(url, { connections: CLIENTS, pipelining: 1 });
    let signalled = false;
    let answered = 0;
    // The signal comes once every client's connection is open and in use (a connection still in
    // the listener's queue when it closes is reset by the kernel: a start-up race, not the drain).
    let warm: () => void = () => {};
    const warmedUp = new Promise<void>((resolve) => (warm = resolve));
    let warmClients = 0;
    let closingAfterSignal = 0;
    const failures: string[] = [];
    // Each client sends /check after /check on its keep-alive connection until a new connection is
    // refused (the listener has closed): the one expected way for it to end. Bounded in time and count.
    const deadline = Date.now() + 30_000;
    const client = async () => {
      let ownAnswers = 0;
      while (Date.now() < deadline && answered < 200_000) {
        try {
          const response = await pool.request({ method: 'POST', path: '/check', body: checkBody, headers: { 'content-type': 'application/json' } });
          const body = await response.body.json();
          if (response.statusCode !== 200 || typeof (body as { allowed?: unknown }).allowed !== 'boolean') {
            failures.push(`answered ${response.statusCode}: ${JSON.stringify(body)}`);
          }
          answered++;
          if (++ownAnswers === 5 && ++warmClients === CLIENTS) warm();
          if (signalled && response.headers.connection === 'close') closingAfterSignal++;
        } catch (error) {
          if ((error as { code?: string }).code !== 'ECONNREFUSED') failures.push(`${(error as { code?: string }).code}: ${(error as Error).message}`);
          return;
        }
      }
      failures.push('still answered at the deadline');
    };
    const clients = Array.from({ length: CLIENTS }, client);
    await Promise.all([warmedUp, new Promise((resolve) => setTimeout(resolve, 300))]);
    const answeredBeforeSignal = answered;
    signalled = true;
    server.process.kill('SIGTERM');
    await Promise.all(clients);
    const { code } = await server.exited;
    await pool.destroy();
    t.strictSame(failures, [], `run ${run}: no client saw a socket error (${answered} answered)`);
    t.ok(answeredBeforeSignal > 0, `run ${run}: the load was running at the signal`);
    t.ok(closingAfterSignal > 0, `run ${run}: answers after the signal say Connection: close`);
    t.equal(code, 0, `run ${run}: exit 0`);
  }
});

t.test('--decision-log stdout: one line per decision on standard output, all written before exit', async (t) => {
  const dir = scratch(t);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = runVerdict(t, ['start', '--store', 'embedded', '--port', String(port), '--data-dir', join(dir, 'data'), '--decision-log', 'stdout'], QUIET);
  await waitFor(url, '/ready', 200);
  const checks = 20;
  for (let index = 0; index < checks; index++) t.equal((await ask(url, 'POST', '/check', check)).status, 200);
  t.equal((await ask(url, 'POST', '/check/bulk', [check, check])).status, 200);
  server.process.kill('SIGTERM');
  const { code, stdout } = await server.exited;
  t.equal(code, 0);
  const lines = stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line));
  t.equal(lines.length, checks + 2);
  t.ok(lines.every((line) => line.allowed === false && line.request.action === 'read'));
});
