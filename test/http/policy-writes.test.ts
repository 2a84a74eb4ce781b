import t from 'tap';
import { rmSync } from 'node:fs';
import { startServer, temporaryDataDir, type TestServer } from '../helpers/server.js';

// Every kind of policy write, through two servers on one data directory (as two processes on one
// store): each write counts at the next check of the server that answered it, and at the other's
// check once it serves the write's revision (`verdict-min-revision`, waiting on its change feed);
// both decide and explain exactly as a server that loads the resulting policies afresh.

const keyed = (name: string, id: string, effect: 'allow' | 'deny' = 'allow', defaultEffect: 'allow' | 'deny' = 'deny') => ({
  name,
  default_effect: defaultEffect,
  rules: [
    {
      name: 'by-id',
      effect,
      principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'reader' }],
      resource_conditions: [{ path: 'attributes.id', operator: 'in', value: [id, 'shared'] }],
      actions: ['read'],
    },
    { name: 'everyone-lists', effect: 'allow', principal_conditions: [], resource_conditions: [{ path: 'uri', operator: 'startswith', value: `${id}:` }], actions: ['list'] },
  ],
});

const CHECKS = ['doc-a', 'doc-b', 'doc-c', 'shared', 'other'].flatMap((id) => [
  { principal: { attributes: { role: 'reader' } }, resource: { attributes: { id } }, action: 'read' },
  { principal: { attributes: { role: 'writer' } }, resource: { attributes: { id } }, action: 'read' },
  { principal: { attributes: { role: 'guest' } }, resource: { uri: `${id}:1` }, action: 'list' },
]);

/** What `server` decides and explains for every check, once it serves `revision`. */
async function decisions(server: TestServer, revision: number): Promise<unknown[]> {
  return Promise.all(
    CHECKS.map(async (check) => {
      const answer = await server.call('POST', '/check?explain=true', check, { 'verdict-min-revision': String(revision) });
      if (answer.status !== 200) throw new Error(`check answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      const { revision: _, ...explained } = answer.body.explain;
      return { allowed: answer.body.allowed, reason: answer.body.reason, explained };
    }),
  );
}

t.test('policy writes of every kind count at the next check, in the writing server and in another on the same store', async (t) => {
  const dataDir = temporaryDataDir();
  const first = await startServer({ dataDir });
  const second = await startServer({ dataDir });
  t.teardown(async () => {
    await first.close();
    await second.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const writes: [TestServer, string, string, unknown?][] = [
    [first, 'POST', '/admin/policies', keyed('a', 'doc-a')],
    [second, 'POST', '/admin/policies', keyed('b', 'doc-b', 'deny', 'allow')],
    [first, 'POST', '/admin/policies', keyed('c', 'doc-c')],
    [second, 'PUT', '/admin/policies/a', keyed('a', 'doc-b')],
    [first, 'DELETE', '/admin/policies/b'],
    [second, 'POST', '/admin/policies/b/restore?version=1'],
    [first, 'PUT', '/admin/policies/c', keyed('c', 'doc-c', 'deny')],
    [second, 'DELETE', '/admin/policies/a'],
  ];
  let previous = await decisions(first, 0);
  for (const [writer, method, path, body] of writes) {
    const answer = await writer.call(method, path, body);
    t.equal(answer.status, 200, `${method} ${path}`);
    const revision = Number(answer.headers['verdict-revision']);
    const reader = writer === first ? second : first;
    const written = await decisions(writer, revision);
    t.notSame(written, previous, `${method} ${path} changes what the writing server decides at once`);
    t.same(await decisions(reader, revision), written, 'the other server decides the same once it serves the revision');
    const afresh = await startServer({ dataDir });
    try {
      t.same(await decisions(afresh, revision), written, 'and so does a server that loads the policies afresh');
    } finally {
      await afresh.close();
    }
    previous = written;
  }
});
