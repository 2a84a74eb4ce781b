// Explanations are for operators: they show registered attributes and policy constants, which the
// admin API keeps behind its key. With admin authentication on, every route that explains asks for a
// key of any role; the same call without `explain` is answered to anyone, as always.
import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { keyDigest } from '../../src/admin-keys.js';
import { scratchDir, startServer, succeeded, type TestServer } from '../helpers/server.js';

const ADMIN_KEY = 'admin-k3y';
const READ_KEY = 'read-k3y';
const SECRET = 'vip-7731';
const POLICY = {
  name: 'vip',
  default_effect: 'deny',
  rules: [{ name: 'vips', effect: 'allow', actions: ['read'], principal_conditions: [{ path: 'attributes.tier', operator: '==', value: SECRET }], resource_conditions: [] }],
};
const CHECK = { principal: { uri: 'user:alice' }, resource: { attributes: { kind: 'doc' } }, action: 'read' };
const EVALUATION = { subject: { type: 'user', id: 'alice' }, resource: { type: 'doc', id: 'd1' }, action: { name: 'read' } };

/** Every route that explains, with a body that it decides. */
const EXPLAINING = [
  { path: '/check', body: CHECK },
  { path: '/check/bulk', body: [CHECK, CHECK] },
  { path: '/access/v1/evaluation', body: EVALUATION },
  { path: '/access/v1/evaluations', body: { evaluations: [EVALUATION] } },
];

/** A keys file with an admin key and a read key. */
function keysFile(t: Test): string {
  const path = join(scratchDir(t), 'admin-keys');
  const line = (name: string, role: string, key: string) => `${name} ${role} ${keyDigest(key).toString('hex')}`;
  writeFileSync(path, `${line('operator', 'admin', ADMIN_KEY)}\n${line('viewer', 'read', READ_KEY)}\n`);
  return path;
}

async function protectedServer(t: Test, overrides = {}): Promise<TestServer> {
  const server = await startServer({ adminAuthRequired: true, adminAuthFailuresPerMinute: 100_000, adminKeysFile: keysFile(t), ...overrides });
  t.teardown(server.close);
  const key = { 'WAY-API-KEY': ADMIN_KEY };
  t.equal((await server.call('POST', '/admin/policies', POLICY, key)).status, 200);
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:alice', attributes: { tier: 'basic', email: 'alice@example.com' } }, key)).status, 200);
  return server;
}

t.test('with admin authentication on, no route explains to a caller without a key', async (t) => {
  const server = await protectedServer(t);
  for (const { path, body } of EXPLAINING) {
    for (const [how, headers] of [['no key', {}], ['a wrong key', { 'WAY-API-KEY': 'nope' }]] as const) {
      const refused = await server.call('POST', `${path}?explain=true`, body, headers);
      t.equal(refused.status, 401, `${path}, ${how}: 401`);
      t.match(refused.body.detail, /explain=true.*WAY-API-KEY/s, `${path}, ${how}: the detail names what explanations need`);
      const text = JSON.stringify(refused.body);
      t.notOk(text.includes(SECRET) || text.includes('alice@example.com'), `${path}, ${how}: nothing registered, no policy constant`);
    }
    const plain = await server.call('POST', path, body);
    t.equal(plain.status, 200, `${path} without explain: answered to anyone`);
    t.notOk(JSON.stringify(plain.body).includes(SECRET), `${path} without explain: no policy constant`);
  }
});

t.test('a key of either role may ask for explanations', async (t) => {
  const server = await protectedServer(t);
  for (const key of [ADMIN_KEY, READ_KEY]) {
    for (const { path, body } of EXPLAINING) {
      const explained = await server.call('POST', `${path}?explain=true`, body, { 'WAY-API-KEY': key });
      t.equal(explained.status, 200, `${path} with a key: 200`);
      t.ok(JSON.stringify(explained.body).includes(SECRET), `${path} with a key: the explanation names the constant`);
    }
  }
});

t.test('refused explanations count as failed authentications from an address that is not local', async (t) => {
  const server = await protectedServer(t, { adminAuthFailuresPerMinute: 2, trustProxy: ['127.0.0.1'] });
  const remote = { 'x-forwarded-for': '203.0.113.9' };
  for (let attempt = 0; attempt < 2; attempt++) t.equal((await server.call('POST', '/check?explain=true', CHECK, remote)).status, 401);
  t.equal((await server.call('POST', '/check?explain=true', CHECK, { ...remote, 'WAY-API-KEY': ADMIN_KEY })).status, 429, 'locked out like the admin API');
  t.equal((await server.call('POST', '/check', CHECK, remote)).status, 200, 'a check without explain is never locked out');
});

t.test('with admin authentication off (loopback), explanations stay open', async (t) => {
  const server = await startServer({ adminAuthRequired: false });
  t.teardown(server.close);
  await succeeded(server, 'POST', '/admin/policies', POLICY);
  for (const { path, body } of EXPLAINING) t.equal((await server.call('POST', `${path}?explain=true`, body)).status, 200, path);
});
