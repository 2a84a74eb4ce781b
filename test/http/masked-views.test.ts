import t from 'tap';
import { startServer } from '../helpers/server.js';

// The values --decision-log-mask hides from the decision log are hidden from every operator view of
// kept checks as well: an impact preview's sample and the shadow report's disagreements, the checks
// and their explanations both ways (a read key may read both).

const MASK = 'principal.ssn,context.ip=hash';
const LIVE = {
  name: 'payroll',
  rules: [
    { name: 'not-from-outside', effect: 'deny', context_conditions: [{ path: 'attributes.ip', operator: 'not_in_cidr', value: '10.0.0.0/8' }], actions: ['read'] },
    { name: 'staff', effect: 'allow', principal_conditions: [{ path: 'attributes.ssn', operator: 'startswith', value: '000' }], actions: ['read'] },
  ],
};
const CHANGED = { ...LIVE, rules: [LIVE.rules[0], { ...LIVE.rules[1], principal_conditions: [{ path: 'attributes.ssn', operator: 'startswith', value: '999' }] }] };
const check = (ssn: string, ip: string) => ({ principal: { attributes: { ssn, role: 'clerk' } }, resource: { attributes: { kind: 'payslip' } }, action: 'read', context: { ip } });

t.test('impact samples and shadow disagreements mask what the decision log masks, in the checks and in their explanations', async (t) => {
  const server = await startServer({ decisionLogMask: { principal: { ssn: 'omit' }, context: { ip: 'hash' } } });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', LIVE)).status, 200);
  t.equal((await server.call('POST', '/admin/policies', { ...CHANGED, name: 'payroll-next', shadow: 'payroll' })).status, 200);
  for (const [ssn, ip] of [['000-11-2222', '10.1.2.3'], ['000-33-4444', 'the office']] as const) t.equal((await server.call('POST', '/check', check(ssn, ip))).status, 200);
  const preview = await server.call('POST', '/admin/policies/impact', { policies: [CHANGED] });
  t.equal(preview.status, 200, JSON.stringify(preview.body).slice(0, 300));
  const shadow = await server.call('GET', '/admin/shadow');
  t.ok(preview.body.sample.length > 0 && shadow.body.disagreements.length > 0, `something to show (${MASK})`);
  for (const [view, body] of [['impact', preview.body], ['shadow', shadow.body]] as const) {
    const text = JSON.stringify(body);
    t.notMatch(text, /000-11-2222|000-33-4444/, `${view}: no ssn shown`);
    t.notMatch(text, /10\.1\.2\.3|the office/, `${view}: no address shown, not even in why a value could not be evaluated`);
    t.match(text, /\[masked\]/, `${view}: the ssn shown masked`);
    t.match(text, /sha256:[0-9a-f]{16}/, `${view}: the address shown as its digest`);
    t.match(text, /clerk/, `${view}: what is not masked is shown`);
  }
});
