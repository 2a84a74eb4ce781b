import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { runVerdict } from '../helpers/child.js';
import { scratchDir, startServer } from '../helpers/server.js';
import { until } from '../helpers/until.js';

// `verdict impact`, the command a CI job runs before applying policy files: the real CLI against a real server.

t.test('verdict impact prints what a change of policy files would do, and fails a job on the direction it is told to', async (t) => {
  const key = 'k'.repeat(32);
  const server = await startServer({ adminAuthRequired: true, adminApiKey: key });
  t.teardown(server.close);
  const admin = { 'way-api-key': key };
  const readers = { name: 'access', rules: [{ name: 'readers', effect: 'allow', principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'reader' }], actions: ['read'] }] };
  t.equal((await server.call('POST', '/admin/policies', readers, admin)).status, 200);
  for (const role of ['reader', 'reader', 'guest']) await server.call('POST', '/check', { principal: { attributes: { role } }, resource: { uri: 'doc:1' }, action: 'read' });

  const dir = scratchDir(t);
  const guests = join(dir, 'access.yaml');
  writeFileSync(guests, YAML.stringify({ ...readers, rules: [{ ...readers.rules[0], name: 'everyone', principal_conditions: [] }] }));
  const env = { ADMIN_API_KEY: key };
  const opened = await runVerdict(t, ['impact', guests, '--url', server.url], env).exited;
  t.equal(opened.code, 0, opened.stderr);
  t.match(opened.stdout, /replayed 3 recent checks of process \d+ on /);
  t.match(opened.stdout, /allow → deny: 0\ndeny → allow: 1/);
  t.match(opened.stdout, /by rule, before → after\n {2}default deny → access\/everyone: 0 allow → deny, 1 deny → allow/);

  const guarded = await runVerdict(t, ['impact', guests, '--url', server.url, '--fail-on', 'deny-to-allow'], env).exited;
  t.equal(guarded.code, 1, 'a change that allows what was denied fails the job');
  t.match(guarded.stdout, /failing: --fail-on deny-to-allow/);
  t.equal((await runVerdict(t, ['impact', guests, '--url', server.url, '--fail-on', 'allow-to-deny'], env).exited).code, 0, 'the other direction did not move');
  const deletion = await runVerdict(t, ['impact', '--delete', 'access', '--url', server.url, '--fail-on', 'any'], env).exited;
  t.equal(deletion.code, 1);
  t.match(deletion.stdout, /allow → deny: 2/);

  const keyless = await runVerdict(t, ['impact', guests, '--url', server.url], {}).exited;
  t.equal(keyless.code, 2);
  t.match(keyless.stderr, /answered 401/);
  const nothing = await runVerdict(t, ['impact', '--url', server.url], env).exited;
  t.match([nothing.code, nothing.stderr], [2, /no change to preview/]);
  const wrong = await runVerdict(t, ['impact', guests, '--fail-on', 'sometimes'], env).exited;
  t.match([wrong.code, wrong.stderr], [2, /--fail-on takes deny-to-allow, allow-to-deny, any/]);
  t.same((await server.call('GET', '/admin/policies/access', undefined, admin)).body.rules.map((rule: { name: string }) => rule.name), ['readers'], 'nothing was written');
});

t.test('verdict impact --decision-log <lines> replays the newest lines of the server\'s decision log file', async (t) => {
  const dir = scratchDir(t);
  const server = await startServer({ decisionLog: join(dir, 'decisions.ndjson') });
  t.teardown(server.close);
  const readers = { name: 'access', rules: [{ name: 'readers', effect: 'allow', principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'reader' }], actions: ['read'] }] };
  t.equal((await server.call('POST', '/admin/policies', readers)).status, 200);
  for (const role of ['reader', 'guest', 'guest']) await server.call('POST', '/check', { principal: { attributes: { role } }, resource: { uri: 'doc:1' }, action: 'read' });
  await until(() => readFileSync(join(dir, 'decisions.ndjson'), 'utf8').split('\n').length === 4, 'three decisions logged');
  const replayed = await runVerdict(t, ['impact', '--delete', 'access', '--url', server.url, '--decision-log', '2'], {}).exited;
  t.equal(replayed.code, 0, replayed.stderr);
  t.match(replayed.stdout, /replayed 2 checks from 2 lines of the decision log .*decisions\.ndjson \(not replayed: 0 masked, 0 refused, 0 unreadable\)/);
  t.match(replayed.stdout, /allow → deny: 0\ndeny → allow: 0/, 'the two newest were the guests, denied both ways');
  const wrong = await runVerdict(t, ['impact', '--delete', 'access', '--decision-log', 'all'], {}).exited;
  t.match([wrong.code, wrong.stderr], [2, /--decision-log takes how many of the newest lines/]);
});
