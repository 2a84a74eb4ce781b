import t from 'tap';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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

/** The offline command docs/impact.md shows, as its words: the paths in it are where the test lays its files out. */
const OFFLINE_COMMAND = /^verdict (impact --before .*)$/m.exec(readFileSync(new URL('../../../docs/impact.md', import.meta.url), 'utf8'))![1]!.split(' ');

t.test('verdict impact --replay: the decision logs of two processes, offline against two policy directories, as each process would preview it; the command docs/impact.md shows, run as written', async (t) => {
  const dir = scratchDir(t);
  // The layout docs/impact.md's command names: main/policies (before), policies (after), logs/pod-a.ndjson and logs/pod-b.ndjson.
  const [before, after] = [join(dir, 'main', 'policies'), join(dir, 'policies')];
  mkdirSync(before, { recursive: true });
  mkdirSync(after);
  mkdirSync(join(dir, 'logs'));
  const readers = { name: 'access', rules: [{ name: 'readers', effect: 'allow', principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'reader' }], actions: ['read'] }] };
  const guests = { ...readers, rules: [{ name: 'guests', effect: 'allow', principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'guest' }], actions: ['read'] }] };
  writeFileSync(join(before, 'access.yaml'), YAML.stringify(readers));
  writeFileSync(join(after, 'access.yaml'), YAML.stringify(guests));
  // Two sidecars, each with its own traffic and its own log, serving the policies of main.
  const logs = [join(dir, 'logs', 'pod-a.ndjson'), join(dir, 'logs', 'pod-b.ndjson')];
  const traffic = [['reader', 'reader', 'guest'], ['guest', 'other', 'reader', 'guest']];
  const previews = [];
  for (const [index, log] of logs.entries()) {
    const server = await startServer({ policiesDir: before, decisionLog: log });
    t.teardown(server.close);
    for (const role of traffic[index]!) await server.call('POST', '/check', { principal: { attributes: { role } }, resource: { uri: 'doc:1' }, action: 'read' });
    await until(() => readFileSync(log, 'utf8').split('\n').length === traffic[index]!.length + 1, 'every decision logged');
    const preview = await server.call('POST', '/admin/policies/impact', { policies: [guests], source: 'decision_log' });
    t.equal(preview.status, 200, JSON.stringify(preview.body));
    previews.push(preview.body);
  }

  const offline = await runVerdict(t, ['impact', '--before', before, '--after', after, '--replay', logs[0]!, '--replay', logs[1]!, '--format', 'json'], {}).exited;
  t.equal(offline.code, 0, offline.stderr);
  const report = JSON.parse(offline.stdout);
  t.equal(report.replayed, 7, 'every check of both logs');
  t.same(report.changed, { allow_to_deny: previews[0].changed.allow_to_deny + previews[1].changed.allow_to_deny, deny_to_allow: previews[0].changed.deny_to_allow + previews[1].changed.deny_to_allow }, 'the sum of what each process previews');
  t.same(report.changed, { allow_to_deny: 3, deny_to_allow: 3 });
  t.same(report.by_rule.map((group: { before: string; after: string }) => `${group.before} → ${group.after}`).sort(), ['access/readers → default deny', 'default deny → access/guests']);
  t.same(report.decision_logs.map((log: { lines: number }) => log.lines), [3, 4]);

  t.same(OFFLINE_COMMAND, ['impact', '--before', 'main/policies', '--after', 'policies', '--replay', 'logs/pod-a.ndjson', '--replay', 'logs/pod-b.ndjson', '--fail-on', 'deny-to-allow'], "the document's command, as the layout above follows it");
  const text = await runVerdict(t, OFFLINE_COMMAND, {}, dir).exited;
  t.equal(text.code, 1, 'a change that allows what was denied fails the job');
  t.match(text.stdout, /^replayed 7 checks of 2 decision log files \(decided from .* to .*; 0 lines not replayable\)/);

  writeFileSync(join(after, 'broken.yaml'), YAML.stringify({ name: 'broken', rules: [{ name: 'r', effect: 'allow', actionz: ['read'] }] }));
  const refused = await runVerdict(t, ['impact', '--before', before, '--after', after, '--replay', logs[0]!], {}).exited;
  t.equal(refused.code, 2);
  t.match(refused.stderr, /--after .*: .*broken\.yaml: rules\.0\.actions: Field required/, 'the refused policy named by its file and field');
  const missing = await runVerdict(t, ['impact', '--before', before, '--after', before, '--replay', join(dir, 'nowhere.ndjson')], {}).exited;
  t.match([missing.code, missing.stderr], [2, /--replay .*nowhere\.ndjson: no such file/]);
  const mixed = await runVerdict(t, ['impact', '--before', before, '--replay', logs[0]!], {}).exited;
  t.match([mixed.code, mixed.stderr], [2, /needs --before <policy dir>, --after <policy dir> and --replay/]);
});
