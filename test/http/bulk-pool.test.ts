import t, { type Test } from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';

// Every bulk of these servers is read and decided in a real worker thread (evaluation: 'pool'),
// and compared with a server that decides everything on the front thread.

const policy = (name: string, effect: 'allow' | 'deny', department: string) => ({
  name,
  rules: [
    {
      name: `${name}-rule`,
      effect,
      principal_conditions: [{ path: 'attributes.department', operator: '==', value: department }],
      resource_conditions: [{ path: 'attributes.level', operator: 'lte', value: 3 }],
      actions: ['read'],
    },
  ],
});

const item = (index: number) => ({
  principal: { attributes: { department: ['it', 'hr', 'ops'][index % 3] } },
  resource: { attributes: { level: index % 5 } },
  action: index % 7 === 0 ? 'write' : 'read',
});

async function servers(t: Test): Promise<{ pooled: TestServer; inline: TestServer }> {
  const pooled = await startServer({ evaluation: 'pool', workers: 2 });
  const inline = await startServer({ evaluation: 'inline' });
  t.teardown(async () => {
    await pooled.close();
    await inline.close();
  });
  for (const server of [pooled, inline]) {
    for (const body of [policy('it-reads', 'allow', 'it'), policy('hr-blocked', 'deny', 'hr'), policy('hr-reads', 'allow', 'hr')]) {
      t.equal((await server.call('POST', '/admin/policies', body)).status, 200);
    }
  }
  return { pooled, inline };
}

t.test('the pool decides exactly as the front does', async (t) => {
  const { pooled, inline } = await servers(t);
  const body = Array.from({ length: 500 }, (_, index) => item(index));
  const fromPool = await pooled.call('POST', '/check/bulk', body);
  const fromFront = await inline.call('POST', '/check/bulk', body);
  t.equal(fromPool.status, 200);
  t.match(fromPool.headers['content-type'], /^application\/json/);
  t.same(fromPool.body, fromFront.body);
  const reasons = new Set(fromPool.body.map((decision: { reason: string }) => decision.reason));
  t.ok(reasons.has('Rule it-reads-rule allowed the action in policy it-reads'));
  t.ok(reasons.has('Rule hr-blocked-rule denied the action in policy hr-blocked'));
  t.ok(reasons.has('Action denied by default effect'));
});

t.test('a policy write is enforced by the next bulk decided in a worker, and so is its deletion', async (t) => {
  const { pooled } = await servers(t);
  const opsItem = { principal: { attributes: { department: 'ops' } }, resource: { attributes: { level: 1 } }, action: 'read' };
  const body = Array.from({ length: 50 }, () => opsItem);
  t.same((await pooled.call('POST', '/check/bulk', body)).body[0], { allowed: false, reason: 'Action denied by default effect' });
  t.equal((await pooled.call('POST', '/admin/policies', policy('ops-reads', 'allow', 'ops'))).status, 200);
  const after = await pooled.call('POST', '/check/bulk', body);
  t.same(after.body[49], { allowed: true, reason: 'Rule ops-reads-rule allowed the action in policy ops-reads' });
  t.equal((await pooled.call('DELETE', '/admin/policies/ops-reads')).status, 200);
  t.same((await pooled.call('POST', '/check/bulk', body)).body[0], { allowed: false, reason: 'Action denied by default effect' });
});

t.test('items naming registered entities are resolved on the front, conflicts deny only their item', async (t) => {
  const { pooled } = await servers(t);
  const registered = await pooled.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:ann', attributes: { department: 'it' } });
  t.equal(registered.status, 200);
  const body = [
    { principal: { uri: 'user:ann' }, resource: { attributes: { level: 2 } }, action: 'read' },
    { principal: { uri: 'user:ann', attributes: { department: 'hr' } }, resource: { attributes: { level: 2 } }, action: 'read' },
    item(1),
  ];
  const answer = await pooled.call('POST', '/check/bulk', body);
  t.equal(answer.status, 200);
  t.same(answer.body, [
    { allowed: true, reason: 'Rule it-reads-rule allowed the action in policy it-reads' },
    { allowed: false, reason: "For entity 'user:ann', attribute 'department' has more than one value" },
    { allowed: false, reason: 'Rule hr-blocked-rule denied the action in policy hr-blocked' },
  ]);
});

t.test('client errors from a worker are the same as from the front', async (t) => {
  const { pooled, inline } = await servers(t);
  const json = { 'content-type': 'application/json' };
  const bodies = [
    '[',
    '{}',
    '[]',
    JSON.stringify(Array.from({ length: 1001 }, () => item(0))),
    JSON.stringify([item(0), { principal: {}, resource: { attributes: { a: 1 } } }]),
    JSON.stringify([item(0), item(1), { principal: { attributes: { a: 1 } }, resource: { attributes: { a: 1 } }, action: 5 }]),
  ];
  for (const text of bodies) {
    const fromPool = await pooled.send('POST', '/check/bulk', text, json);
    const fromFront = await inline.send('POST', '/check/bulk', text, json);
    t.equal(fromPool.status, fromFront.status, text.slice(0, 40));
    t.same(fromPool.body, fromFront.body, text.slice(0, 40));
    t.ok(fromPool.status >= 400 && fromPool.status < 500);
  }
  const indexed = await pooled.send('POST', '/check/bulk', bodies[5]!, json);
  t.same(indexed.body.detail[0].loc, ['body', 2, 'action']);
});

t.test('a bulk that plainly names a uri is decided on the front without a trip to a worker; one naming it otherwise still comes back', async (t) => {
  const { pooled } = await servers(t);
  t.equal((await pooled.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:ann', attributes: { department: 'it' } })).status, 200);
  const threads = async () => Number(/^verdict_worker_pool_threads (\d+)$/m.exec((await pooled.call('GET', '/metrics')).body as string)?.[1]);
  const allowedAnn = { allowed: true, reason: 'Rule it-reads-rule allowed the action in policy it-reads' };
  const resource = '"resource":{"attributes":{"level":2}},"action":"read"';

  // As JSON encoders write it, compact or spaced (Python's json.dumps), nested or flat.
  for (const body of [`[{"principal":{"uri":"user:ann"},${resource}}]`, `[{"principal_uri": "user:ann",${resource}}]`, `[{"principal" : {"uri"\n:\t"user:ann"},${resource}}]`]) {
    const answer = await pooled.send('POST', '/check/bulk', body, { 'content-type': 'application/json' });
    t.same([answer.status, answer.body], [200, [allowedAnn]], body);
  }
  t.equal(await threads(), 0, 'no worker was started: the front decided every one');

  // A null uri (as the Python SDK sends it) names nothing: the bulk goes to a worker.
  const unnamed = await pooled.send('POST', '/check/bulk', `[{"principal":{"uri":null,"attributes":{"department":"it"}},${resource}}]`, { 'content-type': 'application/json' });
  t.same([unnamed.status, unnamed.body], [200, [allowedAnn]]);
  t.equal(await threads(), 2, 'the workers started with it');

  // A key written with an escape is not seen at a glance: the worker reads it and hands the bulk back.
  const escaped = await pooled.send('POST', '/check/bulk', `[{"principal":{"\\u0075ri":"user:ann"},${resource}}]`, { 'content-type': 'application/json' });
  t.same([escaped.status, escaped.body], [200, [allowedAnn]], 'decided on the registered attributes');
});

t.test('bulks that reach workers holding other policies all at once share one copy of what the workers lack', async (t) => {
  const { pooled } = await servers(t);
  const copies = async () => {
    const text = (await pooled.call('GET', '/metrics')).body as string;
    const made = (of: string) => Number(new RegExp(`^verdict_worker_pool_copies_total\\{of="${of}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
    return { policies: made('policies'), changes: made('changes'), bytes: Number(/^verdict_worker_pool_copies_bytes (\d+)$/m.exec(text)?.[1]) };
  };
  const body = Array.from({ length: 20 }, (_, index) => item(index));
  const bulks = async (count: number) => {
    const answers = await Promise.all(Array.from({ length: count }, () => pooled.call('POST', '/check/bulk', body)));
    t.same(new Set(answers.map((answer) => answer.status)), new Set([200]));
  };
  await bulks(32);
  const first = await copies();
  t.same([first.policies, first.changes], [1, 0], 'one copy of the policy set for every task and worker, however many were in flight');
  t.ok(first.bytes > 0);

  // A worker one write behind derives its snapshot from the policy written: one copy of it. A worker that took none
  // of the first bulks (Piscina gave them all to the other, which was ready first) holds nothing: one copy of the new set.
  t.equal((await pooled.call('POST', '/admin/policies', policy('ops-reads', 'allow', 'ops'))).status, 200);
  await bulks(32);
  const after = await copies();
  const newSets = after.policies - first.policies;
  t.ok(after.changes <= 1 && newSets <= 1, `at most one copy of the changes and one of the set for 32 bulks: ${after.changes} and ${newSets}`);
  t.ok(after.changes + newSets >= 1, 'the workers got what they lacked');
  if (after.changes === 1) t.ok(after.bytes > first.bytes, 'the copy of the changes kept beside the set');
});
