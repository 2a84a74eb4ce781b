import t, { type Test } from 'tap';
import { request } from 'undici';
import type { Config } from '../../src/config/config.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { operationsOf } from '../helpers/openapi.js';

const INVALID = { detail: 'Request body is not valid UTF-8' };
const ENTITIES = '/admin/fetchers/registry/entities';

/** Byte sequences that are not UTF-8, each where a valid body has text. */
const MALFORMED: [string, Buffer][] = [
  ['a byte that never starts a character', Buffer.from([0xff])],
  ['a lone continuation byte', Buffer.from([0x80])],
  ['an overlong slash', Buffer.from([0xc0, 0xaf])],
  ['an encoded surrogate', Buffer.from([0xed, 0xa0, 0x80])],
  ['a truncated euro sign', Buffer.from([0xe2, 0x82])],
  ['a code point beyond U+10FFFF', Buffer.from([0xf4, 0x90, 0x80, 0x80])],
];

/** `json` with the marker string `@` replaced by `bytes`, inside a JSON string. */
const withBytes = (json: string, bytes: Buffer) => {
  const [before, after] = json.split('@') as [string, string];
  return Buffer.concat([Buffer.from(before), bytes, Buffer.from(after)]);
};

async function fresh(t: Test, overrides: Partial<Config> = {}): Promise<TestServer> {
  const server = await startServer(overrides);
  t.teardown(server.close);
  return server;
}

async function post(server: TestServer, method: string, path: string, body: Buffer) {
  const response = await request(server.url + path, { method: method as 'POST', body, headers: { 'content-type': 'application/json' } });
  return { status: response.statusCode, body: await response.body.json() };
}

const checkJson = (principal: string) => `{"principal":{"uri":"${principal}","attributes":{"a":1}},"resource":{"attributes":{"kind":"doc"}},"action":"read"}`;

/** A valid body for every route that takes one, with `@` where the malformed bytes go. */
const BODIES: Record<string, string> = {
  'POST /check': checkJson('user:@'),
  'POST /check-access': checkJson('user:@'),
  'POST /check/bulk': `[${checkJson('user:ok')},${checkJson('user:@')}]`,
  'POST /plan': '{"principal":{"uri":"user:@"},"action":"read"}',
  'POST /plan/bulk': '[{"principal":{"uri":"user:ok"},"action":"read"},{"principal":{"uri":"user:@"},"action":"read"}]',
  'POST /access/v1/evaluation': '{"subject":{"type":"user","id":"@"},"action":{"name":"read"},"resource":{"type":"doc","id":"1"}}',
  'POST /access/v1/evaluations': '{"subject":{"type":"user","id":"ok"},"action":{"name":"read"},"evaluations":[{"resource":{"type":"doc","id":"@"}}]}',
  'POST /access/v1/search/subject': '{"subject":{"type":"user"},"action":{"name":"read"},"resource":{"type":"doc","id":"@"}}',
  'POST /access/v1/search/resource': '{"subject":{"type":"user","id":"@"},"action":{"name":"read"},"resource":{"type":"doc"}}',
  'POST /access/v1/search/action': '{"subject":{"type":"user","id":"@"},"resource":{"type":"doc","id":"1"}}',
  'POST /admin/policies': '{"name":"p@","rules":[]}',
  'PUT /admin/policies/{name}': '{"name":"existing","description":"@","rules":[]}',
  'POST /admin/policies/simple': checkJson('user:@'),
  'POST /admin/policies/validate': '[{"name":"p@","rules":[]}]',
  'POST /admin/check-at': `{"check":${checkJson('user:@')},"time":"2026-11-27T08:30:00Z"}`,
  'POST /admin/policies/impact': '{"policies":[{"name":"p@","rules":[]}]}',
  [`POST ${ENTITIES}`]: '{"uri":"user:@","attributes":{"a":1}}',
  [`POST ${ENTITIES}/$bulk`]: '[{"uri":"user:ok","attributes":{"a":1}},{"uri":"user:@","attributes":{"a":1}}]',
  [`PUT ${ENTITIES}/{uri}`]: '{"uri":"existing","attributes":{"a":"@"}}',
  'POST /register-entity': '{"uri":"user:@","attributes":{"a":1}}',
  'POST /update-entity': '{"uri":"existing","attributes":{"k@":1}}',
  'POST /delete-entity': '{"uri":"existing@"}',
  'POST /create-policy': '{"name":"p@","rules":[]}',
  'PUT /admin/schemas': '{"principal":{"attributes":{"type":"object","description":"@"}}}',
};
const concretePath = (path: string) =>
  path.replace('{name}', 'existing').replace('{uri}', 'existing') + (path === '/admin/policies/simple' ? '?name=simple' : '');

t.test('invalid UTF-8 is 400 on every route that takes a JSON body, and nothing is stored or decided', async (t) => {
  for (const evaluation of ['inline', 'pool', 'auto'] as const) {
    const server = await fresh(t, { evaluation });
    await server.call('POST', '/admin/policies', { name: 'existing', rules: [] });
    await server.call('POST', ENTITIES, { uri: 'existing', attributes: { a: 1 } });
    const before = { policies: (await server.call('GET', '/admin/policies')).body, entities: (await server.call('GET', ENTITIES)).body };

    // Every operation of the OpenAPI document that takes a body: a new route cannot be forgotten here.
    const operations = operationsOf((await server.call('GET', '/docs/json')).body)
      .filter((operation) => operation.takesBody)
      .map(({ method, route }) => `${method} ${route}`);
    t.strictSame(operations.filter((operation) => BODIES[operation] === undefined), [], 'a body to try for every route');

    for (const operation of operations) {
      const [method, path] = operation.split(' ') as [string, string];
      for (const [label, bytes] of MALFORMED) {
        const answer = await post(server, method, concretePath(path), withBytes(BODIES[operation]!, bytes));
        t.equal(answer.status, 400, `${evaluation}: ${operation} with ${label}`);
        t.strictSame(answer.body, INVALID, `${evaluation}: ${operation} with ${label}`);
      }
    }
    // A big bulk with one bad byte in its last item: it names uris, so the front decides it in every mode.
    const big = `[${Array.from({ length: 200 }, (_, index) => checkJson(`user:${index}`)).join(',')},${checkJson('user:@')}]`;
    const bigAnswer = await post(server, 'POST', '/check/bulk', withBytes(big, Buffer.from([0xff])));
    t.equal(bigAnswer.status, 400);
    t.strictSame(bigAnswer.body, INVALID);
    // Bulks of attributes only, which go to a worker: any of them in pool mode, one over 8 KB in auto mode.
    const byAttributes = (name: string) => `{"principal":{"attributes":{"name":"${name}"}},"resource":{"attributes":{"kind":"doc"}},"action":"read"}`;
    const workerBulks: [string, string][] = [
      ['a small bulk of attributes', `[${byAttributes('ok')},${byAttributes('@')}]`],
      ['a bulk of attributes over 8 KB', `[${Array.from({ length: 200 }, (_, index) => byAttributes(String(index))).join(',')},${byAttributes('@')}]`],
    ];
    for (const [kind, json] of workerBulks) {
      for (const [label, bytes] of MALFORMED) {
        const answer = await post(server, 'POST', '/check/bulk', withBytes(json, bytes));
        t.equal(answer.status, 400, `${evaluation}: ${kind} with ${label}`);
        t.strictSame(answer.body, INVALID, `${evaluation}: ${kind} with ${label}`);
      }
    }

    t.strictSame((await server.call('GET', '/admin/policies')).body, before.policies, `${evaluation}: no policy written`);
    t.strictSame((await server.call('GET', ENTITIES)).body, before.entities, `${evaluation}: no entity written`);
    t.equal((await server.call('GET', '/admin/schemas')).status, 404, `${evaluation}: no schema document written`);
    const metrics = await server.send('GET', '/metrics', '');
    t.notMatch(metrics.body, /verdict_decisions_total\{allowed="(true|false)"\} [1-9]/, `${evaluation}: no decision made`);
  }
});

t.test('the same URI in valid UTF-8 (multi-byte characters included) is kept exactly', async (t) => {
  const server = await fresh(t);
  for (const uri of ['user:é', 'user:😀', 'user:\uFFFD', 'user:~']) {
    const created = await server.call('POST', ENTITIES, { uri, attributes: { a: 1 } });
    t.equal(created.status, 200, uri);
    t.equal(created.body.uri, uri);
    t.equal((await server.call('GET', `${ENTITIES}/${encodeURIComponent(uri)}`)).body.uri, uri);
  }
  t.equal((await server.call('GET', `${ENTITIES}/$count`)).body, 4, 'four different URIs, four entities');
  // The bad byte once in the URI must not land on the entity whose URI holds the replacement character.
  const refused = await post(server, 'POST', ENTITIES, withBytes('{"uri":"user:@","attributes":{"a":2}}', Buffer.from([0xff])));
  t.equal(refused.status, 400);
  t.equal((await server.call('GET', `${ENTITIES}/${encodeURIComponent('user:\uFFFD')}`)).body.attributes[0].value, 1);
});
