import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ask, freePort, runVerdict, waitFor } from '../helpers/child.js';

/** What a server started with the default --evaluation and --workers says of where bulks go, on this machine. */

/**
 * The metrics port (--metrics-port) on an address of its own (--metrics-host) answers the probes as
 * the API does, and nothing else: how a sidecar keeps its API on loopback while the kubelet, which
 * connects to the pod's address, probes /health and /ready over HTTP.
 */

const metricsHost = '127.0.0.2';
const secondLoopbackMissing = await freePort(metricsHost).then(
  () => false as const,
  () => `${metricsHost} is not available on this machine`,
);

t.test('--metrics-host: /metrics, /health and /ready there, the API on its own address only', { skip: secondLoopbackMissing }, async (t) => {
  const apiHost = '127.0.0.1';
  const metricsPort = await freePort(metricsHost);
  const dir = mkdtempSync(join(tmpdir(), 'verdict-metrics-port-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort(apiHost);
  const server = runVerdict(t, [
    'start',
    '--store', 'embedded',
    '--host', apiHost,
    '--port', String(port),
    '--metrics-port', String(metricsPort),
    '--metrics-host', metricsHost,
    '--data-dir', dir,
    '--log-level', 'warn',
  ]);
  const probes = `http://${metricsHost}:${metricsPort}`;
  const ready = await waitFor(probes, '/ready', 200, server);
  t.same(ready.body, { status: 'ready', degraded: false, checks: { snapshot: 'ok', store: 'ok', feed: 'ok', workers: 'ok' } }, 'GET /ready on the metrics port');
  const health = await ask(probes, 'GET', '/health');
  t.equal(health.status, 200, 'GET /health on the metrics port');
  t.equal(health.body.status, 'ok');
  t.equal((await ask(probes, 'GET', '/metrics')).status, 200, 'GET /metrics on the metrics port');
  t.equal((await ask(probes, 'POST', '/check', { principal: { attributes: {} }, resource: { attributes: {} } })).status, 404, 'no API there');
  t.equal((await ask(probes, 'GET', '/admin/policies')).status, 404, 'no admin routes there');
  t.equal((await ask(`http://${apiHost}:${port}`, 'GET', '/ready')).status, 200, 'the API port answers on its own address');
  await t.rejects(ask(`http://${metricsHost}:${port}`, 'GET', '/ready'), 'and not on the metrics address');

  server.process.kill('SIGTERM');
  t.equal((await server.exited).code, 0);
});
