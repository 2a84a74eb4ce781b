import t from 'tap';
import { answers, decides, emptyServer } from '../helpers/it-desk.js';

// matches and in_cidr over the API: what a write refuses, what checks, AuthZEN evaluations and bulks
// decide, what an explanation shows, and what a plan says it cannot filter.

const OFFICE = ['10.16.0.0/12', '2001:db8:42::/48'];

/** Staff may connect from the office network; nobody may read a path under /tmp/. */
const NETWORK = {
  name: 'network',
  rules: [
    { name: 'no temporary files', effect: 'deny', resource_conditions: [{ path: 'attributes.path', operator: 'matches', value: '^/tmp/' }], actions: ['read'] },
    { name: 'office', effect: 'allow', principal_conditions: [{ path: 'attributes.staff', operator: '==', value: true }], context_conditions: [{ path: 'attributes.ip', operator: 'in_cidr', value: OFFICE }], actions: ['read'] },
  ],
};
const ALLOWED = { allowed: true, reason: 'Rule office allowed the action in policy network' };
const DENIED = { allowed: false, reason: 'Action denied by default effect' };
const TEMPORARY = { allowed: false, reason: 'Rule no-temporary-files denied the action in policy network' };

const checkFrom = (ip: unknown, path = '/reports/1') => ({ principal: { attributes: { staff: true } }, resource: { attributes: { path } }, action: 'read', context: { ip } });

t.test('a pattern the linear-time engine does not take, a range that is not one, and value_from on matches are refused, naming them', async (t) => {
  const server = await emptyServer(t);
  const written = (condition: unknown) => server.call('POST', '/admin/policies', { name: 'p', rules: [{ name: 'r', effect: 'allow', context_conditions: [condition], actions: ['read'] }] });
  const refusals: [unknown, RegExp][] = [
    [{ path: 'attributes.path', operator: 'matches', value: '(a)\\1' }, /operator 'matches' needs a regular expression: .*RE2 syntax/],
    [{ path: 'attributes.path', operator: 'not_matches', value: 'x'.repeat(1001) }, /longer than 1000 characters/],
    [{ path: 'attributes.ip', operator: 'in_cidr', value: '10.0.0.0/33' }, /operator 'in_cidr' needs CIDR ranges: '10.0.0.0\/33' has a prefix length that is not 0 to 32/],
    [{ path: 'attributes.ip', operator: 'in_cidr', value: Array(257).fill('10.0.0.0/8') }, /at most 256 CIDR ranges/],
    [{ path: 'attributes.path', operator: 'matches', value_from: 'principal.attributes.pattern' }, /operator 'matches' takes no value_from: its pattern is compiled once/],
  ];
  for (const [condition, message] of refusals) {
    const response = await written(condition);
    t.equal(response.status, 422, JSON.stringify(condition).slice(0, 80));
    t.match(response.body.detail?.[0]?.msg, message);
  }
});

t.test('checks, bulks and AuthZEN evaluations decide by the ranges and the pattern, on the front and in the pool', async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await emptyServer(t, { evaluation, workers: 1 });
    t.equal((await server.call('POST', '/admin/policies', NETWORK)).status, 200);
    await decides(t, server, checkFrom('10.20.3.4'), ALLOWED);
    await decides(t, server, checkFrom('2001:db8:42:7::1'), ALLOWED);
    await decides(t, server, checkFrom('10.32.0.1'), DENIED);
    await decides(t, server, checkFrom('office'), DENIED, '/check', 'not an address');
    await decides(t, server, checkFrom('10.20.3.4', '/tmp/x'), TEMPORARY);
    const attributeOnly = [checkFrom('10.20.3.4'), checkFrom('192.0.2.1'), checkFrom('::ffff:10.16.0.9'), checkFrom('10.20.3.4', '/tmp/y')];
    await decides(t, server, attributeOnly, [ALLOWED, DENIED, ALLOWED, TEMPORARY], '/check/bulk', `${evaluation}: a bulk`);
    const evaluationOf = (ip: string) => ({
      subject: { type: 'user', id: 'alice', properties: { staff: true } },
      action: { name: 'read' },
      resource: { type: 'document', id: '1', properties: { path: '/reports/1' } },
      context: { ip },
    });
    await answers(t, server, evaluationOf('10.20.3.4'), 200, { decision: true }, '/access/v1/evaluation', `${evaluation}: AuthZEN, from the office`);
    await answers(t, server, evaluationOf('198.51.100.7'), 200, { decision: false }, '/access/v1/evaluation', `${evaluation}: AuthZEN, from elsewhere`);
  }
});

t.test('an explanation shows the ranges and the address that fell outside them; a plan states the pattern but gives no MongoDB filter', async (t) => {
  const server = await emptyServer(t);
  t.equal((await server.call('POST', '/admin/policies', NETWORK)).status, 200);
  const explained = await server.call('POST', '/check?explain=true', checkFrom('192.0.2.1'));
  const office = explained.body.explain.policies[0].rules.find((rule: { name: string }) => rule.name === 'office');
  t.same(office.failed, { side: 'context', path: 'attributes.ip', operator: 'in_cidr', expected: OFFICE, actual: '192.0.2.1' });

  const planned = await server.call('POST', '/plan', { principal: { attributes: { staff: true } }, action: 'read', context: { ip: '10.20.3.4' } });
  t.equal(planned.status, 200);
  t.same(planned.body.condition, { not: { path: 'attributes.path', operator: 'matches', value: '^/tmp/' } }, 'the office condition decided, the pattern left to the resource');
  t.equal(planned.body.mongodb, undefined);
  t.match(planned.body.reason, /no MongoDB filter: condition attributes\.path matches "\^\/tmp\/" has no exact MongoDB filter/);
  const away = await server.call('POST', '/plan', { principal: { attributes: { staff: true } }, action: 'read', context: { ip: '192.0.2.1' } });
  t.same([away.body.kind, away.body.condition], ['always_denied', false], 'from elsewhere, nothing: the range is decided in the plan');
});

/** Nobody connects from outside the office; staff may read. A value that is not an address is not shown to be inside. */
const OFFICE_ONLY = {
  name: 'office-only',
  rules: [
    { name: 'outside', effect: 'deny', context_conditions: [{ path: 'attributes.ip', operator: 'not_in_cidr', value: OFFICE }], actions: ['read'] },
    { name: 'staff', effect: 'allow', principal_conditions: [{ path: 'attributes.staff', operator: '==', value: true }], actions: ['read'] },
  ],
};
const OUTSIDE = { allowed: false, reason: 'Rule outside denied the action in policy office-only' };
const STAFF = { allowed: true, reason: 'Rule staff allowed the action in policy office-only' };

t.test('a deny rule on not_in_cidr is not escaped by a value that is not an address, on every door, front and pool; explain says why', async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await emptyServer(t, { evaluation, workers: 1 });
    t.equal((await server.call('POST', '/admin/policies', OFFICE_ONLY)).status, 200);
    const hostile = ['office', '10.20.3.4 ', ['10.20.3.4'], 167_772_161, null, { ip: '10.20.3.4' }];
    for (const ip of hostile) await decides(t, server, checkFrom(ip), OUTSIDE, '/check', `${evaluation}: ${JSON.stringify(ip)}`);
    await decides(t, server, [...hostile.map((ip) => checkFrom(ip)), checkFrom('10.20.3.4')], [...hostile.map(() => OUTSIDE), STAFF], '/check/bulk', `${evaluation}: a bulk`);
    const withoutAddress = { principal: { attributes: { staff: true } }, resource: { attributes: { path: '/r' } }, action: 'read' };
    await decides(t, server, withoutAddress, STAFF, '/check', `${evaluation}: an address left out makes the condition false, as settled (validate warns of it)`);
    const evaluationOf = (ip: unknown) => ({ subject: { type: 'user', id: 'alice', properties: { staff: true } }, action: { name: 'read' }, resource: { type: 'document', id: '1' }, context: { ip } });
    await answers(t, server, evaluationOf('office'), 200, { decision: false }, '/access/v1/evaluation', `${evaluation}: AuthZEN`);
  }
  const server = await emptyServer(t, { evaluation: 'pool', workers: 1 });
  t.equal((await server.call('POST', '/admin/policies', OFFICE_ONLY)).status, 200);
  const explained = await server.call('POST', '/check/bulk?explain=true', [checkFrom('office')]);
  t.equal(explained.status, 200, JSON.stringify(explained.body));
  const outside = explained.body[0].explain.policies[0].rules[0];
  t.same(outside, { name: 'outside', effect: 'deny', matched: true, undecidable: [{ side: 'context', path: 'attributes.ip', operator: 'not_in_cidr', actual: 'office', why: '"office" is not an IP address' }] }, 'a worker explains it as the front does');
  t.match(explained.body[0].explain.decided_by.why, /attributes\.ip not_in_cidr could not be evaluated/);
});
