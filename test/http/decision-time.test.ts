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

t.test('within: a span around the decision time or another value of the check; explained with the anchor read, pinned in a plan, refused when it is not one', async (t) => {
  const server = await emptyServer(t);
  // A fresh sign-in: within the last 15 minutes of the decision's time.
  const fresh = timed({ path: 'attributes.signed_in', operator: 'within', value: { last: 'PT15M' } }, 'principal_conditions');
  t.equal((await server.call('POST', '/admin/policies', fresh)).status, 200);
  const signedIn = (at: string) => ({ ...CHECK, principal: { attributes: { signed_in: at } } });
  await decides(t, server, signedIn(new Date(Date.now() - 60_000).toISOString()), ALLOWED, '/check', 'a minute ago');
  await decides(t, server, signedIn(new Date(Date.now() - 3_600_000).toISOString()), DENIED, '/check', 'an hour ago');
  const at = (check: unknown, time: string) => server.call('POST', '/admin/check-at', { check, time });
  const late = await at(signedIn('2026-11-27T08:00:00Z'), '2026-11-27T08:15:00.001Z');
  t.same([late.status, late.body.allowed], [200, false], 'a millisecond past the span');
  t.same(
    late.body.explain.policies[0].rules[0].failed,
    { side: 'principal', path: 'attributes.signed_in', operator: 'within', value_from: 'context.time', expected: { last: 'PT15M', of: '2026-11-27T08:15:00.001Z' }, actual: '2026-11-27T08:00:00Z' },
    'the explanation shows the span with the time it was measured from',
  );
  t.equal((await at(signedIn('2026-11-27T08:00:00Z'), '2026-11-27T08:15:00Z')).body.allowed, true, 'both ends are in the span');

  // A document may be edited up to a day before it expires: the anchor is a value of the resource.
  const beforeExpiry = timed({ path: 'time', operator: 'within', value: { last: 'P1D' }, value_from: 'resource.attributes.expires' });
  t.equal((await server.call('PUT', '/admin/policies/timed', beforeExpiry)).status, 200);
  const expiring = (expires: string) => ({ ...CHECK, resource: { attributes: { expires } } });
  t.equal((await at(expiring('2026-11-28T00:00:00Z'), '2026-11-27T12:00:00Z')).body.allowed, true, 'twelve hours before expiry');
  t.equal((await at(expiring('2026-11-29T00:00:00Z'), '2026-11-27T12:00:00Z')).body.allowed, false, 'a day and a half before');
  t.equal((await at(expiring('2026-11-27T00:00:00Z'), '2026-11-27T12:00:00Z')).body.allowed, false, 'after expiry');
  const stored = await server.call('GET', '/admin/policies/timed');
  t.same(stored.body.rules[0].context_conditions, [{ path: 'time', operator: 'within', value: { last: 'P1D' }, value_from: 'resource.attributes.expires' }], 'stored and answered with both its span and its reference');

  // In a plan the time is known: the condition turns to the expiry's own span around it.
  const planned = await server.call('POST', '/plan', { principal: { attributes: { a: 1 } }, action: 'read' });
  t.equal(planned.status, 200);
  t.same([planned.body.condition.path, planned.body.condition.operator, planned.body.condition.value.next], ['attributes.expires', 'within', 'P1D']);
  t.match(planned.body.condition.value.of, /^\d{4}-\d\d-\d\dT/, 'the decision time as the anchor');
  t.match(planned.body.reason, /attributes.expires within .* has no exact MongoDB filter: MongoDB compares date-times held as text as text/);

  for (const [condition, message] of [
    [{ path: 'time', operator: 'within', value: { last: 'P1M' } }, /takes 'last' as an ISO 8601 duration/],
    [{ path: 'time', operator: 'within', value: 'PT15M' }, /needs a span such as/],
    [{ path: 'time', operator: 'within', value_from: 'resource.attributes.expires' }, /needs a span such as/],
    [{ path: 'time', operator: 'within', value: { last: 'P1D', of: '2026-11-28T00:00:00Z' }, value_from: 'resource.attributes.expires' }, /takes its anchor from 'value_from' or from its value's 'of', not both/],
    [{ path: 'time', operator: 'before', value: '2026-11-28T00:00:00Z', value_from: 'resource.attributes.expires' }, /give either 'value' or 'value_from', not both/],
  ] as const) {
    const refused = await server.call('POST', '/admin/policies', { ...timed(condition), name: 'refused' });
    t.equal(refused.status, 422, JSON.stringify(condition));
    t.match(refused.body.detail[0].msg, message);
  }
});
