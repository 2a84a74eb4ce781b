import t, { type Test } from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { scratchDir, startServer, type TestServer } from '../helpers/server.js';
import type { Config } from '../../src/config/config.js';

/**
 * Checks decided despite the attribute schemas (--schema-enforcement warn) are seen where decisions
 * are: each decision log line carries what its check broke, the live view counts them by the second
 * and its recent denials list them; a bulk decided by a worker is decided there, its answers the
 * bytes the front gives, its violations recorded once. Real servers, real HTTP, real log files.
 */

/** A level that is an integer, required; a clearance of 1, 2 or 3. */
const SCHEMAS = {
  principal: { attributes: { type: 'object', properties: { level: { type: 'integer' }, clearance: { enum: [1, 2, 3] } }, required: ['level'] } },
};

const GUARDED = {
  name: 'guarded',
  default_effect: 'allow',
  rules: [{ name: 'low level', effect: 'deny', actions: ['read'], principal_conditions: [{ path: 'attributes.level', operator: 'lt', value: 3 }] }],
};

// By attributes, no uri: a bulk of them may go to a worker.
const check = (principal: Record<string, unknown>) => ({ principal: { attributes: principal }, resource: { attributes: { kind: 'record' } }, action: 'read' });
/** Denied by the rule. */
const DENIED_BREAKING = check({ level: 1, clearance: '2' });
const DENIED_VIOLATIONS = ["principal: attribute 'clearance' must be equal to one of the allowed values: 1, 2, 3 (enum)"];
/** Allowed: the deny on the level cannot see a level that is missing, or a string. */
const MISSING_LEVEL = check({ clearance: 1 });
const MISSING_VIOLATIONS = ["principal: attribute 'level' is required (required)"];
const STRING_LEVEL = check({ level: 'two' });
const STRING_VIOLATIONS = ["principal: attribute 'level' must be integer (type)"];
const KEEPING = check({ level: 5, clearance: 1 });

async function serverWith(t: Test, overrides: Partial<Config>, schemas: unknown = SCHEMAS): Promise<{ server: TestServer; logFile: string }> {
  const dir = scratchDir(t);
  const schemasFile = join(dir, 'schemas.json');
  writeFileSync(schemasFile, JSON.stringify(schemas));
  const logFile = join(dir, 'decisions.jsonl');
  const server = await startServer({ schemasFile, decisionLog: logFile, recentDenials: 10, ...overrides });
  t.teardown(() => server.close());
  t.equal((await server.call('POST', '/admin/policies', GUARDED)).status, 200);
  return { server, logFile };
}

const logLines = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

async function violationsCounted(server: TestServer): Promise<number> {
  const text = (await server.call('GET', '/metrics')).body as string;
  return Number(text.split('\n').find((row) => row.startsWith('verdict_schema_violations_total '))?.split(' ')[1]);
}

/** Reads the live view until its seconds have counted `expected` violations (the server closes one every second); bounded. */
/**
 * The live view once it counts `expected` checks that broke the schemas and `decisions` decisions (a
 * second is shown once it is over: two requests may land in two seconds, shown one after the other),
 * or after 20 s; and how many checks it counts that broke them.
 */
async function liveCounting(server: TestServer, expected: number, decisions = 0) {
  for (let attempt = 0; ; attempt++) {
    const live = (await server.call('GET', '/admin/live')).body;
    const seconds = live.seconds as { schema_violations: number; allowed: number; denied: number }[];
    const counted = seconds.reduce((total, second) => total + second.schema_violations, 0);
    const decided = seconds.reduce((total, second) => total + second.allowed + second.denied, 0);
    if ((counted >= expected && decided >= decisions) || attempt === 400) return { live, counted };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

t.test('warn: the decision log line of a check that broke the schemas carries what it broke; the live view counts and lists them', async (t) => {
  const { server, logFile } = await serverWith(t, { evaluation: 'inline' });
  for (const body of [DENIED_BREAKING, MISSING_LEVEL, KEEPING]) t.equal((await server.call('POST', '/check', body)).status, 200);
  const bulk = await server.call('POST', '/check/bulk', [KEEPING, STRING_LEVEL]);
  t.same(bulk.body.map(({ allowed }: { allowed: boolean }) => allowed), [true, true]);
  const { live, counted } = await liveCounting(server, 3);
  t.equal(counted, 3, 'the live view counts each check that broke the schemas once');
  t.equal(await violationsCounted(server), 3, 'as the Prometheus counter does');
  const [denial] = live.recent_denials.denials;
  t.same(denial.schema_violations, DENIED_VIOLATIONS, 'the recent denial lists what its check broke');
  t.same(denial.principal, { uri: null, attribute_keys: ['level', 'clearance'] }, 'values stay masked');

  await server.close();
  const lines = logLines(logFile);
  t.same(
    lines.map((line) => line.schema_violations),
    [DENIED_VIOLATIONS, MISSING_VIOLATIONS, undefined, undefined, STRING_VIOLATIONS],
  );
  t.same(Object.keys(lines[2]!), ['time', 'request_id', 'decision_id', 'revision', 'request', 'resolved', 'allowed', 'reason', 'latency_ms'], 'a line of a check that keeps to them is as before');
  t.same(Object.keys(lines[0]!), ['time', 'request_id', 'decision_id', 'revision', 'request', 'resolved', 'allowed', 'reason', 'schema_violations', 'latency_ms']);
});

t.test('reject: a refused check is no decision, but the live view counts it and the decision log has its line, saying it was refused', async (t) => {
  const { server, logFile } = await serverWith(t, { evaluation: 'inline', schemaEnforcement: 'reject' });
  const refused = await server.call('POST', '/check', MISSING_LEVEL);
  t.equal(refused.status, 400);
  t.equal((await server.call('POST', '/check', KEEPING)).status, 200);
  const { live, counted } = await liveCounting(server, 1, 1);
  t.equal(counted, 1);
  t.same(live.seconds.reduce((total: number, second: { allowed: number; denied: number }) => total + second.allowed + second.denied, 0), 1, 'no decision counted for it');
  await server.close();
  t.same(logLines(logFile).map((line) => [line.refused, line.allowed]), [[true, false], [undefined, true]]);
  t.equal(logLines(logFile)[0]!.reason, refused.body.detail, 'its reason the refusal');
});

t.test('warn: at most 10 violations are logged for one check, as explain lists them', async (t) => {
  // A closed schema: each of 30 undeclared attributes breaks it.
  const closed = { principal: { attributes: { type: 'object', properties: { level: { type: 'integer' } }, additionalProperties: false } } };
  const { server, logFile } = await serverWith(t, { evaluation: 'inline' }, closed);
  const many = Object.fromEntries(Array.from({ length: 30 }, (_, index) => [`extra${index}`, index]));
  const explained = await server.call('POST', '/check?explain=true', check({ level: 5, ...many }));
  t.equal(explained.body.explain.schema_violations.length, 10);
  await server.close();
  const [line] = logLines(logFile);
  t.same(line!.schema_violations, explained.body.explain.schema_violations);
});

/** The bytes of an answer, as a client reads them. */
async function answerText(t: Test, server: TestServer, path: string, body: unknown): Promise<string> {
  const response = await request(server.url + path, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  t.equal(response.statusCode, 200);
  return response.body.text();
}

t.test('warn: a bulk decided in a worker answers the bytes the front does and records each violation once', async (t) => {
  const bulk = [DENIED_BREAKING, KEEPING, MISSING_LEVEL, STRING_LEVEL, KEEPING];
  const expected = [DENIED_VIOLATIONS, undefined, MISSING_VIOLATIONS, STRING_VIOLATIONS, undefined];
  const answers: Record<string, { plain: string; explained: unknown }> = {};
  for (const evaluation of ['inline', 'pool'] as const) {
    const { server, logFile } = await serverWith(t, { evaluation });
    const plain = await answerText(t, server, '/check/bulk', bulk);
    // Explanations name times and the revision: what they list of the schemas is compared.
    const explained = JSON.parse(await answerText(t, server, '/check/bulk?explain=true', bulk)).map((decision: { explain: { schema_violations?: string[] } }) => decision.explain.schema_violations);
    answers[evaluation] = { plain, explained };
    const { live, counted } = await liveCounting(server, 6);
    t.equal(counted, 6, `${evaluation}: three items of each of the two bulks`);
    t.equal(await violationsCounted(server), 6, evaluation);
    t.same(live.recent_denials.denials[0].schema_violations, DENIED_VIOLATIONS, `${evaluation}: the denial lists them`);
    await server.close();
    const lines = logLines(logFile);
    t.same(lines.map((line) => line.schema_violations), [...expected, ...expected], `${evaluation}: one line per item, each once`);
  }
  t.equal(answers.pool!.plain, answers.inline!.plain, 'the same bytes');
  t.same(answers.pool!.explained, expected);
  t.same(answers.inline!.explained, expected);
});
