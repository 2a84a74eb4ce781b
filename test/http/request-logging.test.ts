import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ask, freePort, runVerdict, waitFor } from '../helpers/child.js';

// With request logging off (the default level, info), a request's logger is created only when
// something is logged for it: what is logged still names the request, by an id of its own.

const CHECK = { principal: { attributes: { role: 'reader' } }, resource: { attributes: { id: 'doc' } }, action: 'read' };

t.test('at the default level: no line for a check, a warning for a request names it by a UUID-shaped id of its own', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-request-logging-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = runVerdict(t, ['start', '--store', 'embedded', '--port', String(port), '--data-dir', dir, '--min-revision-wait-ms', '10'], { LOG_LEVEL: 'info' });
  await waitFor(url, '/ready', 200, server);
  t.equal((await ask(url, 'POST', '/check', CHECK)).status, 200);
  // A revision this process never reaches: 503, logged as a warning of the request.
  for (let round = 0; round < 2; round++) {
    t.equal((await ask(url, 'POST', '/check', CHECK, { 'verdict-min-revision': '999999' })).status, 503);
  }
  server.process.kill('SIGTERM');
  const { code, stdout } = await server.exited;
  t.equal(code, 0);
  const lines = stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { msg: string; reqId?: string; req?: unknown });
  t.notOk(lines.some((line) => line.req !== undefined), 'no request lines at info');
  const warnings = lines.filter((line) => line.msg === 'service unavailable');
  t.equal(warnings.length, 2, 'each unavailable answer is logged');
  for (const warning of warnings) t.match(warning.reqId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.not(warnings[0]!.reqId, warnings[1]!.reqId, 'each request has an id of its own');
});
