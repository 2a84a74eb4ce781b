import t from 'tap';
import { answers, decides, emptyServer, refuses } from '../helpers/it-desk.js';

// `"actions": ["*"]` over the API: every action, on every door; a check that names `*` itself is refused.

const SUSPENDED = {
  name: 'suspended',
  default_effect: 'allow',
  rules: [{ name: 'suspended do nothing', effect: 'deny', principal_conditions: [{ path: 'attributes.suspended', operator: '==', value: true }], actions: ['*'] }],
};
const READERS = { name: 'readers', rules: [{ name: 'staff read', effect: 'allow', principal_conditions: [{ path: 'attributes.staff', operator: '==', value: true }], actions: ['read', 'list'] }] };
const DENIED = { allowed: false, reason: 'Rule suspended-do-nothing denied the action in policy suspended' };
const ASKED_ANY = "The action '*' stands for every action in a rule's actions; a check must name the one action it asks about";

const check = (attributes: Record<string, unknown>, action: string) => ({ principal: { attributes }, resource: { attributes: { kind: 'report' } }, action });

t.test('a deny of every action denies each action, named by a rule or not, on /check, in bulks (front and pool) and on AuthZEN', async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await emptyServer(t, { evaluation, workers: 1 });
    for (const policy of [READERS, SUSPENDED]) t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
    for (const action of ['read', 'delete', 'export']) await decides(t, server, check({ staff: true, suspended: true }, action), DENIED, '/check', `${evaluation}: ${action}`);
    await decides(t, server, ['read', 'delete', 'export'].map((action) => check({ staff: true, suspended: true }, action)), [DENIED, DENIED, DENIED], '/check/bulk', `${evaluation}: a bulk`);
    await refuses(t, server, check({ staff: true }, '*'), ASKED_ANY, '/check', `${evaluation}: a check naming '*' is refused`);
    await decides(t, server, [check({ staff: true }, 'read'), check({ staff: true }, '*')], [{ allowed: true, reason: 'Rule staff-read allowed the action in policy readers' }, { allowed: false, reason: ASKED_ANY }], '/check/bulk', `${evaluation}: in a bulk, only that item is denied`);
    const evaluationOf = (name: string) => ({ subject: { type: 'user', id: 'u', properties: { suspended: true } }, action: { name }, resource: { type: 'report', id: '1' } });
    await answers(t, server, evaluationOf('export'), 200, { decision: false }, '/access/v1/evaluation', `${evaluation}: AuthZEN`);
    t.equal((await server.call('POST', '/access/v1/evaluation', evaluationOf('*'))).status, 400, 'AuthZEN refuses it too');
  }
});

t.test("AuthZEN's action search lists the actions rules name, never '*' itself; validate says nothing about '*'", async (t) => {
  const server = await emptyServer(t);
  const anything = { name: 'admins', rules: [{ name: 'admins', effect: 'allow', principal_conditions: [{ path: 'attributes.admin', operator: '==', value: true }], actions: ['*'] }] };
  for (const policy of [READERS, anything]) t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
  const found = await server.call('POST', '/access/v1/search/action', { subject: { type: 'user', id: 'a', properties: { admin: true } }, resource: { type: 'report', id: '1' } });
  t.equal(found.status, 200, JSON.stringify(found.body));
  t.same(found.body.results, [{ name: 'list' }, { name: 'read' }]);
  const validated = await server.call('POST', '/admin/policies/validate', [READERS, anything]);
  t.equal(validated.status, 200, JSON.stringify(validated.body));
  t.notMatch(JSON.stringify(validated.body), /'\*'/);
});
