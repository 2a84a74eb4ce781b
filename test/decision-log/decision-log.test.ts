import t, { type Test } from 'tap';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DecisionLog } from '../../src/decision-log/decision-log.js';
import type { DecisionRecord } from '../../src/decision-log/line.js';
import { startServer, temporaryDataDir } from '../helpers/server.js';

// The real writer thread, writing a real file.

const side = (attributes: Record<string, unknown>) => ({ uri: undefined, attributes: new Map(Object.entries(attributes)) });
const decided = (role: string): DecisionRecord => {
  const input = { principal: side({ role }), resource: side({ kind: 'doc' }), action: 'read' };
  return { time: Date.UTC(2026, 10, 22), input, request: input, decision: { allowed: role === 'admin', reason: 'because' }, revision: 3, latencyMs: 0.0123 };
};
const bulkBody = JSON.stringify([
  { principal: { attributes: { role: 'admin' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' },
  { principal_attributes: { role: 'guest' }, resource_attributes: { kind: 'doc' } },
]);
const bulkDecisions = JSON.stringify([
  { allowed: true, reason: 'yes' },
  { allowed: false, reason: 'no' },
]);

function logFile(t: Test): string {
  const dir = temporaryDataDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'decisions.jsonl');
}

const readLines = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));

t.test('lines from this thread and from worker bulks are written in order, and close waits for them', async (t) => {
  const file = logFile(t);
  const log = DecisionLog.open(file, () => t.fail('nothing dropped'));
  log.record(decided('admin'));
  log.recordBulk({ time: Date.UTC(2026, 10, 22), body: bulkBody, decisions: bulkDecisions, count: 2, revision: 4, latencyMs: 0.5, violations: [] });
  log.record(decided('guest'));
  await log.close();
  const lines = readLines(file);
  t.same(
    lines.map((line) => [line.request.principal.attributes.role, line.allowed, line.revision]),
    [
      ['admin', true, 3],
      ['admin', true, 4],
      ['guest', false, 4],
      ['guest', false, 3],
    ],
  );
  t.same(lines[0], {
    time: '2026-11-22T00:00:00.000Z',
    revision: 3,
    request: { principal: { attributes: { role: 'admin' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' },
    resolved: { principal: { role: 'admin' }, resource: { kind: 'doc' } },
    allowed: true,
    reason: 'because',
    latency_ms: 0.012,
  });
  t.same(lines[2].request, { principal: { attributes: { role: 'guest' } }, resource: { attributes: { kind: 'doc' } }, action: 'access' }, 'the flat form, read as the check was');
  t.equal(lines[1].latency_ms, 0.5);
});

t.test('past its capacity the log drops new lines and counts them, instead of growing', async (t) => {
  const file = logFile(t);
  let dropped = 0;
  const log = DecisionLog.open(file, (lines) => (dropped += lines), { capacity: 3 });
  for (const role of ['a', 'b', 'c', 'd', 'e']) log.record(decided(role));
  log.recordBulk({ time: 0, body: bulkBody, decisions: bulkDecisions, count: 2, revision: 1, latencyMs: 0, violations: [] });
  t.equal(dropped, 4, 'two single lines and the two of the bulk');
  await log.close();
  t.same(
    readLines(file).map((line) => line.request.principal.attributes.role),
    ['a', 'b', 'c'],
  );
});

t.test('a log file that cannot be opened fails at once, naming the path', async (t) => {
  t.throws(() => DecisionLog.open('/nonexistent-dir/decisions.jsonl', () => {}), /nonexistent-dir\/decisions\.jsonl/);
});

t.test('attribute keys and values of any kind are written as valid JSON, keys such as __proto__ included', async (t) => {
  const file = logFile(t);
  const log = DecisionLog.open(file, () => t.fail('nothing dropped'));
  const attributes = new Map<string, unknown>([
    ['__proto__', { polluted: true }],
    ['quote"and\\backslash', 'line\nbreak'],
    ['nested', [1, { deep: null }]],
  ]);
  const principal = { uri: 'user:"odd"', attributes };
  const registered = new Map([...attributes, ['team', 'it']]);
  const input = { principal, resource: side({ kind: 'doc' }), action: 'read' };
  const request = { ...input, principal: { uri: principal.uri, attributes: registered } };
  log.record({ time: 0, input, request, decision: { allowed: false, reason: 'a "quoted" reason' }, revision: 1, latencyMs: 0 });
  await log.close();
  const [line] = readLines(file);
  const sent = line.request.principal;
  t.equal(sent.uri, 'user:"odd"');
  t.ok(Object.hasOwn(sent.attributes, '__proto__'), '__proto__ is an own key of the logged attributes');
  t.same(sent.attributes['__proto__'], { polluted: true });
  t.equal(sent.attributes['quote"and\\backslash'], 'line\nbreak');
  t.same(sent.attributes.nested, [1, { deep: null }]);
  t.equal(line.resolved.principal.team, 'it', 'the resolved side is written apart from the sent one when they differ');
  t.notOk(Object.hasOwn(sent.attributes, 'team'));
  t.equal(line.reason, 'a "quoted" reason');
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'nothing reached Object.prototype');
});

t.test('a writer thread that dies: the lines it held and every later one are counted as dropped, and close does not wait', async (t) => {
  const file = logFile(t);
  let dropped = 0;
  let heldLinesCounted!: () => void;
  const writerDied = new Promise<void>((resolve) => (heldLinesCounted = resolve));
  const log = DecisionLog.open(file, (lines) => {
    dropped += lines;
    if (dropped >= 2) heldLinesCounted();
  });
  // A record the writer cannot serialize (attributes that are not a Map) makes the writer thread throw.
  const broken = decided('broken');
  log.record({ ...broken, input: { ...broken.input, principal: { uri: undefined, attributes: 42 } } } as unknown as DecisionRecord);
  log.record(decided('held'));
  // The writer thread runs at the lowest priority and may wait long for the CPU on a busy machine;
  // it never keeps a process alive (unref), so this test does while it waits for the writer's end.
  const keepAlive = setInterval(() => {}, 60_000);
  await writerDied.finally(() => clearInterval(keepAlive));
  t.equal(dropped, 2, 'the batch the writer held');
  log.record(decided('later'));
  t.equal(dropped, 3, 'later lines are dropped at once');
  await log.close();
  t.same(readLines(file), []);
});

t.test("a server's lines carry the action's attributes and the context as sent, from the front and from the worker pool; checks without them, as before", async (t) => {
  const file = logFile(t);
  const server = await startServer({ decisionLog: file, evaluation: 'pool', workers: 1 });
  const check = { principal: { attributes: { role: 'admin' } }, resource: { attributes: { kind: 'doc' } } };
  t.equal((await server.call('POST', '/check', { ...check, action: { name: 'delete', attributes: { soft: true } }, context: { ip: '10.1.2.3' } })).status, 200);
  t.equal((await server.call('POST', '/check/bulk', [{ ...check, action: 'delete', action_attributes: { soft: false }, context: { hour: 9 } }, { ...check, action: 'read' }])).status, 200);
  await server.close();
  t.same(
    readLines(file).map((line) => line.request),
    [
      { ...check, action: 'delete', action_attributes: { soft: true }, context: { ip: '10.1.2.3' } },
      { ...check, action: 'delete', action_attributes: { soft: false }, context: { hour: 9 } },
      { ...check, action: 'read' },
    ],
  );
});

t.test('a server whose decision log cannot be written (/dev/full): decisions go on, every line is counted as dropped', { skip: existsSync('/dev/full') ? false : 'no /dev/full on this machine' }, async (t) => {
  const server = await startServer({ decisionLog: '/dev/full' });
  const check = { principal: { attributes: { role: 'admin' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' };
  const denied = { allowed: false, reason: 'Action denied by default because there are no policies' };
  for (let index = 0; index < 10; index++) {
    const answer = await server.call('POST', '/check', check);
    t.same([answer.status, answer.body], [200, denied], `check ${index + 1} is decided`);
  }
  t.same((await server.call('POST', '/check/bulk', [check, check, check])).body, [denied, denied, denied]);
  t.equal((await server.call('GET', '/ready')).status, 200, 'the server stays ready');
  // The writer runs at the lowest priority and may get no CPU for long on a busy machine: closing
  // waits until it has tried every line, and its reports arrive before it is gone.
  await server.close();
  const [dropped] = (await server.metrics.decisionLogDropped.get()).values;
  t.equal(dropped?.value, 10 + 3, 'every line the disk refused is counted');
});
