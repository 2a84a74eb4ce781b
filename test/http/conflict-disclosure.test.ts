import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchDir, startServer } from '../helpers/server.js';
import { until } from '../helpers/until.js';

// With admin authentication on, a check never tells its caller whether a supplied attribute matches
// a registered one (a guessed PIN would otherwise be confirmed a thousand guesses a request): the
// registered value decides, and the conflict is logged and counted. With it off (Eunomia's default,
// loopback only), Eunomia's 400 stays.

const KEY = 'the-admin-key-of-this-test';
const PINNED = { name: 'vault', rules: [{ name: 'pin-holders', effect: 'allow', principal_conditions: [{ path: 'attributes.pin', operator: '==', value: '4821' }], actions: ['open'] }] };
const guess = (pin: string) => ({ principal: { uri: 'user:victim', attributes: { pin } }, resource: { attributes: { kind: 'vault' } }, action: 'open' });

t.test('admin authentication on: a wrong guess and a right one are answered alike, the registered value decides; the conflict is logged and counted', async (t) => {
  const log = join(scratchDir(t), 'decisions.ndjson');
  const server = await startServer({ adminAuthRequired: true, adminApiKey: KEY, decisionLog: log });
  t.teardown(server.close);
  const admin = { 'way-api-key': KEY };
  t.equal((await server.call('POST', '/admin/policies', PINNED, admin)).status, 200);
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:victim', type: 'principal', attributes: { pin: '4821' } }, admin)).status, 200);
  const wrong = await server.call('POST', '/check', guess('0000'));
  const right = await server.call('POST', '/check', guess('4821'));
  t.same([wrong.status, wrong.body], [200, { allowed: true, reason: 'Rule pin-holders allowed the action in policy vault' }], 'a wrong guess is decided on the registered value: nothing told');
  t.same([right.status, right.body], [wrong.status, wrong.body], 'the right guess is answered the same');
  const bulk = await server.call('POST', '/check/bulk', ['0000', '0001', '4821'].map(guess));
  t.same(bulk.body.map((answer: { allowed: boolean }) => answer.allowed), [true, true, true], 'a bulk of guesses tells nothing either');
  const refusing = await server.call('POST', '/check/bulk?conflicts=refuse', ['0000', '4821'].map(guess));
  t.equal(refusing.status, 200, 'nor does ?conflicts=refuse');
  const authzen = await server.call('POST', '/access/v1/evaluation', { subject: { type: 'user', id: 'victim', properties: { pin: '0000' } }, action: { name: 'open' }, resource: { type: 'vault', id: '1' } });
  t.same(authzen.body, { decision: true }, 'nor AuthZEN');
  const metrics = (await server.call('GET', '/metrics')).body as string;
  t.match(metrics, /verdict_attribute_conflicts_total [1-9]/, 'each conflict is counted');
  await until(() => readFileSync(log, 'utf8').includes('"overruled"'), 'the conflict logged');
  t.match(readFileSync(log, 'utf8'), /"overruled":\["principal\.pin"\]/, 'the decision log names the attribute that gave way');
});

t.test('admin authentication off: Eunomia\'s 400 "has more than one value" stays', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', PINNED)).status, 200);
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:victim', type: 'principal', attributes: { pin: '4821' } })).status, 200);
  t.same(await server.call('POST', '/check', guess('0000')).then((answer) => [answer.status, answer.body]), [400, { detail: "For entity 'user:victim', attribute 'pin' has more than one value" }]);
});
