import t, { type Test } from 'tap';
import { operationsOf, type OpenApiDocument } from '../helpers/openapi.js';
import { request } from 'undici';
import { startServer, type TestServer } from '../helpers/server.js';

/**
 * Every answer the app gives names the policy revision it serves in `verdict-revision`: successes
 * and every error, on every route (the check routes set it without a hook, the others through one),
 * the documentation and the dashboard, unknown paths and methods. Only an error raised before
 * routing (a malformed percent-escape) has none, as before.
 */

const CHECK = { principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } }, action: 'read' };
const ALLOW_READ = { name: 'p', rules: [{ name: 'r', effect: 'allow', actions: ['read'] }] };

async function revisionOf(server: TestServer, method: string, path: string, body?: string, headers: Record<string, string> = {}) {
  const response = await request(server.url + path, {
    method: method as 'GET',
    body,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
  });
  await response.body.dump();
  return { status: response.statusCode, revision: response.headers['verdict-revision'] };
}

/** What each route and error case answers, with the status it must have. */
function cases(routes: [string, string][]): [string, string, string | undefined, Record<string, string>, number][] {
  const check = JSON.stringify(CHECK);
  const bulk = JSON.stringify([CHECK, CHECK]);
  return [
    ['POST', '/check', check, {}, 200],
    ['POST', '/check?explain=true', check, {}, 200],
    ['POST', '/check/bulk', bulk, {}, 200],
    ['POST', '/check/bulk?explain=true', bulk, {}, 200],
    ['POST', '/check-access', check, {}, 200],
    // Errors of the check routes, raised before, in and after their handlers.
    ['POST', '/check', '{"principal":', {}, 400],
    ['POST', '/check/bulk', '[{"principal":', {}, 400],
    ['POST', '/check', check, { 'verdict-min-revision': 'soon' }, 400],
    ['POST', '/check/bulk', bulk, { 'verdict-min-revision': 'soon' }, 400],
    ['POST', '/check', check, { 'verdict-min-revision': '99' }, 503],
    ['POST', '/check/bulk', bulk, { 'verdict-min-revision': '99' }, 503],
    ['POST', '/check', JSON.stringify({ ...CHECK, principal: { attributes: { a: 1 }, uri: 'x' }, principal_uri: 'y' }), {}, 400],
    ['POST', '/check', JSON.stringify({ ...CHECK, action: 7 }), {}, 422],
    ['POST', '/check/bulk', JSON.stringify([{ ...CHECK, action: 7 }]), {}, 422],
    ['POST', '/check', JSON.stringify({ ...CHECK, padding: 'x'.repeat(70_000) }), {}, 413],
    ['POST', '/check/bulk', JSON.stringify([{ ...CHECK, padding: 'x'.repeat(70_000) }]), {}, 413],
    ['POST', '/check', undefined, { 'content-type': 'text/plain' }, 400],
    ['POST', '/check', undefined, {}, 422],
    ['POST', '/check/bulk', undefined, {}, 422],
    ['DELETE', '/check', undefined, {}, 405],
    // The other routes, the documentation, the dashboard and unknown paths.
    ['GET', '/docs', undefined, {}, 200],
    ['GET', '/docs/json', undefined, {}, 200],
    ['GET', '/dashboard', undefined, {}, 301],
    ['GET', '/dashboard/', undefined, {}, 200],
    ['GET', '/dashboard/no-such-file.js', undefined, {}, 404],
    ['GET', '/no-such-path', undefined, {}, 404],
    ['HEAD', '/health', undefined, {}, 200],
    ...routes
      .filter(([method]) => method === 'GET')
      .map(([method, path]): [string, string, undefined, Record<string, string>, number] => [method, path.replace(/\{[^}]+\}/g, 'absent'), undefined, {}, -1]),
  ];
}

t.test('every answer, success or error, on every route carries the revision it was given at', async (t) => {
  // In pool mode every bulk, however small, is read and decided in a worker thread.
  for (const evaluation of ['auto', 'pool'] as const) {
    await t.test(evaluation, (t) => everyAnswerCarriesTheRevision(t, evaluation));
  }
});

async function everyAnswerCarriesTheRevision(t: Test, evaluation: 'auto' | 'pool') {
  const server = await startServer({ evaluation, bodyLimit: 65_536, minRevisionWaitMs: 50 });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', ALLOW_READ)).status, 200);
  const document = (await server.call('GET', '/docs/json')).body as OpenApiDocument;
  const routes = operationsOf(document).map(({ method, route }): [string, string] => [method, route]);
  t.ok(routes.length > 20, 'the routes come from the OpenAPI document');
  for (const [method, path, body, headers, status] of cases(routes)) {
    const answer = await revisionOf(server, method, path, body, headers);
    const name = `${method} ${path.slice(0, 40)}${headers['verdict-min-revision'] ? ' (min revision)' : ''}`;
    if (status !== -1) t.equal(answer.status, status, `${name}: ${status}`);
    t.equal(answer.revision, '1', `${name}: verdict-revision`);
  }
}

t.test('an error raised before routing carries no revision, as before', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const answer = await revisionOf(server, 'GET', '/admin/policies/%zz');
  t.equal(answer.status, 400);
  t.equal(answer.revision, undefined);
});

t.test('the revision on a check is the one it was decided at, after a write moved it, in either evaluation', async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    await t.test(evaluation, (t) => revisionsFollowWrites(t, evaluation));
  }
});

async function revisionsFollowWrites(t: Test, evaluation: 'inline' | 'pool') {
  const server = await startServer({ evaluation });
  t.teardown(server.close);
  for (let revision = 1; revision <= 3; revision++) {
    const write = revision === 1 ? server.call('POST', '/admin/policies', ALLOW_READ) : server.call('PUT', '/admin/policies/p', ALLOW_READ);
    t.equal((await write).headers['verdict-revision'], String(revision));
    t.equal((await server.call('POST', '/check', CHECK)).headers['verdict-revision'], String(revision), 'POST /check');
    t.equal((await server.call('POST', '/check/bulk', [CHECK])).headers['verdict-revision'], String(revision), 'POST /check/bulk');
  }
}
