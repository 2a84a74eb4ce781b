import t, { type Test } from 'tap';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { VerdictClient, VerdictRequestError, VerdictUnavailableError, type VerdictError } from '../../clients/node/src/index.js';
import { startServer } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import { answeredAlone, roleRule } from './helpers.js';

// What callers of the Node client get when a call fails: a VerdictError with the server's status,
// detail and request id, or the reason no answer came; never a caller left waiting.

const READ = { principal: { attributes: { role: 'reader' } }, resource: { uri: 'doc:1' }, action: 'read' };

/** Settles every promise, as the outcome each caller saw. */
const outcomes = (calls: Promise<unknown>[]) => Promise.all(calls.map((call) => call.then((value) => ({ value }), (error: unknown) => ({ error }))));

t.test('a 422 and a 413 fail only the caller whose check it was, with the server’s detail and request id', async (t) => {
  const server = await startServer({ bodyLimit: 4096 });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', roleRule('readers', 'reader'))).status, 200);
  const client = new VerdictClient({ url: server.url });
  t.teardown(() => client.close());
  const large = { ...READ, context: { note: 'x'.repeat(5000) } };
  const refused = { ...READ, principal: { uri: 5 } };
  const results = await outcomes([client.check(READ), client.check(large), client.check(READ), client.check(refused as never), client.check(READ)]);
  t.same(results.map((result) => ('value' in result ? (result.value as { allowed: boolean }).allowed : 'failed')), [true, 'failed', true, 'failed', true], 'the others are answered');
  const tooLarge = (results[1] as { error: VerdictError }).error;
  t.ok(tooLarge instanceof VerdictRequestError);
  t.equal(tooLarge.status, 413);
  t.match(tooLarge.message, /413/);
  const invalid = (results[3] as { error: VerdictError }).error;
  t.ok(invalid instanceof VerdictRequestError);
  t.equal(invalid.status, 422);
  t.same({ detail: invalid.detail }, JSON.parse((await answeredAlone(server, refused)).body), 'the detail /check gives it alone');
  t.match(invalid.detail, [{ loc: ['body', 'principal', 'uri'] }]);
  t.match(invalid.requestId, /./, 'with the request id the server logged');
  t.equal(invalid.retryable, false);
});

/** A plain HTTP server standing in for Verdict where a real one cannot be made to answer so on demand. */
async function standIn(t: Test, handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<string> {
  const server = createHttpServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

t.test('a 503 (from a stand-in server: a real one cannot be made unavailable on demand): checks are retried, a write is not', async (t) => {
  const seen: string[] = [];
  let unavailable = 2;
  const url = await standIn(t, (request, response) => {
    seen.push(`${request.method} ${request.url}`);
    request.resume();
    request.on('end', () => {
      if (unavailable-- > 0 || request.method === 'POST' && request.url!.startsWith('/admin')) {
        response.writeHead(503, { 'content-type': 'application/json', 'x-request-id': 'r-1' }).end(JSON.stringify({ detail: 'This process serves policy revision 3; revision 4 did not reach it within 2000 ms.' }));
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json', 'verdict-revision': '4' }).end(JSON.stringify({ allowed: true, reason: 'Rule r allowed the action in policy p' }));
    });
  });
  const client = new VerdictClient({ url, retries: 2 });
  t.teardown(() => client.close());
  t.same(await client.check(READ), { allowed: true, reason: 'Rule r allowed the action in policy p' }, 'answered on the third try');
  t.same(seen, ['POST /check', 'POST /check', 'POST /check']);
  seen.length = 0;
  const write = await client.registerEntity({ uri: 'user:a', type: 'principal', attributes: { role: 'r' } }).catch((error: unknown) => error);
  t.ok(write instanceof VerdictUnavailableError);
  t.match(write, { status: 503, requestId: 'r-1' });
  t.match((write as VerdictError).detail, /did not reach it within/);
  t.same(seen, ['POST /admin/fetchers/registry/entities'], 'a write is sent once');
});

t.test('no answer in time (from a peer that accepts and never answers): every caller fails, saying so', async (t) => {
  const sockets = new Set<Socket>();
  const silent = createTcpServer((socket) => sockets.add(socket.on('data', () => {})));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise<void>((resolve) => silent.close(() => resolve()));
  });
  const client = new VerdictClient({ url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, timeoutMs: 200, retries: 1 });
  t.teardown(() => client.close());
  const results = await outcomes(Array.from({ length: 10 }, () => client.check(READ)));
  for (const result of results) t.match(result, { error: { name: 'VerdictTimeoutError', status: undefined, message: /no answer within 200 ms/ } });
});

t.test('a bulk of checks issued before and after a write waits for the highest revision among them (recording stand-in server)', async (t) => {
  const minRevisions: (string | undefined)[] = [];
  const standIn = createHttpServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.url === '/admin/fetchers/registry/entities') {
        response.writeHead(200, { 'content-type': 'application/json', 'verdict-revision': '7' }).end(JSON.stringify({ uri: 'user:a', type: 'principal', attributes: [], registered_at: new Date().toISOString() }));
        return;
      }
      minRevisions.push(request.headers['verdict-min-revision'] as string | undefined);
      const checks = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown[];
      response.writeHead(200, { 'content-type': 'application/json', 'verdict-revision': '7' }).end(JSON.stringify(checks.map(() => ({ allowed: true, reason: 'stand-in' }))));
    });
  });
  await new Promise<void>((resolve) => standIn.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => standIn.close(() => resolve())));
  const client = new VerdictClient({ url: `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`, batching: { windowMs: 500 } });
  t.teardown(() => client.close());
  const before = client.check(READ);
  await client.registerEntity({ uri: 'user:a', type: 'principal', attributes: { role: 'reader' } });
  const after = client.check(READ);
  await Promise.all([before, after]);
  t.same(minRevisions, ['7'], "one bulk, at the write's revision: the highest of its checks'");
});

t.test('a bulk halved on 413 answers every caller (each half sent, none lost)', async (t) => {
  const server = await startServer({ bodyLimit: 2048 });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', roleRule('readers', 'reader'))).status, 200);
  const client = new VerdictClient({ url: server.url });
  t.teardown(() => client.close());
  const checks = Array.from({ length: 9 }, (_, index) => ({ ...READ, context: { note: 'x'.repeat(300), index } }));
  let settled = 0;
  const calls = checks.map((check) => client.check(check).finally(() => settled++));
  await until(() => settled === calls.length, `every one of ${calls.length} callers answered`, 10_000);
  t.same((await outcomes(calls)).map((result) => ('value' in result ? (result.value as { allowed: boolean }).allowed : 'failed')), Array(9).fill(true));
});

t.test('more refused checks than one answer lists (20) stay in bulks: the listed ones fail, the rest go again as a bulk', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', roleRule('readers', 'reader'))).status, 200);
  const client = new VerdictClient({ url: server.url });
  t.teardown(() => client.close());
  const refused = { ...READ, principal: { uri: 5 } } as never;
  const checks = Array.from({ length: 120 }, (_, index) => (index % 2 === 0 ? refused : READ));
  const requests = async () => {
    const text = (await server.call('GET', '/metrics')).body as string;
    return [...text.matchAll(/^verdict_http_request_duration_seconds_count\{[^}]*route="\/check(\/bulk)?"[^}]*\} (\d+)/gm)].reduce((sum, match) => sum + Number(match[2]), 0);
  };
  const before = await requests();
  const results = await outcomes(checks.map((check) => client.check(check)));
  t.same(results.map((result) => ('value' in result ? 'allowed' : (result.error as VerdictError).status)), checks.map((check) => (check === READ ? 'allowed' : 422)));
  const sent = (await requests()) - before;
  t.ok(sent <= 6, `${sent} requests for ${checks.length} checks, 60 of them refused: the 60 need 3 answers of 20`);
});
