import t from 'tap';
import { statSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { Pool } from 'undici';
import { ask, freePort, outputMatches, runVerdict, waitFor, type Answer } from '../helpers/child.js';
import { scratchDir } from '../helpers/server.js';

/** What a server started with the default --evaluation and --workers says of where bulks go, on this machine. */

const check = { principal: { attributes: { role: 'admin' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' };
const QUIET = { LOG_LEVEL: 'warn', ADMIN_AUTHN_REQUIRED: 'false' };


t.test('readiness is 503 naming what is loading until the store answers, and healthcheck says so', async (t) => {
  const unreachableMongo = `mongodb://127.0.0.1:${await freePort()}/`;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = runVerdict(t, ['start', '--store', 'mongodb', '--port', String(port), '--mongodb-uri', unreachableMongo], QUIET);
  const ready = await waitFor(url, '/ready', 503, server);
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
  const dir = scratchDir(t);
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
  const ready = await waitFor(url, '/ready', 200, server);
  t.same(ready.body, { status: 'ready', degraded: false, checks: { snapshot: 'ok', store: 'ok', feed: 'ok', workers: 'ok' } });

  t.equal(statSync(socket).mode & 0o777, 0o660, 'the socket is mode 0660: owner and group may connect, others not');
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
  const dir = scratchDir(t);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // The delay is the load balancer's time to see the 503; the test sees it a moment after the signal is handled.
  const args = ['start', '--store', 'embedded', '--port', String(port), '--data-dir', dir, '--shutdown-delay-ms', '3000', '--shutdown-grace-ms', '10000'];
  const server = runVerdict(t, args, { ...QUIET, LOG_LEVEL: 'info' });
  await waitFor(url, '/ready', 200, server);

  // Clients behave as a load balancer does: they stop sending once readiness says 503.
  const STREAMS = 8;
  let notReady = false;
  let signalled = false;
  let answeredAfterSignal = 0;
  const answers: Answer[] = [];
  const failures: string[] = [];
  let streaming!: () => void;
  const everyStreamAnswered = new Promise<void>((resolve) => (streaming = resolve));
  const stream = async () => {
    while (!notReady) {
      try {
        const answer = await ask(url, 'POST', '/check/bulk', Array.from({ length: 200 }, () => check));
        answers.push(answer);
        if (answers.length >= STREAMS) streaming();
        if (signalled) answeredAfterSignal++;
      } catch (error) {
        failures.push(String(error));
        streaming();
        return;
      }
    }
  };
  const streams = Array.from({ length: STREAMS }, stream);
  await everyStreamAnswered;
  server.process.kill('SIGTERM');
  signalled = true;
  // The line is logged as readiness flips, in one step of the server's event loop.
  await outputMatches(server, /"msg":"shutting down"/);
  const duringShutdown = await ask(url, 'GET', '/ready');
  notReady = true;
  t.equal(duringShutdown.status, 503, 'readiness is 503 once the signal is handled');
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
  const dir = scratchDir(t);
  const CLIENTS = 16;
  const checkBody = JSON.stringify(check);
  for (let run = 1; run <= 3; run++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const server = runVerdict(t, ['start', '--store', 'embedded', '--port', String(port), '--data-dir', join(dir, `run-${run}`)], QUIET);
    await waitFor(url, '/ready', 200, server);
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
  const dir = scratchDir(t);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = runVerdict(t, ['start', '--store', 'embedded', '--port', String(port), '--data-dir', join(dir, 'data'), '--decision-log', 'stdout'], QUIET);
  await waitFor(url, '/ready', 200, server);
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

/** Resolves once what `socket` has received matches `pattern`. */
function received(socket: Socket, pattern: RegExp): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (!pattern.test(text)) return;
      socket.off('data', onData);
      resolve();
    };
    socket.on('data', onData);
    socket.once('close', () => reject(new Error(`closed before ${pattern}: ${text}`)));
  });
}

t.test('a request still in flight when --shutdown-grace-ms runs out is cut off: exit 1, saying so', async (t) => {
  const dir = scratchDir(t);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = runVerdict(t, ['start', '--store', 'embedded', '--port', String(port), '--data-dir', dir, '--shutdown-grace-ms', '1000'], QUIET);
  await waitFor(url, '/ready', 200, server);
  // A request whose body never finishes arriving. "100 Continue" says the server holds it.
  const client = connect(port, '127.0.0.1');
  t.teardown(() => client.destroy());
  client.write('POST /check HTTP/1.1\r\nHost: verdict\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n');
  await received(client, /^HTTP\/1\.1 100 Continue\r\n/);
  client.write('{"principal":');
  server.process.kill('SIGTERM');
  const { code, signal, stdout } = await server.exited;
  t.equal(signal, null);
  t.equal(code, 1, 'exit 1');
  t.match(stdout, /"msg":"killed by timeout \(1000ms\)"/, 'the log says the grace ran out');
});
