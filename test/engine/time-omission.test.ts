import t from 'tap';
import { policyWarnings } from '../../src/engine/index.js';
import { policy, rule } from './helpers.js';

// The decision's time (context.time) is always there: the server supplies it. A deny rule that reads
// it is not escaped by leaving it out, and validate does not say it is.

t.test("no omission warning for the decision's time, read by path or by reference; one for the attribute beside it", async (t) => {
  const stale = rule('stale-sign-in', { effect: 'deny', principal: [{ path: 'attributes.signed_in', operator: 'within', value: { last: 'P1D' } }] });
  const late = { ...rule('after-hours', { effect: 'deny' }), context_conditions: [{ path: 'time', operator: 'after' as const, value_from: 'resource.attributes.expires' }] };
  const warnings = policyWarnings([policy('p', [stale, late])], [0], (index) => ['body', index]);
  const omissions = warnings.filter((warning) => warning.type === 'escaped_by_omission').map((warning) => warning.msg);
  t.notOk(omissions.some((message) => /\btime\b/.test(message)), `nothing about the time: ${JSON.stringify(omissions)}`);
  t.ok(omissions.some((message) => message.includes('signed_in')), 'the attribute a request can leave out is still named');
  t.ok(omissions.some((message) => message.includes('expires')), 'and so is the one a reference reads');
});
