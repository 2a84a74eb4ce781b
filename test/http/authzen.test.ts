import t, { type Test } from 'tap';
import fc from 'fast-check';
import { startServer, type TestServer } from '../helpers/server.js';
import { planCase, type PlanCase } from '../helpers/plan-cases.js';

const EVALUATION = '/access/v1/evaluation';
const EVALUATIONS = '/access/v1/evaluations';

async function ok(server: TestServer, method: string, path: string, body?: unknown) {
  const response = await server.call(method, path, body);
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

const eq = (path: string, value: unknown) => ({ path, operator: '==', value });

/**
 * The library of the specification's examples: readers may read (can_read, read) public documents
 * and accounts, and todos; nobody may edit. Registered: alice (a reader), the public documents 1 and
 * 3, boxcarring.md and resource-search.md, account 123, todo 1.
 */
async function libraryServer(t: Test, overrides = {}) {
  const server = await startServer(overrides);
  t.teardown(server.close);
  await ok(server, 'POST', '/admin/policies', {
    name: 'library',
    rules: [
      { name: 'readers', effect: 'allow', principal_conditions: [eq('attributes.role', 'reader')], resource_conditions: [eq('attributes.public', true)], actions: ['can_read', 'read'] },
    ],
  });
  await ok(server, 'POST', '/admin/fetchers/registry/entities', { uri: 'user:alice@example.com', type: 'principal', attributes: { role: 'reader' } });
  for (const uri of ['document:1', 'document:3', 'document:boxcarring.md', 'document:resource-search.md', 'account:123', 'todo:1']) {
    await ok(server, 'POST', '/admin/fetchers/registry/entities', { uri, type: 'resource', attributes: { public: true } });
  }
  return server;
}

const alice = { type: 'user', id: 'alice@example.com' };
const documents = (...ids: string[]) => ids.map((id) => ({ resource: { type: 'document', id } }));

// The request and response examples of the AuthZEN 1.0 specification, as its text gives them.
t.test('the specification examples: evaluation, with properties and context, over HTTP with a request id', async (t) => {
  const server = await libraryServer(t);
  const asked = await server.call(
    'POST',
    EVALUATION,
    {
      subject: { type: 'user', id: 'alice@example.com' },
      resource: { type: 'account', id: '123' },
      action: { name: 'can_read', properties: { method: 'GET' } },
      context: { time: '1985-10-26T01:22-07:00' },
    },
  );
  t.equal(asked.status, 200);
  t.strictSame(asked.body, { decision: true });
  t.match(asked.headers['content-type'], /^application\/json/);

  const transport = await server.send(
    'POST',
    EVALUATION,
    JSON.stringify({ subject: alice, resource: { type: 'todo', id: '1' }, action: { name: 'can_read' }, context: { time: '1985-10-26T01:22-07:00' } }),
    { 'content-type': 'application/json', 'x-request-id': 'bfe9eb29-ab87-4ca3-be83-a1d5d8305716' },
  );
  t.equal(transport.status, 200);
  t.strictSame(transport.body, { decision: true });
  t.equal(transport.headers['x-request-id'], 'bfe9eb29-ab87-4ca3-be83-a1d5d8305716', 'the request id echoed');
  const raw = await fetch(server.url + EVALUATION, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ subject: alice, resource: { type: 'todo', id: '1' }, action: { name: 'can_read' } }) });
  t.equal(await raw.text(), '{"decision":true}', 'exactly {"decision":true}, byte for byte');
  t.match(raw.headers.get('x-request-id'), /^[0-9a-f-]{36}$/, 'a request id generated when none is sent');

  // The information model's examples, each in an evaluation: properties of every shape are accepted.
  for (const [subject, resource, action, context] of [
    [{ type: 'user', id: 'alice@example.com', properties: { department: 'Sales' } }, { type: 'book', id: '123' }, { name: 'can_read' }, { time: '1985-10-26T01:22-07:00' }],
    [
      { type: 'user', id: 'alice@example.com', properties: { ip_address: '172.217.22.14', device_id: '8:65:ee:17:7e:0b' } },
      { type: 'book', id: '123', properties: { library_record: { title: 'AuthZEN in Action', isbn: '978-0593383322' } } },
      { name: 'extend-loan', properties: { period: '2W' } },
      { time: '1985-10-26T01:22-07:00', schema: 'https://schema.example.com/access-request.schema.json' },
    ],
  ]) {
    const answer = await server.call('POST', EVALUATION, { subject, resource, action, context });
    t.strictSame([answer.status, answer.body], [200, { decision: false }], `book:123 is not registered public: ${JSON.stringify(resource)}`);
  }
});

t.test('the specification examples: evaluations with and without defaults, and the three semantics', async (t) => {
  const server = await libraryServer(t);
  const time = { time: '2024-05-31T15:22-07:00' };
  const noDefaults = await ok(server, 'POST', EVALUATIONS, {
    evaluations: ['boxcarring.md', 'subject-search.md', 'resource-search.md'].map((id) => ({
      subject: { type: 'user', id: 'alice@example.com' },
      action: { name: 'can_read' },
      resource: { type: 'document', id },
      context: time,
    })),
  });
  t.strictSame(noDefaults, { evaluations: [{ decision: true }, { decision: false }, { decision: true }] });

  const subjectAndContext = await ok(server, 'POST', EVALUATIONS, {
    subject: alice,
    context: time,
    evaluations: ['boxcarring.md', 'subject-search.md', 'resource-search.md'].map((id) => ({ action: { name: 'can_read' }, resource: { type: 'document', id } })),
  });
  t.strictSame(subjectAndContext, noDefaults, 'defaults give what each item spelled out gives');

  const actionOverridden = await ok(server, 'POST', EVALUATIONS, {
    subject: alice,
    context: time,
    action: { name: 'can_read' },
    evaluations: [
      { resource: { type: 'document', id: 'boxcarring.md' } },
      { resource: { type: 'document', id: 'subject-search.md' } },
      { action: { name: 'can_edit' }, resource: { type: 'document', id: 'resource-search.md' } },
    ],
  });
  // The transport section's answer to this request: true, false, false (its contexts are the example PDP's own).
  t.strictSame(actionOverridden, { evaluations: [{ decision: true }, { decision: false }, { decision: false }] }, "an item's action replaces the default");

  const semantic = (name: string) => ({
    subject: alice,
    action: { name: 'read' },
    options: { evaluations_semantic: name },
    evaluations: documents('1', '2', '3'),
  });
  t.strictSame(await ok(server, 'POST', EVALUATIONS, semantic('execute_all')), { evaluations: [{ decision: true }, { decision: false }, { decision: true }] });
  t.strictSame(await ok(server, 'POST', EVALUATIONS, semantic('deny_on_first_deny')), {
    evaluations: [{ decision: true }, { decision: false, context: { code: '200', reason: 'deny_on_first_deny' } }],
  });
  t.strictSame(await ok(server, 'POST', EVALUATIONS, semantic('permit_on_first_permit')), { evaluations: [{ decision: true }] });

  // The options example: unknown options ignored; its item has no action and the request none to default to.
  const options = await server.call('POST', EVALUATIONS, {
    evaluations: [{ resource: { type: 'doc', id: '1' }, subject: { type: 'doc', id: '2' } }],
    options: { evaluations_semantic: 'execute_all', another_option: 'value' },
  });
  t.strictSame(options.status, 200, 'an item invalid after the defaults is answered, not the batch refused (certification case c-3-4-1)');
  t.strictSame(options.body, {
    evaluations: [{ decision: false, context: { error: { status: 400, message: "'action' is required: evaluations[0] has none and the request gives no top-level action to default to" } } }],
  });
});

t.test('evaluations: an item that is invalid after the defaults is denied with its error, the others decided, under each semantic', async (t) => {
  const server = await libraryServer(t);
  const invalid = { decision: false, context: { error: { status: 400, message: "'subject' is required: evaluations[1] has none and the request gives no top-level subject to default to" } } };
  const body = (semantic: string) => ({
    action: { name: 'read' },
    options: { evaluations_semantic: semantic },
    evaluations: [{ subject: alice, resource: { type: 'document', id: '1' } }, { resource: { type: 'document', id: '1' } }, { subject: alice, resource: { type: 'document', id: '1' } }],
  });
  t.strictSame(await ok(server, 'POST', EVALUATIONS, body('execute_all')), { evaluations: [{ decision: true }, invalid, { decision: true }] }, 'execute_all: every item answered');
  t.strictSame(await ok(server, 'POST', EVALUATIONS, body('deny_on_first_deny')), { evaluations: [{ decision: true }, invalid] }, 'deny_on_first_deny: stops at it, as at a denial');
  t.strictSame(await ok(server, 'POST', EVALUATIONS, body('permit_on_first_permit')), { evaluations: [{ decision: true }] }, 'permit_on_first_permit: decided before it');
  const lateInvalid = { ...body('permit_on_first_permit'), evaluations: [body('x').evaluations[1], { subject: alice, resource: { type: 'document', id: '1' } }] };
  t.strictSame(await ok(server, 'POST', EVALUATIONS, lateInvalid), { evaluations: [{ ...invalid, context: { error: { ...invalid.context.error, message: invalid.context.error.message.replace('[1]', '[0]') } } }, { decision: true }] }, 'permit_on_first_permit: goes on past it');
});

t.test('evaluations: defaults, order, short-circuits that decide nothing after the decisive item, no evaluations at all', async (t) => {
  const server = await libraryServer(t);
  const decided = () => server.metrics.allowed.value + server.metrics.denied.value;
  const before = decided();
  const denyFirst = await ok(server, 'POST', EVALUATIONS, { subject: alice, action: { name: 'read' }, options: { evaluations_semantic: 'deny_on_first_deny' }, evaluations: documents('2', '1', '3') });
  t.strictSame(denyFirst, { evaluations: [{ decision: false, context: { code: '200', reason: 'deny_on_first_deny' } }] });
  t.equal(decided(), before + 1, 'deny_on_first_deny made one decision');
  const permitLater = await ok(server, 'POST', EVALUATIONS, { subject: alice, action: { name: 'read' }, options: { evaluations_semantic: 'permit_on_first_permit' }, evaluations: documents('2', 'x', '3', '1') });
  t.strictSame(permitLater, { evaluations: [{ decision: false }, { decision: false }, { decision: true }] });
  t.equal(decided(), before + 4, 'permit_on_first_permit stopped at the third');
  const allDenied = await ok(server, 'POST', EVALUATIONS, { subject: alice, action: { name: 'read' }, options: { evaluations_semantic: 'deny_on_first_deny' }, evaluations: documents('1', '3') });
  t.strictSame(allDenied, { evaluations: [{ decision: true }, { decision: true }] }, 'no denial: every item answered');

  // No evaluations, or an empty list: one evaluation of the top-level keys, answered as /access/v1/evaluation.
  t.strictSame(await ok(server, 'POST', EVALUATIONS, { subject: alice, action: { name: 'read' }, resource: { type: 'document', id: '1' } }), { decision: true });
  t.strictSame(await ok(server, 'POST', EVALUATIONS, { subject: alice, action: { name: 'read' }, resource: { type: 'document', id: '2' }, evaluations: [] }), { decision: false });
  const nothing = await server.call('POST', EVALUATIONS, { evaluations: [] });
  t.strictSame([nothing.status, nothing.body.detail], [400, "'subject' is required: the request has no evaluations"]);

  // An item that cannot be decided (a property contradicting the registry) denies with the error; the others are decided.
  const conflicting = await ok(server, 'POST', EVALUATIONS, {
    action: { name: 'read' },
    resource: { type: 'document', id: '1' },
    evaluations: [{ subject: alice }, { subject: { ...alice, properties: { role: 'admin' } } }, { subject: { ...alice, properties: { role: 'reader' } } }],
  });
  t.strictSame(conflicting, {
    evaluations: [
      { decision: true },
      { decision: false, context: { error: { status: 400, message: "For entity 'user:alice@example.com', attribute 'role' has more than one value" } } },
      { decision: true },
    ],
  });
  const stopsAtError = await ok(server, 'POST', EVALUATIONS, {
    action: { name: 'read' },
    resource: { type: 'document', id: '1' },
    options: { evaluations_semantic: 'deny_on_first_deny' },
    evaluations: [{ subject: { ...alice, properties: { role: 'admin' } } }, { subject: alice }],
  });
  t.equal(stopsAtError.evaluations.length, 1, 'an error is a denial to deny_on_first_deny');
  t.equal(stopsAtError.evaluations[0].context.error.status, 400);
  const single = await server.call('POST', EVALUATION, { subject: { ...alice, properties: { role: 'admin' } }, action: { name: 'read' }, resource: { type: 'document', id: '1' } });
  t.strictSame([single.status, single.body.detail], [400, "For entity 'user:alice@example.com', attribute 'role' has more than one value"], 'a single evaluation: 400, as /check');

  const tooMany = await startServer({ bulkCheckMaxRequests: 2 });
  t.teardown(tooMany.close);
  const over = await tooMany.call('POST', EVALUATIONS, { subject: alice, action: { name: 'read' }, evaluations: documents('1', '2', '3') });
  t.strictSame([over.status, over.body.detail], [400, 'evaluations holds 3 items, more than the 2 one call may hold: send them in several calls']);
});

t.test('the mapping: a registered <type>:<id> with its attributes, properties merged as supplied attributes, as /check decides', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  await ok(server, 'POST', '/admin/policies', {
    name: 'admins',
    rules: [
      { name: 'admins', effect: 'allow', principal_conditions: [{ path: 'attributes.roles', operator: 'contains', value: 'admin' }], actions: ['manage'] },
      { name: 'office', effect: 'allow', principal_conditions: [eq('attributes.site', 'office')], resource_conditions: [eq('attributes.kind', 'printer')], actions: ['print'] },
    ],
  });
  await ok(server, 'POST', '/admin/fetchers/registry/entities', { uri: 'user:alice', type: 'principal', attributes: { roles: ['admin'] } });
  const ask = (body: unknown) => server.call('POST', EVALUATION, body).then((answer) => answer.body);
  t.strictSame(await ask({ subject: { type: 'user', id: 'alice' }, action: { name: 'manage' }, resource: { type: 'server', id: '1' } }), { decision: true });
  t.strictSame(await ask({ subject: { type: 'user', id: 'bob' }, action: { name: 'manage' }, resource: { type: 'server', id: '1' } }), { decision: false });
  t.strictSame(await ask({ subject: { type: 'user', id: 'bob', properties: { roles: ['admin'] } }, action: { name: 'manage' }, resource: { type: 'server', id: '1' } }), { decision: true }, 'properties as supplied attributes');
  t.strictSame(await ask({ subject: { type: 'user', id: 'alice', properties: { site: 'office' } }, action: { name: 'print' }, resource: { type: 'printer', id: 'p', properties: { kind: 'printer' } } }), { decision: true }, 'registered and supplied merged');
  const check = await ok(server, 'POST', '/check', { principal: { uri: 'user:alice', attributes: { site: 'office' } }, resource: { uri: 'printer:p', attributes: { kind: 'printer' } }, action: 'print' });
  const explained = await ok(server, 'POST', `${EVALUATION}?explain=true`, { subject: { type: 'user', id: 'alice', properties: { site: 'office' } }, action: { name: 'print' }, resource: { type: 'printer', id: 'p', properties: { kind: 'printer' } } });
  t.equal(explained.decision, true);
  t.equal(explained.context.reason, check.reason, "?explain=true: Verdict's reason in the context");
  t.match(explained.context.explanation, { action: 'print', principal: { uri: 'user:alice', attributes: { roles: ['admin'], site: 'office' } }, decided_by: { kind: 'rule', rule: 'office' } });
  const explainedMany = await ok(server, 'POST', `${EVALUATIONS}?explain=true`, { subject: { type: 'user', id: 'alice' }, action: { name: 'manage' }, evaluations: [{ resource: { type: 'server', id: '1' } }] });
  t.match(explainedMany.evaluations[0], { decision: true, context: { reason: 'Rule admins allowed the action in policy admins', explanation: { decided_by: { rule: 'admins' } } } });
});

t.test('400 for every request the model refuses, one by one; unknown fields ignored', async (t) => {
  const server = await libraryServer(t);
  const valid = { subject: alice, action: { name: 'read' }, resource: { type: 'document', id: '1' } };
  const cases: [string, unknown, RegExp][] = [
    ['no subject', { action: valid.action, resource: valid.resource }, /subject/],
    ['no action', { subject: alice, resource: valid.resource }, /action/],
    ['no resource', { subject: alice, action: valid.action }, /resource/],
    ['no subject.type', { ...valid, subject: { id: 'alice@example.com' } }, /subject.*type/],
    ['no subject.id', { ...valid, subject: { type: 'user' } }, /subject.*id/],
    ['subject.id a number', { ...valid, subject: { type: 'user', id: 1 } }, /subject\.id/],
    ['subject.type null', { ...valid, subject: { type: null, id: 'a' } }, /subject\.type/],
    ['subject a string', { ...valid, subject: 'user:alice' }, /subject/],
    ['no action.name', { ...valid, action: {} }, /action.*name/],
    ['action.name a number', { ...valid, action: { name: 7 } }, /action\.name/],
    ['no resource.type', { ...valid, resource: { id: '1' } }, /resource.*type/],
    ['no resource.id', { ...valid, resource: { type: 'document' } }, /resource.*id/],
    ['resource.id a number', { ...valid, resource: { type: 'document', id: 1 } }, /resource\.id/],
    ['subject.properties a list', { ...valid, subject: { ...alice, properties: [1] } }, /subject\.properties/],
    ['resource.properties with an empty key', { ...valid, resource: { type: 'document', id: '1', properties: { '': 1 } } }, /resource\.properties/],
    ['action.properties a string', { ...valid, action: { name: 'read', properties: 'x' } }, /action\.properties/],
    ['context a list', { ...valid, context: [] }, /context/],
    ['the body a list', [valid], /body/],
  ];
  for (const [what, body, detail] of cases) {
    const answer = await server.call('POST', EVALUATION, body);
    t.equal(answer.status, 400, what);
    t.match(answer.body.detail, detail, `${what}: ${answer.body.detail}`);
    t.type(answer.body.detail, 'string');
  }
  for (const [what, text, headers] of [
    ['malformed JSON', '{"subject":', { 'content-type': 'application/json' }],
    ['an empty body', '', { 'content-type': 'application/json' }],
    ['no body and no content type', undefined, {}],
    ['another content type', JSON.stringify(valid), { 'content-type': 'text/plain' }],
    ['a form', 'subject=alice', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['bytes that are not UTF-8', Buffer.from([0x7b, 0xff, 0x7d]).toString('latin1'), { 'content-type': 'application/json' }],
  ] as [string, string | undefined, Record<string, string>][]) {
    for (const path of [EVALUATION, EVALUATIONS]) {
      const answer = what.startsWith('bytes')
        ? await fetch(server.url + path, { method: 'POST', headers, body: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d]) }).then(async (r) => ({ status: r.status, body: await r.json() }))
        : await server.send('POST', path, text as string, headers);
      t.equal(answer.status, 400, `${what} (${path})`);
      t.type(answer.body.detail, 'string', `${what}: ${answer.body.detail}`);
    }
  }
  const deep = await server.send('POST', EVALUATION, JSON.stringify({ ...valid, context: JSON.parse('['.repeat(200) + ']'.repeat(200)) }), { 'content-type': 'application/json' });
  t.strictSame([deep.status, typeof deep.body.detail], [400, 'string'], 'nested past --max-json-depth: 400, as every model error');
  for (const [what, body, detail] of [
    ['evaluations not a list', { ...valid, evaluations: {} }, /evaluations/],
    ['an item not an object', { ...valid, evaluations: [1] }, /evaluations\.0/],
    ['an item with a mistyped subject', { ...valid, evaluations: [{ subject: { type: 'user' } }] }, /evaluations\.0\.subject/],
    ['an unknown semantic', { ...valid, evaluations: [{}], options: { evaluations_semantic: 'deny_all' } }, /evaluations_semantic/],
    ['options not an object', { ...valid, evaluations: [{}], options: 'execute_all' }, /options/],
  ] as [string, unknown, RegExp][]) {
    const answer = await server.call('POST', EVALUATIONS, body);
    t.equal(answer.status, 400, what);
    t.match(answer.body.detail, detail, `${what}: ${answer.body.detail}`);
  }

  const unknown = await server.call('POST', EVALUATION, {
    ...valid,
    subject: { ...alice, realm: 'x' },
    action: { name: 'read', verb: 'GET' },
    resource: { type: 'document', id: '1', owner: 'y' },
    page: { limit: 1 },
    extension: true,
  });
  t.strictSame([unknown.status, unknown.body], [200, { decision: true }], 'unknown fields at every level ignored');
  const unknownMany = await server.call('POST', EVALUATIONS, { ...valid, evaluations: [{ extra: 1 }], options: { evaluations_semantic: 'execute_all', x: 1 }, more: [] });
  t.strictSame([unknownMany.status, unknownMany.body], [200, { evaluations: [{ decision: true }] }]);
  const withId = await server.send('POST', EVALUATION, '{', { 'content-type': 'application/json', 'x-request-id': 'abc' });
  t.equal(withId.headers['x-request-id'], 'abc', 'echoed on an error too');
});

t.test('X-Request-ID echoed by every AuthZEN route, on answers and refusals alike, with or without a bearer token', async (t) => {
  const valid = { subject: alice, action: { name: 'read' }, resource: { type: 'document', id: '1' } };
  const search = { subject: alice, action: { name: 'read' }, resource: { type: 'document' } };
  const bodies: [string, unknown][] = [
    [EVALUATION, valid],
    [EVALUATIONS, { ...valid, evaluations: [{}] }],
    ['/access/v1/search/subject', { ...search, subject: { type: 'user' }, resource: { type: 'document', id: '1' } }],
    ['/access/v1/search/resource', search],
    ['/access/v1/search/action', { ...valid, action: undefined }],
  ];
  for (const token of ['', 's3cret']) {
    const server = await libraryServer(t, { authzenToken: token, minRevisionWaitMs: 10 });
    const authorization: Record<string, string> = token === '' ? {} : { authorization: `Bearer ${token}` };
    const echoed = async (method: string, path: string, body: unknown, headers: Record<string, string>, expected: number, what: string) => {
      const id = `id-${Math.random().toString(36).slice(2)}`;
      const answer = await server.call(method, path, body, { ...headers, 'x-request-id': id });
      t.equal(answer.status, expected, `${path} ${what}${token === '' ? '' : ' (token set)'}`);
      t.equal(answer.headers['x-request-id'], id, `${path} ${what}: the id echoed`);
      const generated = await server.call(method, path, body, headers);
      t.match(generated.headers['x-request-id'], /^[0-9a-f-]{36}$/, `${path} ${what}: an id generated`);
    };
    await echoed('GET', '/.well-known/authzen-configuration', undefined, {}, 200, 'answered');
    for (const [path, body] of bodies) {
      await echoed('POST', path, body, authorization, 200, 'answered');
      await echoed('POST', path, { action: 1 }, authorization, 400, 'refused');
      await echoed('POST', path, body, { ...authorization, 'verdict-min-revision': '999999' }, 503, 'not at the revision');
      if (token !== '') await echoed('POST', path, body, {}, 401, 'without the token');
    }
  }
});

t.test('verdict-min-revision, as /check', async (t) => {
  const server = await libraryServer(t, { minRevisionWaitMs: 50 });
  const valid = { subject: alice, action: { name: 'read' }, resource: { type: 'document', id: '1' } };
  const revision = Number((await server.call('POST', '/check', { principal: { uri: 'a' }, resource: { uri: 'b' } })).headers['verdict-revision']);
  for (const path of [EVALUATION, EVALUATIONS]) {
    const reached = await server.call('POST', path, valid, { 'verdict-min-revision': String(revision) });
    t.strictSame([reached.status, reached.body], [200, { decision: true }]);
    t.equal(reached.headers['verdict-revision'], String(revision));
    t.equal((await server.call('POST', path, valid, { 'verdict-min-revision': String(revision + 5) })).status, 503);
    t.equal((await server.call('POST', path, valid, { 'verdict-min-revision': 'soon' })).status, 400);
  }
});

t.test('a bearer token when one is set: 401 without it or with another, in constant time; the metadata stays public', async (t) => {
  const server = await libraryServer(t, { authzenToken: 's3cret-token' });
  const valid = { subject: alice, action: { name: 'read' }, resource: { type: 'document', id: '1' } };
  for (const path of [EVALUATION, EVALUATIONS]) {
    for (const authorization of [undefined, 'Bearer wrong', 'Bearer s3cret-toke', 'Bearer s3cret-token2', 'Basic s3cret-token', 's3cret-token', 'Bearer ']) {
      const answer = await server.call('POST', path, valid, authorization === undefined ? {} : { authorization });
      t.equal(answer.status, 401, `${path} with ${authorization}`);
      t.equal(answer.headers['www-authenticate'], 'Bearer');
      t.match(answer.body.detail, /Authorization: Bearer/);
    }
    const allowed = await server.call('POST', path, valid, { authorization: 'Bearer s3cret-token' });
    t.equal(allowed.status, 200, path);
    t.equal((await server.call('POST', path, valid, { authorization: 'bearer  s3cret-token' })).status, 200, 'the scheme in any case');
  }
  t.equal((await server.call('GET', '/.well-known/authzen-configuration')).status, 200);
  t.equal((await server.call('POST', '/check', { principal: { uri: 'a' }, resource: { uri: 'b' } })).status, 200, '/check stays public');
});

t.test('the metadata document: every endpoint served, at the address it was fetched from, behind a trusted proxy too, varying with what names it', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const direct = await server.call('GET', '/.well-known/authzen-configuration');
  t.equal(direct.status, 200);
  t.match(direct.headers['content-type'], /^application\/json/);
  t.strictSame(direct.body, {
    policy_decision_point: server.url,
    access_evaluation_endpoint: `${server.url}/access/v1/evaluation`,
    access_evaluations_endpoint: `${server.url}/access/v1/evaluations`,
    search_subject_endpoint: `${server.url}/access/v1/search/subject`,
    search_action_endpoint: `${server.url}/access/v1/search/action`,
    search_resource_endpoint: `${server.url}/access/v1/search/resource`,
  });
  t.equal(direct.headers.vary, 'Host', 'a cache keeps one document per Host it was fetched with');
  const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'pdp.example.com' };
  t.equal((await server.call('GET', '/.well-known/authzen-configuration', undefined, forwarded)).body.policy_decision_point, server.url, 'an untrusted peer cannot name another address');
  const proxied = await startServer({ trustProxy: ['127.0.0.1'] });
  t.teardown(proxied.close);
  const behind = await proxied.call('GET', '/.well-known/authzen-configuration', undefined, forwarded);
  t.equal(behind.body.policy_decision_point, 'https://pdp.example.com');
  t.equal(behind.body.access_evaluation_endpoint, 'https://pdp.example.com/access/v1/evaluation');
  t.equal(behind.headers.vary, 'Host, X-Forwarded-Host, X-Forwarded-Proto', 'behind a trusted proxy, per forwarded host and scheme too');
});

/** Replaces the server's policies with `policies`. */
async function replacePolicies(server: TestServer, policies: PlanCase['policies']): Promise<void> {
  for (const policy of (await ok(server, 'GET', '/admin/policies')) as { name: string }[]) await ok(server, 'DELETE', `/admin/policies/${policy.name}`);
  for (const policy of policies) await ok(server, 'POST', '/admin/policies', policy);
}

const RUNS = 40;

/**
 * A case the action's properties and the context decide, added to the random ones: the generators
 * reach such cases only now and then, and the comparison must be seen to depend on them.
 */
const DECIDED_BY_ACTION_AND_CONTEXT: PlanCase = {
  policies: [
    {
      version: '1.0',
      name: 'p0',
      description: null,
      default_effect: 'deny',
      rules: [
        {
          name: 'r0',
          effect: 'allow',
          principal_conditions: [],
          resource_conditions: [],
          action_conditions: [{ path: 'attributes.soft', operator: '==', value: true }],
          context_conditions: [{ path: 'attributes.level', operator: '==', value: 1 }],
          actions: ['read'],
        },
      ],
    },
  ],
  principal: { uri: 'user:alice', attributes: {} },
  action: 'read',
  actionAttributes: { soft: true },
  context: { level: 1 },
  time: '2026-11-28T12:00:00Z',
  known: {},
  resources: [{ uri: 'doc:1', attributes: { a: 'a' } }],
  layout: { attributesPrefix: 'attributes.', uriField: 'uri' },
};

for (const evaluation of ['inline', 'pool'] as const) {
  t.test(`random policies (action and context conditions, value_from), entities and requests with action properties and a context (${RUNS}, evaluation ${evaluation}): every AuthZEN decision is /check's`, async (t) => {
    const server = await startServer({ evaluation });
    t.teardown(server.close);
    // Registered entities, so that type:id names them and properties merge (or conflict) with them.
    await ok(server, 'POST', '/admin/fetchers/registry/entities', { uri: 'user:alice', type: 'principal', attributes: { role: 'r' } });
    await ok(server, 'POST', '/admin/fetchers/registry/entities', { uri: 'doc:1', type: 'resource', attributes: { a: 'a', tags: ['a', 'b'] } });
    let compared = 0;
    let carried = 0;
    for (const example of [...fc.sample(planCase, { numRuns: RUNS, seed: 27 }), DECIDED_BY_ACTION_AND_CONTEXT]) {
      await replacePolicies(server, example.policies);
      const [type, id] = (example.principal.uri ?? 'user:carol').split(':') as [string, string];
      const subject = { type, id, properties: example.principal.attributes };
      const items = example.resources.map((document) => {
        const [resourceType, ...rest] = (document.uri ?? 'doc:none').split(':');
        return { resource: { type: rest.length === 0 ? 'doc' : resourceType!, id: rest.length === 0 ? resourceType! : rest.join(':'), properties: document.attributes } };
      });
      const checks = items.map(({ resource }) => ({
        principal: { uri: `${type}:${id}`, attributes: subject.properties },
        resource: { uri: `${resource.type}:${resource.id}`, attributes: resource.properties },
        action: { name: example.action, attributes: example.actionAttributes },
        context: example.context,
      }));
      const bulk = await ok(server, 'POST', '/check/bulk', checks);
      // The same checks without the action's attributes and the context: where they decide otherwise, AuthZEN had to carry them.
      const bare = (await ok(server, 'POST', '/check/bulk', checks.map((check) => ({ ...check, action: example.action, context: undefined })))) as typeof bulk;
      carried += bare.filter((answer: { allowed: boolean }, index: number) => answer.allowed !== bulk[index].allowed).length;
      const action = { name: example.action, properties: example.actionAttributes };
      const many = await ok(server, 'POST', EVALUATIONS, { subject, action, context: example.context, evaluations: items });
      for (const [index, item] of items.entries()) {
        const expected = bulk[index] as { allowed: boolean; reason: string };
        const got = many.evaluations[index];
        const conflict = expected.reason.includes('has more than one value');
        const wanted = conflict ? { decision: false, context: { error: { status: 400, message: expected.reason } } } : { decision: expected.allowed };
        const single = await server.call('POST', EVALUATION, { subject, action, resource: item.resource, context: example.context });
        const check = await server.call('POST', '/check', checks[index]);
        const singleWanted = check.status === 200 ? [200, { decision: check.body.allowed }] : [check.status, check.body.detail];
        const singleGot = [single.status, single.status === 200 ? single.body : single.body.detail];
        if (JSON.stringify([got, singleGot]) !== JSON.stringify([wanted, singleWanted])) {
          t.fail(`item ${index}: ${JSON.stringify([got, singleGot])} where /check says ${JSON.stringify([wanted, singleWanted])}, in ${JSON.stringify(example)}`);
        }
        compared++;
      }
    }
    t.ok(compared > RUNS, `${compared} decisions compared`);
    t.ok(carried > 0, `${carried} of them decided otherwise without the action's properties and the context`);
  });
}

t.test('the specification examples of subject, resource and action search, and every 400 they can have', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  await ok(server, 'POST', '/admin/policies', {
    name: 'accounts',
    rules: [
      { name: 'staff read', effect: 'allow', principal_conditions: [eq('attributes.staff', true)], resource_conditions: [eq('attributes.kind', 'account')], actions: ['can_read'] },
      { name: 'owners write', effect: 'allow', principal_conditions: [eq('attributes.owner', true)], actions: ['can_write'] },
    ],
  });
  for (const [uri, attributes] of [
    ['user:alice@example.com', { staff: true, owner: true }],
    ['user:bob@example.com', { staff: true }],
    ['user:eve@example.com', { staff: false }],
    ['group:staff', { staff: true }],
    ['account:123', { kind: 'account' }],
    ['account:456', { kind: 'account' }],
    ['account:789', { kind: 'closed' }],
    ['accounts:1', { kind: 'account' }],
  ] as const) {
    await ok(server, 'POST', '/admin/fetchers/registry/entities', { uri, type: uri.startsWith('account') ? 'resource' : 'principal', attributes });
  }
  const subjects = await ok(server, 'POST', '/access/v1/search/subject', {
    subject: { type: 'user' },
    action: { name: 'can_read' },
    resource: { type: 'account', id: '123' },
    context: { time: '2024-10-26T01:22-07:00' },
  });
  t.strictSame(subjects.results, [{ type: 'user', id: 'alice@example.com' }, { type: 'user', id: 'bob@example.com' }]);
  t.strictSame(subjects.page, { next_token: '', count: 2, total: 2 });
  const actions = await ok(server, 'POST', '/access/v1/search/action', {
    subject: { type: 'user', id: 'alice@example.com' },
    resource: { type: 'account', id: '123' },
    context: { time: '2024-10-26T01:22-07:00' },
  });
  t.strictSame(actions.results, [{ name: 'can_read' }, { name: 'can_write' }]);
  const resources = await ok(server, 'POST', '/access/v1/search/resource', {
    subject: { type: 'user', id: 'alice@example.com' },
    action: { name: 'can_read' },
    resource: { type: 'account' },
  });
  t.strictSame(resources, { page: { next_token: '', count: 2, total: 2 }, results: [{ type: 'account', id: '123' }, { type: 'account', id: '456' }] });
  const firstAccount = await server.send(
    'POST',
    '/access/v1/search/resource',
    JSON.stringify({ subject: { type: 'user', id: 'alice@example.com' }, action: { name: 'can_read' }, resource: { type: 'account', id: 'ignored' }, page: { limit: 1 } }),
    { 'content-type': 'application/json', 'x-request-id': 'bfe9eb29-ab87-4ca3-be83-a1d5d8305716' },
  );
  t.equal(firstAccount.headers['x-request-id'], 'bfe9eb29-ab87-4ca3-be83-a1d5d8305716');
  t.strictSame(firstAccount.body.results, [{ type: 'account', id: '123' }], 'an id in the searched resource is ignored');
  const secondAccount = await ok(server, 'POST', '/access/v1/search/resource', {
    subject: { type: 'user', id: 'alice@example.com' },
    action: { name: 'can_read' },
    resource: { type: 'account', id: 'ignored' },
    page: { token: firstAccount.body.page.next_token, limit: 1 },
  });
  t.strictSame(secondAccount, { page: { next_token: '', count: 1 }, results: [{ type: 'account', id: '456' }] });
  t.strictSame(
    (await ok(server, 'POST', '/access/v1/search/resource', { subject: { type: 'user', id: 'eve@example.com' }, action: { name: 'can_read' }, resource: { type: 'account' } })).results,
    [],
    'none for a subject the policies deny',
  );
  const paged = await ok(server, 'POST', '/access/v1/search/subject', { subject: { type: 'user', id: 'ignored' }, action: { name: 'can_read' }, resource: { type: 'account', id: '123' }, page: { limit: 1 } });
  t.strictSame(paged.results, [{ type: 'user', id: 'alice@example.com' }], 'an id in the searched subject is ignored');
  t.ok(paged.page.next_token.length > 0);
  t.strictSame([paged.page.count, paged.page.total], [1, undefined], 'no total on a page that does not hold every result');
  const last = await ok(server, 'POST', '/access/v1/search/subject', { subject: { type: 'user', id: 'ignored' }, action: { name: 'can_read' }, resource: { type: 'account', id: '123' }, page: { token: paged.page.next_token, limit: 1 } });
  t.strictSame(last, { page: { next_token: '', count: 1 }, results: [{ type: 'user', id: 'bob@example.com' }] }, 'the last page');
  const changed = await server.call('POST', '/access/v1/search/subject', { subject: { type: 'user' }, action: { name: 'can_write' }, resource: { type: 'account', id: '123' }, page: { token: paged.page.next_token, limit: 1 } });
  t.strictSame([changed.status, changed.body.detail], [400, 'page.token continues another search: send the same subject, action, resource, context and page.limit as the request that gave it']);
  for (const [path, body, detail] of [
    ['subject', { action: { name: 'a' }, resource: { type: 'r', id: '1' } }, /subject/],
    ['subject', { subject: {}, action: { name: 'a' }, resource: { type: 'r', id: '1' } }, /subject.*type/],
    ['subject', { subject: { type: 'user' }, resource: { type: 'r', id: '1' } }, /action/],
    ['subject', { subject: { type: 'user' }, action: { name: 'a' }, resource: { type: 'r' } }, /resource.*id/],
    ['subject', { subject: { type: 'user' }, action: { name: 'a' }, resource: { type: 'r', id: '1' }, page: { limit: -1 } }, /page\.limit/],
    ['subject', { subject: { type: 'user' }, action: { name: 'a' }, resource: { type: 'r', id: '1' }, page: { token: 'not-ours' } }, /page\.token is not a token/],
    ['resource', { action: { name: 'a' }, resource: { type: 'r' } }, /subject/],
    ['resource', { subject: { type: 'user' }, action: { name: 'a' }, resource: { type: 'r' } }, /subject.*id/],
    ['resource', { subject: { type: 'user', id: 'a' }, resource: { type: 'r' } }, /action/],
    ['resource', { subject: { type: 'user', id: 'a' }, action: { name: 'a' }, resource: { id: '1' } }, /resource.*type/],
    ['resource', { subject: { type: 'user', id: 'a' }, action: { name: 'a' }, resource: { type: 'r' }, page: { limit: 1.5 } }, /page\.limit/],
    ['resource', { subject: { type: 'user', id: 'a' }, action: { name: 'a' }, resource: { type: 'r' }, page: { token: 'not-ours' } }, /page\.token is not a token/],
    ['action', { resource: { type: 'r', id: '1' } }, /subject/],
    ['action', { subject: { type: 'user' }, resource: { type: 'r', id: '1' } }, /subject.*id/],
    ['action', { subject: { type: 'user', id: 'a' } }, /resource/],
  ] as [string, unknown, RegExp][]) {
    const answer = await server.call('POST', `/access/v1/search/${path}`, body);
    t.equal(answer.status, 400, `${path}: ${JSON.stringify(body)}`);
    t.match(answer.body.detail, detail);
  }
});

t.test('search against brute force: random policies and registries, action properties and contexts, every page of every search is exactly what /check allows', async (t) => {
  const server = await startServer({ maxPageSize: 7 });
  t.teardown(server.close);
  const users = Array.from({ length: 23 }, (_, index) => `user:u${String(index).padStart(2, '0')}`);
  let searched = 0;
  for (const example of fc.sample(planCase, { numRuns: 12, seed: 31 })) {
    await replacePolicies(server, example.policies);
    for (let listed = await ok(server, 'GET', '/admin/fetchers/registry/entities?limit=7'); listed.length > 0; listed = await ok(server, 'GET', '/admin/fetchers/registry/entities?limit=7')) {
      for (const { uri } of listed as { uri: string }[]) await ok(server, 'DELETE', `/admin/fetchers/registry/entities/${encodeURIComponent(uri)}`);
    }
    // Users with the drawn principal's attributes, every third with another role, and entities of another type.
    for (const [index, uri] of [...users, 'group:g1', 'usr:x'].entries()) {
      const attributes = index % 3 === 0 ? { ...example.principal.attributes, role: 's' } : example.principal.attributes;
      await ok(server, 'POST', '/admin/fetchers/registry/entities', { uri, type: 'principal', attributes: Object.keys(attributes).length === 0 ? { none: 1 } : attributes });
    }
    const resource = { type: 'doc', id: '1', properties: example.resources[0]!.attributes };
    const { context } = example;
    const action = { name: example.action, attributes: example.actionAttributes };
    const checks = users.map((uri) => ({ principal: { uri }, resource: { uri: 'doc:1', attributes: resource.properties }, action, context }));
    const decided = (await ok(server, 'POST', '/check/bulk', checks)) as { allowed: boolean }[];
    const expected = users.filter((_, index) => decided[index]!.allowed).map((uri) => ({ type: 'user', id: uri.slice('user:'.length) }));
    const pages: unknown[][] = [];
    let token: string | undefined;
    do {
      const answer = await ok(server, 'POST', '/access/v1/search/subject', {
        subject: { type: 'user' },
        action: { name: example.action, properties: example.actionAttributes },
        resource,
        context,
        page: token === undefined ? {} : { token },
      });
      t.equal(answer.page.total, pages.length === 0 && answer.page.next_token === '' ? expected.length : undefined, 'a total only on a page holding every result');
      t.ok(answer.results.length <= 7);
      pages.push(answer.results);
      token = answer.page.next_token;
    } while (token !== '' && pages.length < 10);
    if (JSON.stringify(pages.flat()) !== JSON.stringify(expected)) t.fail(`subjects ${JSON.stringify(pages)} where /check allows ${JSON.stringify(expected)} (${JSON.stringify(example)})`);
    t.equal(pages.length, Math.max(1, Math.ceil(expected.length / 7)), 'as many pages as the limit makes');

    const actions = [...new Set(example.policies.flatMap((policy) => policy.rules.flatMap((rule) => rule.actions)))].sort();
    const principal = { uri: users[1]! };
    const byAction = (await ok(server, 'POST', '/check/bulk', actions.map((name) => ({ principal, resource: { uri: 'doc:1', attributes: resource.properties }, action: name, context })))) as { allowed: boolean }[];
    const found = await ok(server, 'POST', '/access/v1/search/action', { subject: { type: 'user', id: 'u01' }, resource, context });
    t.strictSame(found.results, actions.filter((_, index) => byAction[index]!.allowed).map((name) => ({ name })), 'actions: exactly those /check allows');
    searched++;
  }
  t.equal(searched, 12);
});
