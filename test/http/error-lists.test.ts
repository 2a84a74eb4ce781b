import t from 'tap';
import { request } from 'undici';
import { scratchDir, startServer, type TestServer } from '../helpers/server.js';
import { startVerdict } from '../helpers/child.js';
import { compileListingErrors, MAX_COLLECTED_ERRORS } from '../../src/schemas/validation.js';
import { entityCreateListSchema } from '../../src/schemas/entity.js';

// A 422 lists every error of the body, not only the first, up to 20; past them one more item says
// that more were cut. Finding them all is bounded too: a body with an error at every turn costs no
// more than a few of them.

const CUT = { loc: ['body'], msg: 'more errors were found than the 20 listed: fix these and send the request again', type: 'too_many_errors' };
const EXTRA = { msg: 'Extra inputs are not permitted', type: 'extra_forbidden' };

async function fresh(t: { teardown(fn: () => unknown): void }, overrides = {}): Promise<TestServer> {
  const server = await startServer(overrides);
  t.teardown(server.close);
  return server;
}

const locs = (answer: { body: { detail: { loc: unknown[] }[] } }) => answer.body.detail.map((issue) => issue.loc);

t.test('every error of a body is listed, on every kind of route', async (t) => {
  const server = await fresh(t);
  const policy = {
    name: 'p',
    rules: [
      { name: 'r', effect: 'maybe', actions: ['read'] },
      { name: 's', effect: 'allow', actions: [], principal_conditions: [{ path: 'attributes.a', operator: 'is', value: 1 }] },
    ],
  };
  const written = await server.call('POST', '/admin/policies', policy);
  t.equal(written.status, 422);
  t.same(locs(written), [
    ['body', 'rules', 0, 'effect'],
    ['body', 'rules', 1, 'principal_conditions', 0, 'operator'],
    ['body', 'rules', 1, 'actions'],
  ]);
  const validated = await server.call('POST', '/admin/policies/validate', [policy, { ...policy, name: 'q', default_effect: 'perhaps' }]);
  t.equal(validated.status, 422);
  t.same(locs(validated), [
    ['body', 0, 'rules', 0, 'effect'],
    ['body', 0, 'rules', 1, 'principal_conditions', 0, 'operator'],
    ['body', 0, 'rules', 1, 'actions'],
    ['body', 1, 'rules', 0, 'effect'],
    ['body', 1, 'rules', 1, 'principal_conditions', 0, 'operator'],
    ['body', 1, 'rules', 1, 'actions'],
    ['body', 1, 'default_effect'],
  ]);

  const check = await server.call('POST', '/check', { principal: { atributes: {} }, resource: { uri: 3 }, acton: 'read' });
  t.equal(check.status, 422);
  // Ajv looks at an object's unknown fields before its known ones.
  t.same(check.body.detail, [
    { loc: ['body', 'acton'], ...EXTRA },
    { loc: ['body', 'principal', 'atributes'], ...EXTRA },
    { loc: ['body', 'resource', 'uri'], msg: 'must be of type string or null', type: 'type_error' },
  ]);
  for (const evaluation of ['inline', 'pool'] as const) {
    const pooled = evaluation === 'pool' ? await fresh(t, { evaluation, workers: 1 }) : server;
    const bulk = await pooled.call('POST', '/check/bulk', [{ acton: 'read' }, { principal: { uri: 1 } }]);
    t.equal(bulk.status, 422);
    t.same(locs(bulk), [['body', 0, 'acton'], ['body', 1, 'principal', 'uri']], `bulk (${evaluation})`);
  }
  const registered = await server.call('POST', '/admin/fetchers/registry/entities', { uri: 7, type: 'robot', attributes: {} });
  t.same(locs(registered), [['body', 'uri'], ['body', 'type'], ['body', 'attributes']]);
  const planned = await server.call('POST', '/plan/bulk', [{ action: 1 }, { mongodb: { uri_field: 2 } }]);
  t.same(locs(planned), [['body', 0, 'action'], ['body', 1, 'mongodb', 'uri_field']]);
  const queried = await server.call('GET', '/admin/fetchers/registry/entities?offset=-1&limit=x');
  t.same(locs(queried), [['query', 'offset'], ['query', 'limit']]);
});

t.test('past 20 errors the list is cut, and says so', async (t) => {
  const server = await fresh(t);
  const typos = Object.fromEntries(Array.from({ length: 30 }, (_, index) => [`field${index}`, index]));
  const answer = await server.call('POST', '/check', { principal: { attributes: { a: 1 } }, resource: { attributes: { b: 2 } }, ...typos });
  t.equal(answer.status, 422);
  t.equal(answer.body.detail.length, 21);
  t.same(answer.body.detail.slice(0, 20), Array.from({ length: 20 }, (_, index) => ({ loc: ['body', `field${index}`], ...EXTRA })));
  t.same(answer.body.detail[20], CUT);

  const rules = Array.from({ length: 40 }, (_, index) => ({ name: `r${index}`, effect: 'allow', actions: ['read'], principal_conditions: [{ path: `nowhere${index}`, operator: '==', value: 1 }] }));
  const policy = await server.call('POST', '/admin/policies', { name: 'p', rules });
  t.equal(policy.status, 422, 'what the engine checks is cut the same way');
  t.equal(policy.body.detail.length, 21);
  t.same(policy.body.detail[20], CUT);
});

/**
 * Bodies of about 1 MB with an error at every turn, for the routes that validate them; each must be
 * answered 422 with the list cut, by a server whose heap is small.
 */
function hostileBodies(): [string, string, string][] {
  const many = (count: number, item: string) => `[${Array.from({ length: count }, () => item).join(',')}]`;
  const unknownFields = `{${Array.from({ length: 60_000 }, (_, index) => `"f${index}":0`).join(',')}}`;
  const brokenConditions = Array.from({ length: 30_000 }, () => '{"path":1,"operator":2,"extra":3}').join(',');
  return [
    ['POST', '/check', unknownFields],
    ['POST', '/check-access', unknownFields],
    ['POST', '/plan', unknownFields],
    ['POST', '/check/bulk', many(1000, `{"principal":{"uri":1,"attributes":1,"type":1},"resource":{${Array.from({ length: 60 }, (_, index) => `"k${index}":1`).join(',')}},"a":1}`)],
    ['POST', '/plan/bulk', many(1000, `{"principal":{"uri":1,"attributes":1,"type":1},${Array.from({ length: 40 }, (_, index) => `"f${index}":[[1]]`).join(',')}}`)],
    ['POST', '/admin/fetchers/registry/entities/$bulk', many(300_000, '{}')],
    ['POST', '/admin/fetchers/registry/entities', `{"attributes":[${many(100_000, '{"k":1}').slice(1, -1)}]}`],
    ['POST', '/admin/policies', `{"name":"p","rules":[{"name":"r","effect":"allow","actions":["a"],"principal_conditions":[${brokenConditions}]}]}`],
    ['POST', '/admin/policies/validate', many(300_000, '1')],
  ];
}

t.test("Ajv's exhaustive validation stops after MAX_COLLECTED_ERRORS errors (what the bound depends on in Ajv's generated code)", async (t) => {
  const validate = compileListingErrors(entityCreateListSchema);
  t.equal(validate(JSON.parse(`[${Array.from({ length: 300_000 }, () => '{}').join(',')}]`)), false);
  t.equal(validate.errors?.length, MAX_COLLECTED_ERRORS + 1, 'stopped, not 300,000 errors');
  t.equal(validate([{ attributes: { a: 1 } }]), true);
  t.equal(validate.errors, null);
  t.equal(validate([{ attributes: { a: 1 } }, {}, { uri: 1, attributes: { a: 1 } }]), false);
  t.same(validate.errors?.map((error) => error.instancePath), ['/1', '/2/uri'], 'every error when there are few');
});

t.test('hostile bodies: every error route answers a cut list, and a server with a small heap keeps answering checks', async (t) => {
  const server = await startVerdict(t, ['--store', 'embedded', '--data-dir', scratchDir(t), '--workers', '1', '--admin-authn-required', 'false'], {
    env: { NODE_OPTIONS: '--max-old-space-size=96', LOG_LEVEL: 'silent' },
  });
  const send = async (method: string, path: string, body: string) => {
    const answer = await request(server.url + path, { method: method as 'POST', body, headers: { 'content-type': 'application/json' } });
    return { status: answer.statusCode, body: (await answer.body.json()) as { detail: unknown[] } };
  };
  for (const [method, path, body] of hostileBodies()) {
    t.ok(body.length > 500_000 && body.length < 1024 * 1024, `${path}: ${body.length} bytes`);
    // Several at once, as an attacker would send them.
    const answers = await Promise.all(Array.from({ length: 4 }, () => send(method, path, body)));
    for (const answer of answers) {
      t.equal(answer.status, 422, path);
      t.equal(answer.body.detail.length, 21, `${path}: 20 errors and the cut`);
      t.same(answer.body.detail.at(-1), CUT);
    }
    const check = await send('POST', '/check', JSON.stringify({ principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } } }));
    t.equal(check.status, 200, `still answering checks after ${path}`);
  }
  t.equal(server.process.exitCode, null, 'still running');
});

t.test('a field of three types names them as a list: "object, array or null"', async (t) => {
  const server = await fresh(t);
  const check = await server.call('POST', '/check', { principal: { attributes: 5 }, resource: { uri: 'r' }, action: 'read' });
  t.same(check.body.detail, [{ loc: ['body', 'principal', 'attributes'], msg: 'must be of type object, array or null', type: 'type_error' }]);
});
