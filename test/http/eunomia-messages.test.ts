import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchDir, startServer, type TestServer } from '../helpers/server.js';

// Every message Eunomia's clients can see for a check they made wrong, pinned word for word: where a
// side is empty, where it is missing, and where an attribute conflicts with the registry. Eunomia's
// sentence stays where no key sets are configured and always under --operator-style eunomia; where
// tokens are possible, the sentence names the token too.

const EMPTY_SIDE = "Either 'uri' or non-empty 'attributes' must be provided";
const EMPTY_PRINCIPAL_WITH_TOKENS = "Either 'uri' or non-empty 'attributes' or a 'token' must be provided";

async function server(t: Test, withTokens: boolean, operatorStyle: 'spec' | 'eunomia' = 'spec'): Promise<TestServer> {
  const dir = scratchDir(t);
  writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [] }));
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ key_sets: [{ name: 'local', jwks_file: 'jwks.json' }] }));
  const started = await startServer({ operatorStyle, ...(withTokens && { tokens: join(dir, 'tokens.json') }) });
  t.teardown(started.close);
  return started;
}

const issuesOf = async (target: TestServer, path: string, body: unknown) => {
  const answer = await target.call('POST', path, body);
  return { status: answer.status, detail: answer.body.detail };
};

t.test("an empty side gets Eunomia's sentence where no key sets are configured, on /check, bulk items and /check-access", async (t) => {
  const target = await server(t, false);
  for (const side of ['principal', 'resource'] as const) {
    const body = { principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } }, [side]: { uri: null, attributes: {} } };
    t.same(await issuesOf(target, '/check', body), { status: 422, detail: [{ loc: ['body', side], msg: EMPTY_SIDE, type: 'value_error' }] }, side);
    t.same(await issuesOf(target, '/check/bulk', [body]), { status: 422, detail: [{ loc: ['body', 0, side], msg: EMPTY_SIDE, type: 'value_error' }] }, `${side} in a bulk`);
    t.same(await issuesOf(target, '/check-access', body), { status: 422, detail: [{ loc: ['body', side], msg: EMPTY_SIDE, type: 'value_error' }] }, `${side} on /check-access`);
  }
});

t.test('a missing side is "Field required", as Eunomia says it', async (t) => {
  const target = await server(t, false);
  t.same(await issuesOf(target, '/check', { resource: { attributes: { b: 1 } } }), { status: 422, detail: [{ loc: ['body', 'principal'], msg: 'Field required', type: 'missing' }] });
  t.same(await issuesOf(target, '/check', { principal: { attributes: { a: 1 } } }), { status: 422, detail: [{ loc: ['body', 'resource'], msg: 'Field required', type: 'missing' }] });
});

t.test('where tokens are possible, an empty principal names the token; under --operator-style eunomia it never does', async (t) => {
  const withTokens = await server(t, true);
  const emptyPrincipal = { principal: {}, resource: { attributes: { b: 1 } } };
  t.same(await issuesOf(withTokens, '/check', emptyPrincipal), { status: 422, detail: [{ loc: ['body', 'principal'], msg: EMPTY_PRINCIPAL_WITH_TOKENS, type: 'value_error' }] });
  t.same(await issuesOf(withTokens, '/check', { principal: { attributes: { a: 1 } }, resource: {} }), { status: 422, detail: [{ loc: ['body', 'resource'], msg: EMPTY_SIDE, type: 'value_error' }] }, 'a resource has no token');
  const eunomiaStyle = await server(t, true, 'eunomia');
  t.same(await issuesOf(eunomiaStyle, '/check', emptyPrincipal), { status: 422, detail: [{ loc: ['body', 'principal'], msg: EMPTY_SIDE, type: 'value_error' }] });
});

t.test('a conflict with the registry, where admin authentication is off, is Eunomia\'s sentence', async (t) => {
  const target = await server(t, false);
  t.equal((await target.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:a', type: 'principal', attributes: { role: 'staff' } })).status, 200);
  t.same(await issuesOf(target, '/check', { principal: { uri: 'user:a', attributes: { role: 'admin' } }, resource: { attributes: { b: 1 } } }), {
    status: 400,
    detail: "For entity 'user:a', attribute 'role' has more than one value",
  });
});
