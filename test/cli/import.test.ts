import t, { type Test } from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { dirname } from 'node:path';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runVerdict, freePort } from '../helpers/child.js';
import { startServer, type TestServer } from '../helpers/server.js';

// `verdict import entities <file>`: the real CLI against a real server on its embedded store.

const BASE = '/admin/fetchers/registry/entities';

function jsonLines(t: Test, lines: string[]): string {
  const directory = mkdtempSync(join(tmpdir(), 'verdict-import-'));
  t.teardown(() => rmSync(directory, { recursive: true, force: true }));
  const file = join(directory, 'entities.jsonl');
  writeFileSync(file, lines.map((line) => `${line}\n`).join(''));
  return file;
}

const entityLine = (index: number) => JSON.stringify({ uri: `user:${index}`, type: 'principal', attributes: { index } });
const portOf = (server: TestServer) => new URL(server.url).port;
const count = async (server: TestServer, headers: Record<string, string> = {}) => (await server.call('GET', `${BASE}/$count`, undefined, headers)).body;

function importFile(t: Test, server: TestServer, file: string, env: NodeJS.ProcessEnv = {}) {
  return runVerdict(t, ['import', 'entities', file, '--host', '127.0.0.1', '--port', portOf(server)], { ADMIN_API_KEY: '', ...env }).exited;
}

t.test('imports a file in batches, reporting progress, skipping blank lines', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const lines = Array.from({ length: 2500 }, (_, index) => entityLine(index));
  lines.splice(1200, 0, '', '   ');
  const file = jsonLines(t, lines);
  const run = await importFile(t, server, file, { BULK_REGISTER_MAX_ENTITIES: '1000' });
  t.equal(run.code, 0, `exit 0 (${run.stderr})`);
  const progress = run.stdout.split('\n').filter((line) => line.startsWith('imported '));
  t.same(progress.slice(0, 3), ['imported 1000 entities (to line 1000)', 'imported 2000 entities (to line 2002)', 'imported 2500 entities (to line 2502)']);
  t.match(progress[3], new RegExp(`^imported 2500 entities from ${file} in [0-9.]+ s \\(\\d+ entities/s\\)$`));
  t.equal(await count(server), 2500, 'every entity registered');
  const last = await server.call('GET', `${BASE}/user%3A2499`);
  t.same(last.body.attributes.map((a: { key: string; value: unknown }) => [a.key, a.value]), [['index', 2499]]);
});

t.test('a refused batch: exit 1, the line and the reason, and the batches before it kept', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  await server.call('POST', BASE, JSON.parse(entityLine(1502)));
  const file = jsonLines(t, Array.from({ length: 2000 }, (_, index) => entityLine(index + 1)));
  const run = await importFile(t, server, file, { BULK_REGISTER_MAX_ENTITIES: '1000' });
  t.equal(run.code, 1);
  t.equal(run.stderr, "verdict: line 1502: Entity 'user:1502' already exists (1000 entities before it were imported; nothing from line 1001 on)\n");
  t.equal(await count(server), 1001, 'the first batch and the entity registered before');
  t.equal((await server.call('GET', `${BASE}/user%3A1001`)).status, 404, 'nothing of the refused batch');

  const invalid = jsonLines(t, [entityLine(5000), '{"uri": "user:5001", "attributes": {}}', entityLine(5002)]);
  const refused = await importFile(t, server, invalid);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /^verdict: line 2: attributes: .+ \(nothing was imported; nothing from line 1 on\)\n$/, 'a validation error names its line and field');

  const malformed = jsonLines(t, [entityLine(6000), '{"uri": "user:6001",']);
  const broken = await importFile(t, server, malformed);
  t.equal(broken.code, 1);
  t.match(broken.stderr, /^verdict: line 2: not valid JSON \(/);
  t.equal(await count(server), 1001, 'a file refused before sending anything registers nothing');
});

t.test('a uri given twice in one batch: both places named as lines of the file, never as items of the batch', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const file = jsonLines(t, [entityLine(1), entityLine(2), '', entityLine(1)]);
  const run = await importFile(t, server, file);
  t.equal(run.code, 1);
  t.equal(run.stderr, "verdict: line 4: entity 'user:1' is also on line 1 (nothing was imported; nothing from line 1 on)\n");
});

t.test('the admin key comes from ADMIN_API_KEY, as for every admin call', async (t) => {
  const server = await startServer({ adminAuthRequired: true, adminApiKey: 'import-key', adminAuthFailuresPerMinute: 1000 });
  t.teardown(server.close);
  const file = jsonLines(t, [entityLine(1), entityLine(2)]);
  const refused = await importFile(t, server, file, { ADMIN_API_KEY: 'wrong' });
  t.equal(refused.code, 1);
  t.match(refused.stderr, /^verdict: lines 1-2: the server answered 401 Invalid API key/);
  const accepted = await importFile(t, server, file, { ADMIN_API_KEY: 'import-key' });
  t.equal(accepted.code, 0, accepted.stderr);
  t.equal(await count(server, { 'way-api-key': 'import-key' }), 2);
});

t.test('a .env beside the file never chooses where the import, and its admin key, go', async (t) => {
  const seen: IncomingHttpHeaders[] = [];
  const trap = createServer((request, response) => {
    seen.push(request.headers);
    request.resume().on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('[]'));
  });
  await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve));
  t.teardown(() => trap.close());
  const file = jsonLines(t, [entityLine(1)]);
  const { port } = trap.address() as { port: number };
  writeFileSync(join(dirname(file), '.env'), `HOST=127.0.0.1\nPORT=${port}\n`);
  // No flag or variable names a target: the import goes to the default address, never the file's.
  const run = await runVerdict(t, ['import', 'entities', file], { ADMIN_API_KEY: 'the-operators-key' }, dirname(file)).exited;
  t.same(seen, [], 'the server the .env names is never called');
  t.match(`${run.stdout}${run.stderr}`, /127\.0\.0\.1:8421|imported 1 entities/, 'it went to the default address');
});

t.test('no server, no file, no arguments: one line each', async (t) => {
  const port = await freePort();
  const file = jsonLines(t, [entityLine(1)]);
  const unreachable = await runVerdict(t, ['import', 'entities', file, '--port', String(port)]).exited;
  t.equal(unreachable.code, 1);
  t.match(unreachable.stderr, new RegExp(`^verdict: cannot reach Verdict at 127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`));
  const missing = await runVerdict(t, ['import', 'entities', '/nonexistent/entities.jsonl', '--port', String(port)]).exited;
  t.equal(missing.code, 1);
  t.match(missing.stderr, /^verdict: cannot read \/nonexistent\/entities\.jsonl: ENOENT/);
  const usage = await runVerdict(t, ['import', 'policies', file]).exited;
  t.equal(usage.code, 2);
  t.match(usage.stderr, /^verdict: usage: verdict import entities <file\.jsonl>/);
});
