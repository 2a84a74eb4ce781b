import t, { type Test } from 'tap';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import { startServer } from '../helpers/server.js';
import { runVerdict } from '../helpers/child.js';

// `verdict policies export` as users run it (the real CLI), and a server started on what it wrote.

const itDesk = (department: string) => ({
  name: 'IT desk',
  rules: [
    {
      name: 'IT admins',
      effect: 'allow',
      principal_conditions: [{ path: 'attributes.department', operator: '==', value: department }],
      resource_conditions: [{ path: 'attributes.kind', operator: '==', value: 'laptop' }],
      actions: ['administer'],
    },
  ],
});

const CHECK = { principal: { attributes: { department: 'it' } }, resource: { attributes: { kind: 'laptop' } }, action: 'administer' };

function policyDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-export-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('verdict policies export: from a running server and from a data directory, then served from the files', async (t) => {
  const source = await startServer();
  t.teardown(source.close);
  const second = { ...itDesk('sales'), name: 'Sales desk', default_effect: 'allow' };
  for (const policy of [itDesk('it'), second]) t.equal((await source.call('POST', '/admin/policies', policy)).status, 200);
  const stored = (await source.call('GET', '/admin/policies')).body;

  const fromServer = join(policyDir(t), 'policies');
  const exported = await runVerdict(t, ['policies', 'export', fromServer, '--url', source.url]).exited;
  t.equal(exported.code, 0, exported.stderr);
  t.equal(exported.stdout, `wrote 2 policies to ${fromServer}\n`);
  t.same(readdirSync(fromServer), ['001-it-desk.yaml', '002-sales-desk.yaml'], 'numbered in creation order');
  t.same(YAML.parse(readFileSync(join(fromServer, '001-it-desk.yaml'), 'utf8')), stored[0]);

  const fromData = join(policyDir(t), 'policies');
  const fromStore = await runVerdict(t, ['policies', 'export', fromData, '--data-dir', source.dataDir]).exited;
  t.equal(fromStore.code, 0, fromStore.stderr);
  t.same(readdirSync(fromData), readdirSync(fromServer));

  const again = await runVerdict(t, ['policies', 'export', fromServer, '--url', source.url]).exited;
  t.equal(again.code, 2, 'a directory that holds policy files is refused');
  t.match(again.stderr, /already holds policy files/);

  const files = await startServer({ policiesDir: fromServer });
  t.teardown(files.close);
  t.same((await files.call('GET', '/admin/policies')).body, stored, 'the same policies, in the same order');
  const checks = [CHECK, { ...CHECK, principal: { attributes: { department: 'sales' } } }, { ...CHECK, action: 'read' }];
  t.same((await files.call('POST', '/check/bulk', checks)).body, (await source.call('POST', '/check/bulk', checks)).body, 'the same decisions');
});

/** A real HTTP server on loopback answering each request with `answer`; it keeps the headers of every request it got. */
async function recordingServer(t: Test, answer: (path: string, response: import('node:http').ServerResponse) => void) {
  const received: { path: string; headers: IncomingHttpHeaders }[] = [];
  const server: Server = createServer((request, response) => {
    received.push({ path: request.url!, headers: request.headers });
    answer(request.url!, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, received };
}

const KEY = 'the-admin-key-of-the-first-server';

t.test('verdict policies export --url: a redirect to another origin never gets the admin key', async (t) => {
  const elsewhere = await recordingServer(t, (_path, response) => response.writeHead(200, { 'content-type': 'application/json' }).end('[]'));
  const redirecting = await recordingServer(t, (path, response) => response.writeHead(302, { location: `${elsewhere.url}${path}` }).end());
  const dir = join(policyDir(t), 'policies');
  const exported = await runVerdict(t, ['policies', 'export', dir, '--url', redirecting.url], { ADMIN_API_KEY: KEY }).exited;
  t.equal(redirecting.received[0]?.headers['way-api-key'], KEY, 'the server named by --url got the key');
  t.notOk(elsewhere.received.some(({ headers }) => JSON.stringify(headers).includes(KEY)), 'the server it redirected to never saw it');
  t.equal(exported.code, 2, 'the export stops');
  t.match(exported.stderr, new RegExp(`redirected to ${elsewhere.url}/admin/policies.*another origin.*--url ${elsewhere.url}`), 'saying where it was sent and what to do');
  t.notMatch(exported.stderr + exported.stdout, KEY, 'never printing the key');
});

t.test('verdict policies export --url: a redirect within the same origin is followed, with the key', async (t) => {
  const policy = { version: '1.0', name: 'moved', description: null, rules: [], default_effect: 'deny' };
  const server = await recordingServer(t, (path, response) => {
    if (path === '/admin/policies') return response.writeHead(308, { location: '/v2/admin/policies' }).end();
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify([policy]));
  });
  const dir = join(policyDir(t), 'policies');
  const exported = await runVerdict(t, ['policies', 'export', dir, '--url', server.url], { ADMIN_API_KEY: KEY }).exited;
  t.equal(exported.code, 0, exported.stderr);
  t.same(server.received.map(({ path, headers }) => [path, headers['way-api-key']]), [['/admin/policies', KEY], ['/v2/admin/policies', KEY]]);
  t.same(readdirSync(dir), ['001-moved.yaml']);
});
