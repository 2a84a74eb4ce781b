import t from 'tap';
import { decides, emptyServer } from '../helpers/it-desk.js';

// The decision's time, which the server supplies (context.time), over the API: conditions and
// references read it, a caller cannot set it, explanations show it, plans read it as known.

const timed = (condition: Record<string, unknown>, side = 'context_conditions') => ({ name: 'timed', rules: [{ name: 'r', effect: 'allow', [side]: [condition], actions: ['read'] }] });
const CHECK = { principal: { attributes: { a: 1 } }, resource: { attributes: { expires: '2999-01-01T00:00:00Z' } }, action: 'read' };
const ALLOWED = { allowed: true, reason: 'Rule r allowed the action in policy timed' };
const DENIED = { allowed: false, reason: 'Action denied by default effect' };

t.test("a context condition on time reads the server's clock, and a context attribute named time is another value", async (t) => {
  const server = await emptyServer(t);
  t.equal((await server.call('POST', '/admin/policies', timed({ path: 'time', operator: 'after', value: '2020-01-01T00:00:00Z' }))).status, 200);
  await decides(t, server, CHECK, ALLOWED, '/check', 'now is after 2020');
  await decides(t, server, { ...CHECK, context: { time: '2019-01-01T00:00:00Z' } }, ALLOWED, '/check', 'a caller sending time changes nothing');
  t.equal((await server.call('PUT', '/admin/policies/timed', timed({ path: 'time', operator: 'before', value: '2020-01-01T00:00:00Z' }))).status, 200);
  await decides(t, server, { ...CHECK, context: { time: '2019-01-01T00:00:00Z' } }, DENIED, '/check', 'nor can it make now earlier');

  const before = Date.now();
  const explained = await server.call('POST', '/check?explain=true', CHECK);
  const failed = explained.body.explain.policies[0].rules[0].failed;
  t.same([failed.side, failed.path, failed.operator], ['context', 'time', 'before']);
  const shown = Date.parse(failed.actual);
  t.ok(shown >= before - 1000 && shown <= Date.now() + 1000, `the explanation shows the decision's time (${failed.actual})`);
  t.match(failed.actual, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'as RFC 3339 UTC text');
  t.equal(explained.body.explain.time, failed.actual, 'and says which time it decided at');
  for (const evaluation of ['inline', 'pool'] as const) {
    const pooled = await emptyServer(t, { evaluation, workers: 1 });
    t.equal((await pooled.call('POST', '/admin/policies', { name: 'untimed', rules: [{ name: 'r', effect: 'allow', actions: ['read'] }] })).status, 200);
    const bulk = await pooled.call('POST', '/check/bulk?explain=true', [CHECK]);
    t.equal(bulk.body[0].explain.time, undefined, `${evaluation}: no time where no condition read it`);
  }
});

t.test('a reference to context.time: decided in a check, a constant in a plan, which no MongoDB filter states', async (t) => {
  const server = await emptyServer(t);
  const expiry = { path: 'attributes.expires', operator: 'after', value_from: 'context.time' };
  t.equal((await server.call('POST', '/admin/policies', timed(expiry, 'resource_conditions'))).status, 200);
  await decides(t, server, CHECK, ALLOWED, '/check', 'not expired');
  await decides(t, server, { ...CHECK, resource: { attributes: { expires: '2001-01-01T00:00:00Z' } } }, DENIED, '/check', 'expired');
  await decides(t, server, { ...CHECK, resource: { attributes: { expires: '2999-01-01' } } }, DENIED, '/check', 'a date alone is no date-time');

  const planned = await server.call('POST', '/plan', { principal: { attributes: { a: 1 } }, action: 'read' });
  t.equal(planned.status, 200);
  t.same([planned.body.condition.path, planned.body.condition.operator], ['attributes.expires', 'after']);
  t.match(planned.body.condition.value, /^\d{4}-\d\d-\d\dT/, 'the time as a constant');
  t.equal(planned.body.mongodb, undefined);
  t.match(planned.body.reason, /has no exact MongoDB filter: MongoDB compares date-times held as text as text/);
});

t.test('a window the server cannot use is refused, naming what to fix', async (t) => {
  const server = await emptyServer(t);
  for (const [value, message] of [
    [{ zone: 'Mars/Olympus', days: ['mon'] }, /time zone the server knows by its IANA name/],
    [{ zone: 'UTC', from: '9', to: '17' }, /HH:MM/],
  ] as const) {
    const refused = await server.call('POST', '/admin/policies', timed({ path: 'time', operator: 'during', value }));
    t.equal(refused.status, 422);
    t.match(refused.body.detail[0].msg, message);
  }
  const fromCheck = await server.call('POST', '/admin/policies', timed({ path: 'time', operator: 'during', value_from: 'principal.attributes.hours' }));
  t.match([fromCheck.status, fromCheck.body.detail[0].msg], [422, /operator 'during' takes no value_from/]);
});

t.test('an operator tries a check at another time: explained, decided at that time, refused for a time that is not one, and behind the admin key', async (t) => {
  const server = await emptyServer(t);
  t.equal((await server.call('POST', '/admin/policies', timed({ path: 'time', operator: 'during', value: { zone: 'Europe/Berlin', days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '09:00', to: '18:00' } }))).status, 200);
  const at = (time: unknown) => server.call('POST', '/admin/check-at', { check: CHECK, time });
  const friday = await at('2026-11-27T08:30:00Z');
  t.same([friday.status, friday.body.allowed, friday.body.explain.time], [200, true, '2026-11-27T08:30:00.000Z'], 'a Friday morning in Berlin');
  const saturday = await at('2026-11-28T08:30:00+00:00');
  t.same([saturday.status, saturday.body.allowed, saturday.body.explain.policies[0].rules[0].failed.actual], [200, false, '2026-11-28T08:30:00.000Z'], 'a Saturday');
  for (const time of ['tomorrow', '2026-11-27', 5]) {
    const refused = await at(time);
    t.equal(refused.status, 422, JSON.stringify(time));
    t.same(refused.body.detail[0].loc, ['body', 'time']);
  }
  const unreadable = await server.call('POST', '/admin/check-at', { check: { principal: {}, resource: { uri: 'r' }, action: 'read' }, time: '2026-11-27T08:30:00Z' });
  t.equal(unreadable.status, 422, 'a check /check refuses is refused, located under check');
  t.equal(unreadable.body.detail[0].loc.slice(0, 2).join('.'), 'body.check');

  const guarded = await emptyServer(t, { adminAuthRequired: true, adminApiKey: 'k'.repeat(32) });
  t.equal((await guarded.call('POST', '/admin/check-at', { check: CHECK, time: '2026-11-27T08:30:00Z' })).status, 401, 'without a key: 401');
});
