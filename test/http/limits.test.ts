import t, { type Test } from 'tap';
import { ConfigError, DEFAULT_CONFIG, loadConfig, type Config } from '../../src/config/config.js';
import { rmSync } from 'node:fs';
import { startServer, temporaryDataDir, type TestServer } from '../helpers/server.js';
import { ask, freePort, runVerdict, waitFor } from '../helpers/child.js';

const JSON_TYPE = { 'content-type': 'application/json' };
const REGISTRY = '/admin/fetchers/registry/entities';

async function fresh(t: Test, overrides: Partial<Config> = {}): Promise<TestServer> {
  const server = await startServer(overrides);
  t.teardown(server.close);
  return server;
}

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const check = (attributes: Record<string, unknown>) => ({ principal: { attributes }, resource: { attributes: { kind: 'doc' } }, action: 'read' });
const condition = (index: number) => ({ path: `attributes.a${index}`, operator: '==', value: index });
const rule = (name: string, principal = 1, resource = 0) => ({
  name,
  effect: 'allow',
  actions: ['read'],
  principal_conditions: Array.from({ length: principal }, (_, index) => condition(index)),
  resource_conditions: Array.from({ length: resource }, (_, index) => condition(index)),
});

t.test('every limit has a flag, a variable and a default', async (t) => {
  const limits: [string, string, keyof Config, number][] = [
    ['--body-limit', 'BODY_LIMIT', 'bodyLimit', 1024 * 1024],
    ['--max-json-depth', 'MAX_JSON_DEPTH', 'maxJsonDepth', 100],
    ['--max-string-length', 'MAX_STRING_LENGTH', 'maxStringLength', 65_536],
    ['--max-rules-per-policy', 'MAX_RULES_PER_POLICY', 'maxRulesPerPolicy', 1000],
    ['--max-conditions-per-rule', 'MAX_CONDITIONS_PER_RULE', 'maxConditionsPerRule', 256],
    ['--max-page-size', 'MAX_PAGE_SIZE', 'maxPageSize', 1000],
    ['--search-max-candidates', 'SEARCH_MAX_CANDIDATES', 'searchMaxCandidates', 10_000],
    ['--worker-timeout-ms', 'WORKER_TIMEOUT_MS', 'workerTimeoutMs', 10_000],
    ['--admin-auth-failures-per-minute', 'ADMIN_AUTH_FAILURES_PER_MINUTE', 'adminAuthFailuresPerMinute', 10],
  ];
  for (const [flag, variable, field, byDefault] of limits) {
    t.equal(DEFAULT_CONFIG[field], byDefault, `${field} defaults to ${byDefault}`);
    t.equal(loadConfig([], { [variable]: '900' })[field], 900, variable);
    t.equal(loadConfig([flag, '500'], { [variable]: '900' })[field], 500, `${flag} wins over ${variable}`);
    for (const bad of ['0', '-5', 'lots', '1.5']) {
      const refusal = (() => {
        try {
          loadConfig([], { [variable]: bad });
        } catch (error) {
          return error;
        }
      })();
      t.ok(refusal instanceof ConfigError && refusal.message.includes(variable), `${variable}=${bad} is refused, naming it`);
    }
  }
});

t.test('a body over the configured size is 413 naming the limit', async (t) => {
  const server = await fresh(t, { bodyLimit: 2048 });
  const big = JSON.stringify(check({ blob: 'x'.repeat(3000) }));
  for (const path of ['/check', '/check/bulk', '/admin/policies', REGISTRY]) {
    const response = await server.send('POST', path, path === '/check/bulk' ? `[${big}]` : big, JSON_TYPE);
    t.equal(response.status, 413, path);
    t.same(response.body, { detail: 'Request body is larger than the limit of 2048 bytes' });
  }
  t.equal((await server.call('POST', '/check', check({ blob: 'x'.repeat(1000) }))).status, 200, 'within the limit');
});

t.test("an oversized body's 413 reaches fetch (undici), which sends the whole body before it reads", async (t) => {
  // A server in a process of its own, as clients meet it: in this process the client's writes and
  // the server's close would take turns on one event loop, and the race would not show.
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const dataDir = temporaryDataDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const server = runVerdict(t, ['start', '--store', 'embedded', '--port', String(port), '--data-dir', dataDir, '--workers', '1'], { LOG_LEVEL: 'warn' });
  await waitFor(url, '/ready', 200, server);
  const fiveMegabytes = JSON.stringify(check({ blob: 'x'.repeat(5_000_000) }));
  const chunked = () =>
    new ReadableStream({
      start(controller) {
        for (let offset = 0; offset < fiveMegabytes.length; offset += 65_536) controller.enqueue(new TextEncoder().encode(fiveMegabytes.slice(offset, offset + 65_536)));
        controller.close();
      },
    });
  for (const [label, body] of [['with a Content-Length', () => fiveMegabytes], ['chunked', chunked]] as const) {
    for (const path of ['/check', '/check/bulk', '/admin/policies']) {
      const response = await fetch(url + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: body(),
        duplex: 'half',
      } as RequestInit);
      t.equal(response.status, 413, `${label} to ${path}`);
      t.strictSame(await response.json(), { detail: 'Request body is larger than the limit of 1048576 bytes' });
      t.equal(response.headers.get('connection'), 'close');
    }
  }
  t.equal((await ask(url, 'POST', '/check', check({ a: 1 }))).status, 200, 'the server goes on');
});

t.test('a body far beyond the limit is not read to its end: the connection closes, the server goes on', async (t) => {
  const server = await fresh(t, { bodyLimit: 1024 });
  const huge = JSON.stringify(check({ blob: 'x'.repeat(1_000_000) }));
  const outcome = await fetch(`${server.url}/check`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: huge }).then(
    (response) => response.status,
    (error: Error) => error.name,
  );
  t.ok(outcome === 413 || outcome === 'TypeError', `413 if the answer came in time, else a failed fetch (${outcome})`);
  t.equal((await server.call('POST', '/check', check({ a: 1 }))).status, 200);
});

t.test('nesting deeper than the limit is 422 at the offending field, on every route and in the pool', async (t) => {
  const servers = [await fresh(t, { maxJsonDepth: 10 }), await fresh(t, { maxJsonDepth: 10, evaluation: 'pool' })];
  for (const server of servers) {
    const tooDeep = await server.send('POST', '/check', `{"principal":{"attributes":{"a":${nested(8)}}},"resource":{"uri":"r"}}`, JSON_TYPE);
    t.equal(tooDeep.status, 422);
    t.equal(tooDeep.body.detail.length, 1);
    t.same(tooDeep.body.detail[0].loc.slice(0, 4), ['body', 'principal', 'attributes', 'a']);
    t.equal(tooDeep.body.detail[0].msg, 'is nested more than 10 levels deep');
    const fits = await server.send('POST', '/check', `{"principal":{"attributes":{"a":${nested(7)}}},"resource":{"uri":"r"}}`, JSON_TYPE);
    t.equal(fits.status, 200, 'ten levels are fine');

    const bulk = await server.send('POST', '/check/bulk', `[{"principal":{"attributes":{"a":${nested(7)}}},"resource":{"uri":"r"}}]`, JSON_TYPE);
    t.equal(bulk.status, 422, 'a bulk item adds a level');
    t.same(bulk.body.detail[0].loc.slice(0, 5), ['body', 0, 'principal', 'attributes', 'a']);

    for (const path of ['/admin/policies', REGISTRY, '/register-entity']) {
      const text = path === '/admin/policies' ? `{"name":"p","rules":${nested(11)}}` : `{"uri":"u","attributes":{"a":${nested(100_000)}}}`;
      const response = await server.send('POST', path, text, JSON_TYPE);
      t.equal(response.status, 422, path);
      t.equal(response.body.detail[0].type, 'value_error');
    }
  }
});

t.test('a string or key longer than the limit is 422 at the offending field', async (t) => {
  const servers = [await fresh(t, { maxStringLength: 100 }), await fresh(t, { maxStringLength: 100, evaluation: 'pool' })];
  const long = 'x'.repeat(101);
  for (const server of servers) {
    const value = await server.call('POST', '/check', check({ name: long }));
    t.equal(value.status, 422);
    t.same(value.body.detail, [{ loc: ['body', 'principal', 'attributes', 'name'], msg: 'String should have at most 100 characters', type: 'string_too_long' }]);
    const key = await server.call('POST', '/check', check({ [long]: 1 }));
    t.same(key.body.detail[0].loc, ['body', 'principal', 'attributes', long]);
    const bulk = await server.call('POST', '/check/bulk', [check({ ok: 1 }), check({ tags: ['fine', long] })]);
    t.equal(bulk.status, 422);
    t.same(bulk.body.detail[0].loc, ['body', 1, 'principal', 'attributes', 'tags', 1]);
    const entity = await server.call('POST', REGISTRY, { uri: 'u', attributes: { note: long } });
    t.same(entity.body.detail[0].loc, ['body', 'attributes', 'note']);
    const policy = await server.call('POST', '/admin/policies', { name: 'p', description: long, rules: [] });
    t.same(policy.body.detail[0].loc, ['body', 'description']);
    t.equal((await server.call('POST', '/check', check({ name: 'x'.repeat(100) }))).status, 200, 'exactly at the limit is fine');
  }
});

t.test('rules per policy and conditions per rule are bounded, on create and replace', async (t) => {
  const server = await fresh(t, { maxRulesPerPolicy: 3, maxConditionsPerRule: 4 });
  const rules = (count: number) => Array.from({ length: count }, (_, index) => rule(`r${index}`));
  const tooMany = await server.call('POST', '/admin/policies', { name: 'p', rules: rules(4) });
  t.equal(tooMany.status, 422);
  t.same(tooMany.body.detail, [{ loc: ['body', 'rules'], msg: 'List should have at most 3 rules', type: 'too_long' }]);
  t.equal((await server.call('POST', '/admin/policies', { name: 'p', rules: rules(3) })).status, 200);
  t.equal((await server.call('PUT', '/admin/policies/p', { name: 'p', rules: rules(4) })).status, 422, 'replace too');

  const crowded = await server.call('POST', '/admin/policies', { name: 'q', rules: [rule('fine', 2, 2), rule('crowded', 3, 2)] });
  t.equal(crowded.status, 422);
  t.same(crowded.body.detail, [
    { loc: ['body', 'rules', 1], msg: 'a rule may have at most 4 conditions, principal and resource together', type: 'too_long' },
  ]);
  const simple = await server.call('POST', '/admin/policies/simple?name=s', {
    principal: { attributes: { a: 1, b: 2, c: 3 } },
    resource: { attributes: { d: 4, e: 5 } },
    action: 'read',
  });
  t.equal(simple.status, 422, 'a simple policy from too many attributes');
  t.same((await server.call('GET', '/admin/policies')).body.map((policy: { name: string }) => policy.name), ['p']);
});

t.test('the registry page size is configurable', async (t) => {
  const server = await fresh(t, { maxPageSize: 5 });
  t.equal((await server.call('GET', `${REGISTRY}?limit=5`)).status, 200);
  const over = await server.call('GET', `${REGISTRY}?limit=6`);
  t.equal(over.status, 422);
  t.same(over.body.detail[0].loc, ['query', 'limit']);
});
