import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import express from 'express';
import { request } from 'undici';
import {
  expressGuard,
  VerdictAdminKeyError,
  VerdictClient,
  VerdictCredentialError,
  VerdictError,
  VerdictRequestError,
  VerdictTimeoutError,
  VerdictUnavailableError,
} from '../../clients/node/src/index.js';
import { scratchDir, startServer } from '../helpers/server.js';
import { AUDIENCE, ISSUER, signingKey, tokenFor } from '../helpers/token-issuer.js';
import { roleRule } from './helpers.js';

// The Node client's errors, one kind for each thing a caller does about it, against a real server
// with an admin key and verified tokens: a request of its own fault, a refused credential, a missing
// or wrong admin key, a server gone, and a caller's own bound (timeout, abort signal).

const ADMIN_KEY = 'an-admin-key-long-enough-to-be-accepted-0123456789';
const READ = { principal: { attributes: { role: 'reader' } }, resource: { uri: 'doc:1' }, action: 'read' };

/** What a call rejected with. */
const failureOf = (call: Promise<unknown>) => call.then((value) => { throw new Error(`expected a failure, got ${JSON.stringify(value)}`); }, (error: unknown) => error);

t.test('each failure is its own kind of VerdictError, with the status, detail and request id of the answer', async (t) => {
  const dir = scratchDir(t);
  const key = await signingKey('k1');
  writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [key.publicJwk] }));
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_file: join(dir, 'jwks.json') }] }));
  const server = await startServer({ adminAuthRequired: true, adminApiKey: ADMIN_KEY, tokens: join(dir, 'tokens.json') });
  const admin = new VerdictClient({ url: server.url, adminKey: ADMIN_KEY, retries: 0 });
  t.teardown(() => admin.close());
  t.equal((await server.call('POST', '/admin/policies', roleRule('readers', 'reader'), { 'way-api-key': ADMIN_KEY })).status, 200);

  const invalid = await failureOf(admin.check({ ...READ, principal: { uri: 5 } } as never));
  t.ok(invalid instanceof VerdictRequestError && invalid instanceof VerdictError, 'a check the server refuses as written');
  t.match(invalid, { name: 'VerdictRequestError', status: 422, retryable: false, requestId: /./ });
  t.match((invalid as VerdictRequestError).issues, [{ loc: ['body', 'principal', 'uri'] }], 'its issues, located in the request');

  const forged = await tokenFor(await signingKey('k1'), 'alice');
  const refusedToken = await failureOf(admin.check({ principal: { token: forged }, resource: { uri: 'doc:1' }, action: 'read' }));
  t.ok(refusedToken instanceof VerdictCredentialError, 'a token the server does not accept');
  t.match(refusedToken, { status: 401, detail: /signature does not verify/ });

  const keyless = new VerdictClient({ url: server.url, retries: 0 });
  const wrongKey = new VerdictClient({ url: server.url, adminKey: 'not-the-key-but-long-enough-0123456789', retries: 0 });
  t.teardown(() => Promise.all([keyless.close(), wrongKey.close()]));
  for (const [what, client] of [['no admin key', keyless], ['a wrong admin key', wrongKey]] as const) {
    const write = await failureOf(client.registerEntity({ uri: 'user:a', type: 'principal', attributes: { role: 'r' } }));
    t.ok(write instanceof VerdictAdminKeyError, what);
    t.match(write, { status: 401 }, what);
  }
  t.ok((await admin.registerEntity({ uri: 'user:a', type: 'principal', attributes: { role: 'r' } })).uri, 'the right key writes');

  await server.close();
  const gone = await failureOf(admin.check(READ));
  t.ok(gone instanceof VerdictUnavailableError && !(gone instanceof VerdictTimeoutError), 'a server gone');
  t.match(gone, { status: undefined, retryable: true });
});

t.test("a call's own timeout and abort signal end its caller's wait, however long the client's timeout (peer that never answers)", async (t) => {
  const sockets = new Set<Socket>();
  let closing = false;
  const silent = createServer((socket) => (closing ? socket.destroy() : sockets.add(socket.on('data', () => {}))));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const client = new VerdictClient({ url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, timeoutMs: 60_000, retries: 0 });
  // The checks still wait on the silent peer (the second in the batcher, for the first): cut them all, so that the client closes at once.
  t.teardown(async () => {
    closing = true;
    for (const socket of sockets) socket.destroy();
    await client.close();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });
  const timedOut = await failureOf(client.check(READ, { timeoutMs: 50 }));
  t.ok(timedOut instanceof VerdictTimeoutError && timedOut instanceof VerdictUnavailableError);
  t.match(timedOut, { message: /no answer within 50 ms/ });
  const controller = new AbortController();
  const waiting = failureOf(client.check(READ, { signal: controller.signal }));
  controller.abort();
  t.match(await waiting, { name: 'AbortError' }, "an abort rejects with the signal's reason");
  t.match(await failureOf(client.plan({ principal: { attributes: { role: 'reader' } }, action: 'read' }, { signal: AbortSignal.abort() })), { name: 'AbortError' }, 'aborted before it starts');
});

t.test('the Express guard answers 401 with the Bearer challenge for a token Verdict refuses, not 503', async (t) => {
  const dir = scratchDir(t);
  const key = await signingKey('k1');
  writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [key.publicJwk] }));
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_file: join(dir, 'jwks.json') }] }));
  const verdict = await startServer({ tokens: join(dir, 'tokens.json') });
  t.teardown(verdict.close);
  const owners = { name: 'owners', rules: [{ name: 'alice-reads', effect: 'allow', principal_conditions: [{ path: 'attributes.claims.sub', operator: '==', value: 'alice' }], actions: ['read'] }] };
  t.equal((await verdict.call('POST', '/admin/policies', owners)).status, 200);
  const client = new VerdictClient({ url: verdict.url, retries: 0 });
  t.teardown(() => client.close());
  const app = express();
  const bearer = (request: express.Request) => String(request.headers.authorization).replace(/^Bearer /, '');
  app.get('/reports/:id', expressGuard(client, (request: express.Request) => ({ principal: { token: bearer(request) }, resource: { uri: `report:${request.params.id}` }, action: 'read' })), (request, response) => void response.json({ id: request.params.id }));
  const listening = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => listening.once('listening', resolve));
  t.teardown(() => new Promise((resolve) => listening.close(resolve)));
  const get = async (token: string) => {
    const response = await request(`http://127.0.0.1:${(listening.address() as AddressInfo).port}/reports/7`, { headers: { authorization: `Bearer ${token}` } });
    return { status: response.statusCode, challenge: response.headers['www-authenticate'], body: await response.body.json() };
  };
  t.match(await get(await tokenFor(key, 'alice')), { status: 200, body: { id: '7' } });
  t.match(await get(await tokenFor(key, 'bob')), { status: 403 });
  t.match(await get(await tokenFor(await signingKey('k1'), 'alice')), { status: 401, challenge: 'Bearer error="invalid_token"', body: { detail: 'Unauthorized' } }, 'a forged token');
});
