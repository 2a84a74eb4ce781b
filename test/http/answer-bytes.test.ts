import t from 'tap';
import fc from 'fast-check';
import { request } from 'undici';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { checkResponseListSchema, checkResponseSchema } from '../../src/schemas/check.js';
import { authzenDecisionSchema, authzenEvaluationsResponseSchema } from '../../src/schemas/authzen.js';
import type { Evaluation } from '../../src/config/config.js';
import { startServer, type TestServer } from '../helpers/server.js';

/**
 * The answers of /check and /check/bulk are joined from texts each decision was built with; their
 * bytes are the ones the check routes' response schemas serialize (fast-json-stringify, as Fastify
 * compiles them) and JSON.stringify writes, for random policy sets whose names hold characters JSON
 * escapes, random checks, attribute conflicts and a set without policies; on the front thread and in
 * the worker pool. ANSWER_BYTES_RUNS sets the number of cases; ANSWER_BYTES_SEED replays a failure.
 */

const RUNS = Number(process.env.ANSWER_BYTES_RUNS ?? 40);
const SEED = process.env.ANSWER_BYTES_SEED === undefined ? undefined : Number(process.env.ANSWER_BYTES_SEED);

const serializerOf = SerializerSelector()({}, {});
const serializeAnswer = serializerOf({ schema: checkResponseSchema, method: 'POST', url: '/check', httpStatus: '200' });
const serializeAnswers = serializerOf({ schema: checkResponseListSchema, method: 'POST', url: '/check/bulk', httpStatus: '200' });
const serializeEvaluation = serializerOf({ schema: authzenDecisionSchema, method: 'POST', url: '/access/v1/evaluation', httpStatus: '200' });
const serializeEvaluations = serializerOf({ schema: authzenEvaluationsResponseSchema, method: 'POST', url: '/access/v1/evaluations', httpStatus: '200' });

/** Name pieces JSON writes escaped or as they are: quotes, backslashes, controls, non-ASCII, U+2028. */
const NAME_PIECES = ['p', 'r', '"', '\\', '\n', '\t', '\u0001', 'é', '😀', '\u2028', '</script>', ' ', "'"];
/** A name's text after its prefix, which makes it one a policy may have (letters or digits to make a slug from) and tells it from its siblings. */
const nameText = fc.array(fc.constantFrom(...NAME_PIECES), { maxLength: 6 }).map((pieces) => pieces.join(''));
const ACTIONS = ['read', 'write'];

const rule = fc.record({
  name: nameText,
  effect: fc.constantFrom('allow' as const, 'deny' as const),
  level: fc.option(fc.constantFrom(0, 1, 2), { nil: undefined }),
  actions: fc.subarray(ACTIONS, { minLength: 1 }),
});
const policySet = fc.array(fc.record({ name: nameText, defaultEffect: fc.constantFrom('allow' as const, 'deny' as const), rules: fc.array(rule, { minLength: 1, maxLength: 3 }) }), {
  maxLength: 4,
});
type PolicySet = typeof policySet extends fc.Arbitrary<infer T> ? T : never;

/** A check by attributes, or naming the registered user:1 (level 1) with a level that may contradict it. */
const check = fc.oneof(
  fc.record({ level: fc.constantFrom(0, 1, 2), action: fc.constantFrom(...ACTIONS, 'delete') }).map(({ level, action }) => ({
    principal: { attributes: { level } },
    resource: { attributes: { kind: 'doc' } },
    action,
  })),
  fc.record({ level: fc.constantFrom(1, 2), action: fc.constantFrom(...ACTIONS) }).map(({ level, action }) => ({
    principal: { uri: 'user:1', attributes: { level } },
    resource: { attributes: { kind: 'doc' } },
    action,
  })),
);

type Drawn = typeof check extends fc.Arbitrary<infer T> ? T : never;

async function text(server: TestServer, path: string, body: unknown): Promise<{ status: number; contentType: unknown; headerNames: string[]; text: string }> {
  const response = await request(server.url + path, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  return { status: response.statusCode, contentType: response.headers['content-type'], headerNames: Object.keys(response.headers), text: await response.body.text() };
}

/** A drawn check as the AuthZEN evaluation that asks it: user:1 by its id, a principal by attributes as the unregistered user:anyone. */
const evaluationOf = (drawn: Drawn) => ({
  subject: { type: 'user', id: 'uri' in drawn.principal ? '1' : 'anyone', properties: drawn.principal.attributes },
  resource: { type: 'doc', id: 'd', properties: drawn.resource.attributes },
  action: { name: drawn.action },
});

/** The headers an AuthZEN answer begins with, in this order: the request id, the revision, then what Fastify's serializer writes. */
const AUTHZEN_HEADERS = ['x-request-id', 'verdict-revision', 'content-type', 'content-length'];

/**
 * Asks /access/v1/evaluations (under each semantic, with and without reasons) and /access/v1/evaluation
 * for `checks`, whose decisions are `decisions`: every answer must be the bytes the AuthZEN response
 * schemas serialize and JSON.stringify writes, with its headers in their order, and decide as /check.
 */
async function expectAuthzenBytes(server: TestServer, checks: Drawn[], decisions: { allowed: boolean }[]): Promise<void> {
  const evaluations = checks.map(evaluationOf);
  const sameBytes = (what: string, answered: Awaited<ReturnType<typeof text>>, serialize: (answer: unknown) => string) => {
    if (answered.status !== 200) throw new Error(`${what}: ${answered.status} ${answered.text}`);
    const answer: unknown = JSON.parse(answered.text);
    if (answered.text !== serialize(answer)) throw new Error(`${what}: ${answered.text} is not ${serialize(answer)}`);
    if (answered.text !== JSON.stringify(answer)) throw new Error(`${what}: ${answered.text} is not JSON.stringify's ${JSON.stringify(answer)}`);
    if (answered.headerNames.slice(0, AUTHZEN_HEADERS.length).join() !== AUTHZEN_HEADERS.join()) throw new Error(`${what}: headers ${answered.headerNames.join()}`);
    if (answered.contentType !== 'application/json; charset=utf-8') throw new Error(`${what}: content-type ${String(answered.contentType)}`);
    return answer;
  };
  for (const semantic of ['execute_all', 'deny_on_first_deny', 'permit_on_first_permit']) {
    for (const query of ['', '?explain=true']) {
      const what = `evaluations${query} (${semantic})`;
      const answer = sameBytes(what, await text(server, `/access/v1/evaluations${query}`, { evaluations, options: { evaluations_semantic: semantic } }), serializeEvaluations);
      const answered = (answer as { evaluations: { decision: boolean }[] }).evaluations;
      for (const [index, { decision }] of answered.entries()) {
        if (decision !== decisions[index]!.allowed) throw new Error(`${what}: item ${index} decided ${decision}, /check/bulk ${decisions[index]!.allowed}`);
      }
      if (semantic === 'execute_all' && answered.length !== checks.length) throw new Error(`${what}: ${answered.length} answers to ${checks.length}`);
    }
  }
  for (const [index, evaluation] of evaluations.entries()) {
    const one = await text(server, '/access/v1/evaluation', evaluation);
    // A conflict is a denial in evaluations, a 400 alone.
    if (one.status === 400) continue;
    const answer = sameBytes('evaluation', one, serializeEvaluation);
    if ((answer as { decision: boolean }).decision !== decisions[index]!.allowed) throw new Error(`evaluation ${index}: ${one.text}, /check/bulk ${decisions[index]!.allowed}`);
  }
}

/** Deletes every policy of `server` and writes `policies` in their place, each rule deciding by the principal's level. */
async function replacePolicies(server: TestServer, policies: PolicySet): Promise<void> {
  const listed = (await server.call('GET', '/admin/policies')).body as { name: string }[];
  for (const { name } of listed) {
    const deleted = await server.call('DELETE', `/admin/policies/${encodeURIComponent(name)}`);
    if (deleted.status >= 300) throw new Error(`deleting ${JSON.stringify(name)}: ${deleted.status} ${JSON.stringify(deleted.body)}`);
  }
  for (const [index, policy] of policies.entries()) {
    const name = `p${index}${policy.name}`;
    const answer = await server.call('POST', '/admin/policies', {
      name,
      default_effect: policy.defaultEffect,
      rules: policy.rules.map((drawn, ruleIndex) => ({
        name: `r${ruleIndex}${drawn.name}`,
        effect: drawn.effect,
        principal_conditions: drawn.level === undefined ? [] : [{ path: 'attributes.level', operator: '==', value: drawn.level }],
        resource_conditions: [],
        actions: drawn.actions,
      })),
    });
    if (answer.status !== 200) throw new Error(`writing ${JSON.stringify(name)}: ${answer.status} ${JSON.stringify(answer.body)}`);
  }
}

const decisionOf = ({ allowed, reason }: { allowed: boolean; reason: string }) => ({ allowed, reason });

for (const evaluation of ['inline', 'pool'] as Evaluation[]) {
  t.test(`answers keep their bytes (--evaluation ${evaluation})`, async (t) => {
    const server = await startServer({ evaluation, workers: 1 });
    t.teardown(server.close);
    const registered = await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:1', type: 'principal', attributes: { level: 1 } });
    t.equal(registered.status, 200);
    let cases = 0;
    await fc.assert(
      fc.asyncProperty(policySet, fc.array(check, { minLength: 1, maxLength: 12 }), async (policies, checks) => {
        await replacePolicies(server, policies);
        const byAttributes = checks.filter((drawn) => !('uri' in drawn.principal));
        const decided = await text(server, '/check/bulk', checks);
        await expectAuthzenBytes(server, checks, JSON.parse(decided.text) as { allowed: boolean }[]);
        for (const bulk of [checks, byAttributes]) {
          if (bulk.length === 0) continue;
          // Explained answers are still serialized by the response schema: their decisions are the reference.
          const explained = await text(server, '/check/bulk?explain=true', bulk);
          const answered = await text(server, '/check/bulk', bulk);
          if (explained.status !== 200 || answered.status !== 200) throw new Error(`bulk: ${explained.status} ${answered.status} ${answered.text}`);
          const decisions = (JSON.parse(explained.text) as { allowed: boolean; reason: string }[]).map(decisionOf);
          if (answered.text !== serializeAnswers(decisions)) throw new Error(`bulk: ${answered.text} is not ${serializeAnswers(decisions)}`);
          if (answered.text !== JSON.stringify(decisions)) throw new Error(`bulk: ${answered.text} is not JSON.stringify's ${JSON.stringify(decisions)}`);
          if (answered.contentType !== 'application/json; charset=utf-8') throw new Error(`bulk: content-type ${String(answered.contentType)}`);
          for (const [index, single] of bulk.entries()) {
            const one = await text(server, '/check', single);
            // A conflict is a denial in a bulk, a 400 alone.
            if (one.status === 400) continue;
            if (one.text !== serializeAnswer(decisions[index]) || one.text !== JSON.stringify(decisions[index])) throw new Error(`check: ${one.text}, not ${JSON.stringify(decisions[index])}`);
            if (one.contentType !== 'application/json; charset=utf-8') throw new Error(`check: content-type ${String(one.contentType)}`);
          }
        }
        cases++;
      }),
      { numRuns: RUNS, seed: SEED },
    );
    t.equal(cases, RUNS, `${RUNS} policy sets, every answer the bytes it was, /check's and AuthZEN's`);
  });
}

t.test('a conflicting check alone is still a 400 with its detail', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:1', type: 'principal', attributes: { level: 1 } });
  const conflict = await server.call('POST', '/check', { principal: { uri: 'user:1', attributes: { level: 2 } }, resource: { attributes: { kind: 'doc' } }, action: 'read' });
  t.equal(conflict.status, 400);
  t.match(conflict.body.detail, /level/);
  t.equal(conflict.headers['content-type'], 'application/json; charset=utf-8');
});
