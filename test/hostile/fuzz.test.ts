import t from 'tap';
import fc from 'fast-check';
import { request } from 'undici';
import { OPERATORS, type Policy } from '../../src/schemas/policy.js';
import { startServer } from '../helpers/server.js';
import { isAdminRoute, operationsOf } from '../helpers/openapi.js';
import { reference } from '../engine/reference.js';

// Thousands of generated and mutated requests (bodies, queries, headers, paths, methods) to every
// endpoint of a real server: none may get a 5xx, hang or take the server down, none without the
// admin key may succeed on a protected route, and afterwards its decisions must be those of a
// literal reading of docs/evaluation.md over the policies it then holds, and of hand-written expectations
// over policies written before the fuzzing. FUZZ_RUNS sets the count.

const RUNS = Number(process.env.FUZZ_RUNS ?? 2500);
const KEY = 'fuzz-key';
const TIMEOUT_MS = 10_000;

/** Routes the OpenAPI document does not list, fuzzed beside those it does. */
const UNDOCUMENTED_ROUTES: [string, string][] = [['GET', '/docs/json']];
const HOSTILE = ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString', '', ' ', '.', '..', '%', '%00', '\u0000', '\ud800', 'a.b'];

const percentEncoded = (text: string) => [...Buffer.from(text)].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');

const word = fc.oneof(fc.constantFrom('a', 'b', 'p', 'r', 'read', 'write', 'it', 'hr'), fc.constantFrom(...HOSTILE), fc.string({ maxLength: 12 }));
const anyText = fc.oneof(word, fc.string({ unit: 'binary', maxLength: 20 }));
const value = fc.oneof(fc.constantFrom(1, 2, 'it', 'hr', true, null), fc.jsonValue({ maxDepth: 3 }));
const attributes = fc.oneof(
  fc.dictionary(word, value, { maxKeys: 4 }),
  fc.array(fc.record({ key: word, value }), { maxLength: 3 }),
  fc.jsonValue({ maxDepth: 2 }),
);
const entity = fc.record({ uri: fc.option(anyText), attributes: fc.option(attributes), type: fc.option(fc.constantFrom('principal', 'resource', 'x')) }, { requiredKeys: [] });
const action = fc.option(fc.oneof(fc.constantFrom('read', 'write', 'access'), anyText));
const check = fc.oneof(
  fc.record({ principal: fc.option(entity), resource: fc.option(entity), action }, { requiredKeys: [] }),
  fc.record(
    { principal_uri: fc.option(anyText), principal_attributes: fc.option(attributes), resource_uri: fc.option(anyText), resource_attributes: fc.option(attributes), action },
    { requiredKeys: [] },
  ),
);
const condition = fc.record(
  {
    path: fc.oneof(fc.constantFrom('uri', 'attributes.a', 'attributes.b', 'attributes.a.0', 'attributes.__proto__', 'attributes.constructor.name', 'attributes..a'), anyText),
    operator: fc.oneof(fc.constantFrom(...OPERATORS), anyText),
    value,
  },
  { requiredKeys: ['path', 'operator'] },
);
const rule = fc.record(
  {
    name: word,
    effect: fc.constantFrom('allow', 'deny', 'maybe'),
    principal_conditions: fc.array(condition, { maxLength: 3 }),
    resource_conditions: fc.array(condition, { maxLength: 3 }),
    actions: fc.array(fc.constantFrom('read', 'write', 'access', ''), { maxLength: 3 }),
  },
  { requiredKeys: ['name', 'effect', 'actions'] },
);
const policy = fc.record(
  { name: word, rules: fc.array(rule, { maxLength: 3 }), default_effect: fc.constantFrom('allow', 'deny', 'none'), description: fc.option(anyText), version: fc.option(word) },
  { requiredKeys: ['name', 'rules'] },
);
/** A policy the server accepts, on the attributes and actions the final checks use, so that rules decide some of them. */
const validPolicy = fc.record({
  name: fc.constantFrom('a', 'b', 'p', 'r', 'it', 'hr'),
  rules: fc.array(
    fc.record({
      name: fc.constantFrom('r1', 'r2', 'r3'),
      effect: fc.constantFrom('allow', 'deny'),
      principal_conditions: fc.array(fc.record({ path: fc.constantFrom('attributes.a', 'attributes.b'), operator: fc.constantFrom('==', '!=', 'in'), value: fc.constantFrom(1, 2, 'it', 'hr', true) }), { maxLength: 1 }),
      resource_conditions: fc.array(fc.record({ path: fc.constantFrom('attributes.a', 'attributes.b'), operator: fc.constantFrom('==', '!='), value: fc.constantFrom(1, 2, 'it', 'hr', true) }), { maxLength: 1 }),
      actions: fc.uniqueArray(fc.constantFrom('read', 'write', 'access'), { minLength: 1, maxLength: 2 }),
    }),
    { minLength: 1, maxLength: 3 },
  ),
  default_effect: fc.constantFrom('allow', 'deny'),
}).map((generated) => ({
  ...generated,
  // `in` takes a list
  rules: generated.rules.map((rule) => ({
    ...rule,
    principal_conditions: rule.principal_conditions.map((condition) => (condition.operator === 'in' ? { ...condition, value: [condition.value, 'hr'] } : condition)),
  })),
}));
const registration = fc.record({ uri: fc.option(anyText), type: fc.option(fc.constantFrom('principal', 'resource')), attributes }, { requiredKeys: ['attributes'] });

/** A JSON text, sometimes broken: truncated, or with a character replaced or inserted; or a valid policy. */
const mutatedText = fc
  .tuple(
    fc.oneof(check, fc.array(check, { maxLength: 12 }), policy, registration, fc.jsonValue({ maxDepth: 4 })).map((body) => JSON.stringify(body) ?? ''),
    fc.option(fc.tuple(fc.constantFrom('truncate', 'replace', 'insert'), fc.nat(), fc.constantFrom('{', '}', '[', ']', '"', ',', ':', '\\', '\u0000', 'x', '9'))),
  )
  .map(([text, mutation]) => {
    if (mutation === null || text.length === 0) return text;
    const [kind, at, character] = mutation;
    const index = at % text.length;
    if (kind === 'truncate') return text.slice(0, index);
    return text.slice(0, index) + character + text.slice(kind === 'replace' ? index + 1 : index);
  });
const bodyText = fc.oneof({ arbitrary: mutatedText, weight: 4 }, { arbitrary: validPolicy.map((body) => JSON.stringify(body)), weight: 1 });

/** Query strings: the parameters the document names (`names`), prototype names and any word, with odd values. */
const queryOf = (names: string[]) =>
  fc.dictionary(
    fc.oneof(fc.constantFrom(...names, '__proto__[limit]', 'constructor[prototype]'), word),
    fc.oneof(fc.constantFrom('0', '5', '-1', '1e400', 'true', 'false', 'abc'), anyText),
    { maxKeys: 3 },
  );

/** A request to one of `routes` (a path parameter is written `{}`), with a query of the parameters `queryNames`. */
const fuzzedRequestOf = (routes: [string, string][], queryNames: string[]) => fc.record({
  route: fc.constantFrom(...routes),
  otherMethod: fc.oneof(
    { arbitrary: fc.constant(null), weight: 6 },
    { arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'), weight: 1 },
  ),
  parameter: fc.oneof(fc.constantFrom(...HOSTILE).map(percentEncoded), anyText.map(percentEncoded), fc.constantFrom('%zz', 'a%2Fb', '$count')),
  query: queryOf(queryNames),
  body: fc.option(bodyText, { freq: 10 }),
  contentType: fc.constantFrom('application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'APPLICATION/JSON', 'application/json; charset=latin1', undefined),
  key: fc.constantFrom(KEY, KEY, KEY, 'wrong', undefined),
  extraHeader: fc.option(fc.tuple(fc.constantFrom('x-fuzz', 'accept', 'origin', '__proto__', 'constructor'), fc.string({ maxLength: 20 }).map((text) => text.replace(/[^\x20-\x7e]/g, '')))),
});

/** Errors that mean the server hung, crashed or dropped the connection, rather than the client refusing to send. */
const SERVER_FAULTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_SOCKET', 'ECONNRESET', 'ECONNREFUSED', 'UND_ERR_CLOSED']);

/**
 * Policies written before the fuzzing, with names no fuzzed path or body can reach (longer than any
 * generated text), deciding an action no generated rule names: their answers are known by hand.
 */
const HAND_WRITTEN: Policy[] = [
  {
    version: '1.0',
    name: 'hand-written-first-policy-0001',
    description: null,
    rules: [
      { name: 'hr-may-not-audit', description: null, effect: 'deny', principal_conditions: [{ path: 'attributes.team', operator: '==', value: 'hr' }], resource_conditions: [], actions: ['audit-by-hand'] },
      { name: 'it-audits-laptops', description: null, effect: 'allow', principal_conditions: [{ path: 'attributes.team', operator: 'in', value: ['it', 'ops'] }], resource_conditions: [{ path: 'attributes.kind', operator: '==', value: 'laptop' }], actions: ['audit-by-hand'] },
    ],
    default_effect: 'deny',
  },
  {
    version: '1.0',
    name: 'hand-written-second-policy-0002',
    description: null,
    rules: [{ name: 'auditors-audit', description: null, effect: 'allow', principal_conditions: [{ path: 'attributes.auditor', operator: '==', value: true }], resource_conditions: [], actions: ['audit-by-hand'] }],
    default_effect: 'allow',
  },
];
const HAND_WRITTEN_ENTITY = { uri: 'user:hand-written-auditor-0001', type: 'principal', attributes: { team: 'hr', auditor: true } };
const byHand = (principal: unknown, kind: string) => ({ principal, resource: { attributes: { kind } }, action: 'audit-by-hand' });
const HAND_WRITTEN_CHECKS: [unknown, { allowed: boolean; reason: string }][] = [
  [byHand({ attributes: { team: 'it' } }, 'laptop'), { allowed: true, reason: 'Rule it-audits-laptops allowed the action in policy hand-written-first-policy-0001' }],
  [byHand({ attributes: { team: 'ops' } }, 'laptop'), { allowed: true, reason: 'Rule it-audits-laptops allowed the action in policy hand-written-first-policy-0001' }],
  [byHand({ attributes: { team: 'it' } }, 'phone'), { allowed: false, reason: 'Action denied by default effect' }],
  [byHand({ attributes: { team: 'it', auditor: true } }, 'phone'), { allowed: true, reason: 'Rule auditors-audit allowed the action in policy hand-written-second-policy-0002' }],
  [byHand({ uri: HAND_WRITTEN_ENTITY.uri }, 'laptop'), { allowed: false, reason: 'Rule hr-may-not-audit denied the action in policy hand-written-first-policy-0001' }],
  [byHand({ attributes: { team: 'sales' } }, 'laptop'), { allowed: false, reason: 'Action denied by default effect' }],
];

t.test('fuzzed requests to every endpoint: never a 5xx, a hang, a crash or a success without the key; decisions stay correct', async (t) => {
  const server = await startServer({
    adminAuthRequired: true,
    adminApiKey: KEY,
    adminAuthFailuresPerMinute: 1_000_000,
    bulkCheckMaxRequests: 10,
    workers: 1,
    maxJsonDepth: 12,
  });
  t.teardown(server.close);
  const admin = { 'way-api-key': KEY };
  for (const policy of HAND_WRITTEN) t.equal((await server.call('POST', '/admin/policies', policy, admin)).status, 200, `${policy.name} written`);
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', HAND_WRITTEN_ENTITY, admin)).status, 200, 'an entity registered');

  // Every route the server documents, each path parameter fuzzed, and the query parameters it names.
  const operations = operationsOf((await server.call('GET', '/docs/json')).body);
  const routes = [...operations.map(({ method, route }): [string, string] => [method, route.replace(/\{[^}]+\}/g, '{}')]), ...UNDOCUMENTED_ROUTES];
  t.ok(routes.length > 30, `${routes.length} routes to fuzz`);
  const fuzzedRequest = fuzzedRequestOf(routes, [...new Set(operations.flatMap((operation) => operation.query))]);

  const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort();
  let sent = 0;
  let refusedByClient = 0;
  let withoutKeyOnProtected = 0;
  const statuses = new Map<number, number>();

  await fc.assert(
    fc.asyncProperty(fuzzedRequest, async (fuzzed) => {
      const [routeMethod, template] = fuzzed.route;
      const method = fuzzed.otherMethod ?? routeMethod;
      const search = Object.entries(fuzzed.query)
        .map(([name, text]) => `${percentEncoded(name)}=${percentEncoded(text)}`)
        .join('&');
      const path = template.replaceAll('{}', fuzzed.parameter) + (search === '' ? '' : `?${search}`);
      const headers: Record<string, string> = {};
      if (fuzzed.contentType !== undefined) headers['content-type'] = fuzzed.contentType;
      if (fuzzed.key !== undefined) headers['way-api-key'] = fuzzed.key;
      if (fuzzed.extraHeader !== null) headers[fuzzed.extraHeader[0]] = fuzzed.extraHeader[1];
      let response;
      try {
        response = await request(server.url + path, {
          method: method as 'GET',
          headers,
          body: fuzzed.body ?? undefined,
          headersTimeout: TIMEOUT_MS,
          bodyTimeout: TIMEOUT_MS,
        });
      } catch (error) {
        const code = (error as { code?: string }).code ?? '';
        if (SERVER_FAULTS.has(code)) throw new Error(`${method} ${path}: ${code}`);
        refusedByClient++;
        return;
      }
      sent++;
      const text = await response.body.text();
      statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
      if (response.statusCode >= 500) throw new Error(`${method} ${path} ${fuzzed.body?.slice(0, 200)} → ${response.statusCode} ${text}`);
      if (headers['way-api-key'] !== KEY && isAdminRoute(path.split('?')[0]!)) {
        withoutKeyOnProtected++;
        if (response.statusCode < 300) throw new Error(`authentication bypass: ${method} ${path} with key ${JSON.stringify(fuzzed.key)} → ${response.statusCode} ${text.slice(0, 200)}`);
      }
      if (response.statusCode >= 400 && method !== 'HEAD') {
        const body = JSON.parse(text) as { detail?: unknown };
        if (body.detail === undefined) throw new Error(`${method} ${path} → ${response.statusCode} without a detail: ${text}`);
      }
    }),
    { numRuns: RUNS, seed: process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED) },
  );
  t.comment(`${sent} requests answered (${refusedByClient} refused by the client itself); statuses ${JSON.stringify([...statuses].sort())}`);
  t.ok(sent > RUNS * 0.9, 'nearly every request reached the server');
  t.ok([...statuses.keys()].some((status) => status === 200), 'some requests succeeded');
  t.ok(withoutKeyOnProtected > RUNS * 0.1, `${withoutKeyOnProtected} requests without the right key reached protected routes, none succeeded`);
  t.strictSame(Object.getOwnPropertyNames(Object.prototype).sort(), prototypeKeys, 'Object.prototype is untouched');

  const policies = (await server.call('GET', '/admin/policies', undefined, admin)).body as Policy[];
  const fuzzWritten = policies.filter((policy) => !HAND_WRITTEN.some((known) => known.name === policy.name));
  t.comment(`${fuzzWritten.length} policies written by the fuzzing, with ${fuzzWritten.reduce((rules, policy) => rules + policy.rules.length, 0)} rules`);
  t.ok(fuzzWritten.some((policy) => policy.rules.length > 0), 'the fuzzing left policies with rules for the checks below to meet');
  for (const known of HAND_WRITTEN) t.same(policies.find((policy) => policy.name === known.name), known, `${known.name} is intact`);

  // Hand-written expectations: nothing the fuzzing did may change these answers.
  for (const [check, expected] of HAND_WRITTEN_CHECKS) t.same((await server.call('POST', '/check', check)).body, expected, JSON.stringify(check));
  t.same((await server.call('POST', '/check/bulk', HAND_WRITTEN_CHECKS.map(([check]) => check))).body, HAND_WRITTEN_CHECKS.map(([, expected]) => expected), 'the same in a bulk');

  // On the actions the fuzzing wrote rules for: a literal reading of docs/evaluation.md over what the server holds.
  const attributeSet = fc.dictionary(fc.constantFrom('a', 'b', '__proto__'), fc.constantFrom(1, 2, 'it', 'hr', true), { minKeys: 1, maxKeys: 2 });
  const checks = fc.sample(
    fc.record({ principal: fc.record({ attributes: attributeSet }), resource: fc.record({ attributes: attributeSet }), action: fc.constantFrom('read', 'write', 'access') }),
    { numRuns: 50, seed: 7 },
  );
  const expected = checks.map((one) =>
    reference(policies, {
      principal: { uri: undefined, attributes: new Map(Object.entries(one.principal.attributes)) },
      resource: { uri: undefined, attributes: new Map(Object.entries(one.resource.attributes)) },
      action: one.action,
    }).decision,
  );
  const decidedByRules = expected.filter((decision) => decision.reason.startsWith('Rule ')).length;
  t.ok(decidedByRules > 0, `${decidedByRules} of ${checks.length} checks are decided by a rule`);
  t.same(await Promise.all(checks.map(async (one) => (await server.call('POST', '/check', one)).body)), expected, 'single checks');
  t.same((await server.call('POST', '/check/bulk', checks.slice(0, 10))).body, expected.slice(0, 10), 'a bulk');
  t.equal((await server.call('GET', '/health')).status, 200, 'still serving');
});
