import t, { type Test } from 'tap';
import { request } from 'undici';
import { startServer, type TestServer } from '../helpers/server.js';

// ?explain=true on a real server: the trace of each decision; without it, answers are the bytes
// they always were. Bulks are compared between a server that decides them in worker threads
// (evaluation: 'pool') and one that decides them on the front thread.

const JSON_HEADERS = { 'content-type': 'application/json' };
const eq = (key: string, value: unknown) => ({ path: `attributes.${key}`, operator: '==', value });

const IT_DESK = {
  name: 'IT desk',
  rules: [
    { name: 'suspended', effect: 'deny', principal_conditions: [eq('suspended', true)], actions: ['administer'] },
    { name: 'IT admins', effect: 'allow', principal_conditions: [eq('department', 'it')], resource_conditions: [eq('kind', 'laptop')], actions: ['administer'] },
  ],
};

async function itServer(t: Test, overrides = {}): Promise<TestServer> {
  const server = await startServer(overrides);
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', IT_DESK)).status, 200);
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:alice', type: 'principal', attributes: { department: 'it' } })).status, 200);
  return server;
}

const checks = [
  { principal: { attributes: { department: 'it' } }, resource: { attributes: { kind: 'laptop' } }, action: 'administer' },
  { principal: { attributes: { department: 'it', suspended: true } }, resource: { attributes: { kind: 'laptop' } }, action: 'administer' },
  { principal: { attributes: { department: 'hr' } }, resource: { attributes: { kind: 'laptop' } }, action: 'administer' },
  { principal_attributes: { department: 'it' }, resource_attributes: { kind: 'desk' }, action: 'read' },
];

t.test('without explain (or with explain=false) an answer is exactly {allowed, reason}, byte for byte', async (t) => {
  const server = await itServer(t);
  for (const check of checks) {
    const plain = await rawAnswer(server, '/check', check);
    const on = await server.call('POST', '/check?explain=true', check);
    t.equal(on.status, 200);
    const { explain, ...decision } = on.body;
    t.type(explain, 'object');
    t.equal(plain, `{"allowed":${decision.allowed},"reason":${JSON.stringify(decision.reason)}}`);
    t.equal(await rawAnswer(server, '/check?explain=false', check), plain);
  }
  const bulkPlain = await rawAnswer(server, '/check/bulk', checks);
  const bulkOn = await server.call('POST', '/check/bulk?explain=true', checks);
  t.equal(bulkPlain, JSON.stringify(bulkOn.body.map(({ allowed, reason }: { allowed: boolean; reason: string }) => ({ allowed, reason }))));
  t.equal(await rawAnswer(server, '/check/bulk?explain=false', checks), bulkPlain);
});

/** The body's bytes exactly as the server sent them. */
async function rawAnswer(server: TestServer, path: string, body: unknown): Promise<string> {
  const response = await request(server.url + path, { method: 'POST', body: JSON.stringify(body), headers: JSON_HEADERS });
  return response.body.text();
}

t.test('the trace of /check: merged attributes, every rule of the action, the deciding rule', async (t) => {
  const server = await itServer(t);
  const answer = await server.call('POST', '/check?explain=true', {
    principal: { uri: 'user:alice', attributes: { suspended: true } },
    resource: { attributes: { kind: 'laptop' } },
    action: 'administer',
  });
  t.same(answer.body, {
    allowed: false,
    reason: 'Rule suspended denied the action in policy it-desk',
    explain: {
      revision: Number(answer.headers['verdict-revision']),
      action: 'administer',
      principal: { uri: 'user:alice', attributes: { department: 'it', suspended: true } },
      resource: { uri: null, attributes: { kind: 'laptop' } },
      policies: [
        {
          name: 'it-desk',
          default_effect: 'deny',
          rules: [
            { name: 'suspended', effect: 'deny', matched: true },
            { name: 'it-admins', effect: 'allow', matched: true },
          ],
        },
      ],
      decided_by: {
        kind: 'rule',
        effect: 'deny',
        why: 'Rule suspended is the first rule of policy it-desk to match, and it denies: a deny wins over any allow',
        policy: 'it-desk',
        rule: 'suspended',
      },
    },
  });
  const missing = await server.call('POST', '/check?explain=true', { principal: { uri: 'user:nobody' }, resource: { attributes: { kind: 'laptop' } }, action: 'administer' });
  t.same(missing.body.explain.principal, { uri: 'user:nobody', attributes: {} }, 'an unregistered uri contributes no attributes');
  t.same(missing.body.explain.policies[0].rules[1].failed, { side: 'principal', path: 'attributes.department', operator: '==', expected: 'it', missing: true });
});

t.test('explain must be a boolean; a conflict is still 400', async (t) => {
  const server = await itServer(t);
  for (const path of ['/check?explain=maybe', '/check/bulk?explain=maybe']) {
    const answer = await server.call('POST', path, path === '/check/bulk?explain=maybe' ? checks : checks[0]);
    t.equal(answer.status, 422, path);
    t.same(answer.body, { detail: [{ loc: ['query', 'explain'], msg: 'must be of type boolean', type: 'type_error' }] });
  }
  const conflict = await server.call('POST', '/check?explain=true', { principal: { uri: 'user:alice', attributes: { department: 'hr' } }, resource: { attributes: { kind: 'laptop' } } });
  t.same(conflict, { ...conflict, status: 400, body: { detail: "For entity 'user:alice', attribute 'department' has more than one value" } });
});

t.test('bulks: decided in worker threads, the explanations are the bytes the front writes', async (t) => {
  const pooled = await itServer(t, { evaluation: 'pool', workers: 1 });
  const inline = await itServer(t, { evaluation: 'inline' });
  const body = Array.from({ length: 40 }, (_, index) => checks[index % checks.length]);
  const fromPool = await pooled.call('POST', '/check/bulk?explain=true', body);
  const fromPoolText = await rawAnswer(pooled, '/check/bulk?explain=true', body);
  const fromFrontText = await rawAnswer(inline, '/check/bulk?explain=true', body);
  t.equal(fromPool.status, 200);
  t.equal(fromPool.body.length, 40);
  t.equal(fromPoolText, fromFrontText);
  t.same(
    fromPool.body.slice(0, 4).map((answer: { explain: { decided_by: { kind: string; rule?: string } } }) => answer.explain.decided_by.rule ?? answer.explain.decided_by.kind),
    ['it-admins', 'suspended', 'default', 'default'],
  );
  const plain = await pooled.call('POST', '/check/bulk', body);
  t.notOk(plain.body.some((answer: object) => 'explain' in answer), 'no explanation unless asked');
});

t.test('bulks naming registered entities (decided on the front) and conflicting items', async (t) => {
  const pooled = await itServer(t, { evaluation: 'pool', workers: 1 });
  const answers = await pooled.call('POST', '/check/bulk?explain=true', [
    { principal: { uri: 'user:alice' }, resource: { attributes: { kind: 'laptop' } }, action: 'administer' },
    { principal: { uri: 'user:alice', attributes: { department: 'hr' } }, resource: { attributes: { kind: 'laptop' } }, action: 'administer' },
  ]);
  t.equal(answers.status, 200);
  t.same(answers.body[0].explain.principal, { uri: 'user:alice', attributes: { department: 'it' } });
  t.same(answers.body[1], { allowed: false, reason: "For entity 'user:alice', attribute 'department' has more than one value" }, 'a conflict decides nothing, so there is nothing to explain');
});

t.test('explanations longer than --max-answer-size: 400 saying to explain fewer, wherever the bulk is decided; one check, to ask without explain', async (t) => {
  const limits = { maxAnswerSize: 8192, maxPlanSize: 1024 };
  const pooled = await itServer(t, { ...limits, evaluation: 'pool', workers: 1 });
  const inline = await itServer(t, { ...limits, evaluation: 'inline' });
  const many = Array.from({ length: 40 }, (_, index) => checks[index % checks.length]);
  for (const [where, server] of [['in a worker', pooled], ['on the front', inline]] as const) {
    const refused = await server.call('POST', '/check/bulk?explain=true', many);
    t.strictSame([refused.status, refused.body], [400, { detail: 'The explanations would be longer than 8192 characters: explain fewer checks per call (or none)' }], where);
    t.equal((await server.call('POST', '/check/bulk?explain=true', many.slice(0, 4))).status, 200, `${where}: fewer fit`);
    t.equal((await server.call('POST', '/check/bulk', many)).status, 200, `${where}: without explanations`);
  }
  const byUri = await pooled.call('POST', '/check/bulk?explain=true', many.map((check) => ({ ...check, principal: { uri: 'user:alice' } })));
  t.equal(byUri.status, 400, 'a bulk naming registered entities, decided on the front');

  // One check whose principal's long attribute is the actual value of every rule it fails.
  const long = 'x'.repeat(1000);
  const rules = Array.from({ length: 10 }, (_, index) => ({ name: `r${index}`, effect: 'allow', principal_conditions: [eq('team', `team-${index}`)], actions: ['read'] }));
  t.equal((await inline.call('POST', '/admin/policies', { name: 'teams', rules })).status, 200);
  const one = { principal: { attributes: { team: long } }, resource: { attributes: { kind: 'laptop' } }, action: 'read' };
  const single = await inline.call('POST', '/check?explain=true', one);
  t.strictSame([single.status, single.body], [400, { detail: 'The explanation would be longer than 8192 characters: ask without explain=true' }]);
  t.same((await inline.call('POST', '/check', one)).body, { allowed: false, reason: 'Action denied by default effect' }, 'the decision itself is answered');
});
