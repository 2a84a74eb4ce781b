import t from 'tap';
import { VerdictClient } from '../../clients/node/src/index.js';
import { startServer } from '../helpers/server.js';
import { roleRule } from './helpers.js';

// The Node client's other calls against a real Verdict: each answers what the server's own route answers.

t.test('plan, AuthZEN evaluation and evaluations, and an entity deleted: as the routes answer them', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', roleRule('readers', 'reader'))).status, 200);
  const client = new VerdictClient({ url: server.url });
  t.teardown(() => client.close());

  const planRequest = { principal: { attributes: { role: 'reader' } }, action: 'read' };
  t.same(await client.plan(planRequest), (await server.call('POST', '/plan', planRequest)).body);
  const evaluation = { subject: { type: 'user', id: 'alice', properties: { role: 'reader' } }, action: { name: 'read' }, resource: { type: 'doc', id: '1' } };
  t.same(await client.evaluation(evaluation), { decision: true });
  t.same(await client.evaluation(evaluation, { explain: true }), (await server.call('POST', '/access/v1/evaluation?explain=true', evaluation)).body);
  const evaluations = { subject: evaluation.subject, action: evaluation.action, resource: evaluation.resource, evaluations: [{}, { action: { name: 'write' } }] };
  t.same(await client.evaluations(evaluations), { evaluations: [{ decision: true }, { decision: false }] });

  await client.registerEntity({ uri: 'user:bob', type: 'principal', attributes: { role: 'reader' } });
  const bob = { principal: { uri: 'user:bob' }, resource: { uri: 'doc:1' }, action: 'read' };
  t.equal((await client.check(bob)).allowed, true);
  await client.deleteEntity('user:bob');
  t.equal((await server.call('GET', '/admin/fetchers/registry/entities/user%3Abob')).status, 404);
  t.equal((await client.check(bob)).allowed, false, 'deleted: bob is no reader any more');
});
