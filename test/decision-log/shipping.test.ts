import t, { type Test } from 'tap';
import { readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { DecisionLog } from '../../src/decision-log/decision-log.js';
import type { DecisionRecord } from '../../src/decision-log/line.js';
import { ask } from '../helpers/child.js';
import { startServer, succeeded, temporaryDataDir } from '../helpers/server.js';

// What a platform team needs to ship the decision log: each line names the request (as its caller
// knows it) and carries a unique decision id, refusals under schema `reject` are lines too, attribute
// values can be masked, and a collector over HTTP receives them in batches, while a dead or slow
// collector costs the decisions nothing. Real servers, a real writer thread, real HTTP collectors.

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

/** How long the bounded-queue tests let closing try a collector that never answers (the product's 5 s is held by the server-level test above them). */
const CLOSE_WAIT_TRIED = 300;

const ADMIN_CHECK = { principal: { attributes: { role: 'admin', ssn: '123-45-6789', email: 'ann@example.com' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' };
const ADMINS = { name: 'admins', rules: [{ name: 'admins', effect: 'allow', actions: ['read'], principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'admin' }], resource_conditions: [] }] };

t.test('each line names the request as its caller knows it and carries a decision id no other decision has, on every decision route and path', async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    const file = logFile(t);
    const server = await startServer({ decisionLog: file, evaluation, workers: 1 });
    await succeeded(server, 'POST', '/admin/policies', ADMINS);
    const sent = await server.call('POST', '/check', ADMIN_CHECK, { 'x-request-id': 'app-trace-42' });
    t.equal(sent.headers['x-request-id'], 'app-trace-42', `${evaluation}: /check echoes the caller's id`);
    const generated = await server.call('POST', '/check', ADMIN_CHECK);
    const generatedId = generated.headers['x-request-id'] as string;
    t.match(generatedId, /^[0-9a-f-]{36}$/, `${evaluation}: without one, the request's own id is echoed`);
    const bulk = await server.call('POST', '/check/bulk', [ADMIN_CHECK, ADMIN_CHECK, ADMIN_CHECK], { 'x-request-id': 'bulk-7' });
    t.equal(bulk.headers['x-request-id'], 'bulk-7');
    const unusable = await server.call('POST', '/check-access', ADMIN_CHECK, { 'x-request-id': `${'x'.repeat(300)}` });
    t.not(unusable.headers['x-request-id'], 'x'.repeat(300), `${evaluation}: an id too long to log is replaced by the request's own`);
    await server.call('POST', '/access/v1/evaluations', { subject: { type: 'user', id: 'a', properties: { role: 'admin' } }, action: { name: 'read' }, evaluations: [{ resource: { type: 'doc', id: '1' } }, { resource: { type: 'doc', id: '2' } }] }, { 'x-request-id': 'authzen-1' });
    await server.close();
    const lines = readLines(file);
    t.same(lines.map((line) => line.request_id), ['app-trace-42', generatedId, 'bulk-7', 'bulk-7', 'bulk-7', unusable.headers['x-request-id'], 'authzen-1', 'authzen-1'], `${evaluation}: the ids echoed`);
    const ids = lines.map((line) => line.decision_id as string);
    t.equal(new Set(ids).size, ids.length, `${evaluation}: every decision id differs`);
    t.same(ids.slice(2, 5).map((id) => id.split('/')[1]), ['0', '1', '2'], `${evaluation}: a bulk's items are numbered in order`);
    t.equal(new Set(ids.slice(2, 5).map((id) => id.split('/')[0])).size, 1, `${evaluation}: under one request`);
  }
});

t.test('a check refused for breaking the attribute schemas under reject has its line, saying so', async (t) => {
  const file = logFile(t);
  const dir = temporaryDataDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const schemasFile = join(dir, 'schemas.json');
  const { writeFileSync } = await import('node:fs');
  writeFileSync(schemasFile, JSON.stringify({ principal: { attributes: { type: 'object', properties: { role: { type: 'string' } } } } }));
  const server = await startServer({ decisionLog: file, schemasFile, schemaEnforcement: 'reject' });
  const refused = await server.call('POST', '/check', { ...ADMIN_CHECK, principal: { attributes: { role: 7 } } }, { 'x-request-id': 'bad-1' });
  t.equal(refused.status, 400);
  await server.close();
  const [line] = readLines(file);
  t.match(line, { request_id: 'bad-1', refused: true, allowed: false, reason: refused.body.detail, schema_violations: [/attribute 'role' must be string/] });
});

t.test('masked attributes are never written: omitted or hashed, as sent and as resolved, the line naming them, on the front and in the pool', async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    const file = logFile(t);
    const server = await startServer({ decisionLog: file, evaluation, workers: 1, decisionLogMask: { principal: { ssn: 'omit', email: 'hash' }, context: { ip: 'omit' } } });
    await succeeded(server, 'POST', '/admin/fetchers/registry/entities', { uri: 'user:ann', attributes: { ssn: '987-65-4321', role: 'admin' } });
    await server.call('POST', '/check', { ...ADMIN_CHECK, context: { ip: '10.1.2.3' } });
    await server.call('POST', '/check', { principal: { uri: 'user:ann' }, resource: { attributes: { kind: 'doc' } }, action: 'read' });
    await server.call('POST', '/check/bulk', [ADMIN_CHECK, ADMIN_CHECK]);
    await server.close();
    const text = readFileSync(file, 'utf8');
    for (const secret of ['123-45-6789', '987-65-4321', 'ann@example.com', '10.1.2.3']) t.notOk(text.includes(secret), `${evaluation}: ${secret} is never written`);
    const [first, byUri, ...bulk] = readLines(file);
    t.equal(first.request.principal.attributes.ssn, '[masked]');
    t.match(first.request.principal.attributes.email, /^sha256:[0-9a-f]{16}$/);
    t.equal(first.request.context.ip, '[masked]');
    t.same(first.masked, ['context.ip', 'principal.email', 'principal.ssn'], `${evaluation}: the line names what it masked`);
    t.equal(byUri.resolved.principal.ssn, '[masked]', `${evaluation}: registered values too`);
    t.equal(byUri.resolved.principal.role, 'admin', 'and nothing else');
    t.same(byUri.masked, ['principal.ssn']);
    t.equal(bulk.length, 2);
    for (const line of bulk) t.same([line.request.principal.attributes.ssn, line.masked], ['[masked]', ['principal.email', 'principal.ssn']], `${evaluation}: bulk items`);
    t.equal(bulk[0].request.principal.attributes.email, first.request.principal.attributes.email, 'equal values hash equally');
  }
});

/** A collector on loopback: `answer` decides each POST's fate; every body it accepted is kept. */
async function collector(t: Test, answer: (request: IncomingMessage, response: ServerResponse, body: string) => void): Promise<{ url: string; server: Server; received: string[] }> {
  const received: string[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.on('end', () => answer(request, response, body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/ingest`, server, received };
}

t.test('a collector receives the lines as NDJSON batches, in order', async (t) => {
  const sink = await collector(t, (request, response, body) => {
    t.equal(request.headers['content-type'], 'application/x-ndjson');
    sink.received.push(body);
    response.writeHead(204).end();
  });
  const server = await startServer({ decisionLog: sink.url });
  await succeeded(server, 'POST', '/admin/policies', ADMINS);
  for (let index = 0; index < 5; index++) await server.call('POST', '/check', ADMIN_CHECK, { 'x-request-id': `r${index}` });
  t.equal((await server.call('POST', '/check/bulk', Array.from({ length: 1000 }, () => ADMIN_CHECK), { 'x-request-id': 'big' })).status, 200);
  await server.close();
  const lines = sink.received.join('').split('\n').filter(Boolean).map((line) => JSON.parse(line));
  t.equal(lines.length, 5 + 1000, 'every line delivered');
  t.same(lines.slice(0, 5).map((line) => line.request_id), ['r0', 'r1', 'r2', 'r3', 'r4'], 'in order');
  t.ok(sink.received.length <= 5, `in batches (${sink.received.length} requests for 1005 lines)`);
  t.equal((await server.metrics.decisionLogDropped.get()).values[0]?.value ?? 0, 0, 'nothing dropped');
});

const dropped = async (server: { metrics: { decisionLogDropped: { get(): Promise<{ values: { value: number }[] }> } } }) =>
  (await server.metrics.decisionLogDropped.get()).values[0]?.value ?? 0;

t.test('a dead collector: every decision is answered, every line counted as dropped, and closing does not hang', async (t) => {
  const sink = await collector(t, () => {});
  const url = sink.url;
  await new Promise<void>((resolve) => sink.server.close(() => resolve()));
  const server = await startServer({ decisionLog: url });
  await succeeded(server, 'POST', '/admin/policies', ADMINS);
  for (let index = 0; index < 20; index++) t.same((await server.call('POST', '/check', ADMIN_CHECK)).body.allowed, true);
  t.equal((await server.call('GET', '/ready')).status, 200, 'the server stays ready');
  await server.close();
  t.equal(await dropped(server), 20, 'every line is counted as dropped');
});

t.test('a collector that never answers: checks are answered while it holds the log, and on close what it held is dropped and its request abandoned', async (t) => {
  let held = 0;
  let abandoned = 0;
  const sink = await collector(t, (request) => {
    held++;
    request.socket.on('close', () => abandoned++);
  });
  const server = await startServer({ decisionLog: sink.url });
  await succeeded(server, 'POST', '/admin/policies', ADMINS);
  // Checks on their own connection, each answered, while the collector holds the first batch.
  for (let index = 0; index < 30; index++) t.equal((await ask(server.url, 'POST', '/check', ADMIN_CHECK, {}, 10_000)).status, 200);
  t.equal((await server.call('GET', '/ready')).status, 200);
  await server.close();
  t.ok(held >= 1, `the collector held ${held} request(s)`);
  t.equal(await dropped(server), 30, 'lines it never took are counted as dropped, none lost silently');
  t.equal(abandoned, held, 'the request it held was abandoned when the log closed, not left to its own timeout');
});

t.test('the queue for a slow collector is bounded: past its capacity new lines are dropped at once', async (t) => {
  const sink = await collector(t, () => {});
  let droppedLines = 0;
  const log = DecisionLog.open(sink.url, (lines) => (droppedLines += lines), { capacity: 10, closeWaitMillis: CLOSE_WAIT_TRIED });
  const side = { uri: undefined, attributes: new Map([['role', 'admin']]) };
  const record: DecisionRecord = { time: Date.now(), input: { principal: side, resource: side, action: 'read' }, request: { principal: side, resource: side, action: 'read' }, decision: { allowed: true, reason: 'r' }, revision: 1, latencyMs: 0 };
  for (let index = 0; index < 50; index++) {
    log.record(record);
    // Each turn of the loop hands its batch to the writer, whose queue the collector never drains.
    await new Promise((resolve) => setImmediate(resolve));
  }
  t.ok(droppedLines >= 40, `${droppedLines} of 50 dropped at the front, the queue held at 10`);
  await log.close();
  t.equal(droppedLines, 50, 'and the 10 it held are dropped on close');
});

t.test('the queue for a slow collector is bounded in bytes too: lines of large checks past the bytes bound are dropped at once', async (t) => {
  const sink = await collector(t, () => {});
  let droppedLines = 0;
  // Room for 10,000 lines, but for about 100 KB of them: each line below holds a check of about 20 KB.
  const log = DecisionLog.open(sink.url, (lines) => (droppedLines += lines), { capacityBytes: 100_000, closeWaitMillis: CLOSE_WAIT_TRIED });
  const side = { uri: undefined, attributes: new Map([['notes', 'x'.repeat(20_000)]]) };
  const record: DecisionRecord = { time: Date.now(), input: { principal: side, resource: side, action: 'read' }, request: { principal: side, resource: side, action: 'read' }, decision: { allowed: true, reason: 'r' }, revision: 1, latencyMs: 0 };
  for (let index = 0; index < 50; index++) {
    log.record(record);
    await new Promise((resolve) => setImmediate(resolve));
  }
  t.ok(droppedLines >= 45, `${droppedLines} of 50 dropped at the front: the queue held about 100 KB, not 50 lines of 80 KB`);
  await log.close();
  t.equal(droppedLines, 50, 'and those it held are dropped on close');
});
