import t from 'tap';
import fc from 'fast-check';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { startVerdict, type RunningVerdict } from '../helpers/child.js';
import { scratchDir } from '../helpers/server.js';
import { arbitraryOf, type Vocabulary } from '../helpers/openapi-arbitraries.js';
import { operationsOf, type OpenApiDocument, type Operation } from '../helpers/openapi.js';

/**
 * Every route the server's OpenAPI document declares, public and admin, sent generated requests
 * (from the declared schemas, stretched toward the limits) and heavy ones aimed at what grows
 * fastest, against large and adversarial policy sets, on a real Verdict with a small heap. No
 * request may crash it or get a 5xx; no answer may grow past what the request and the stored data
 * account for; and checks sent all along on another connection must keep being answered, none of
 * them held up for seconds (a generous bound: the figures are bench/heavy-requests.ts's).
 * HOSTILE_RUNS sets the number of requests (default 200), HOSTILE_SEED replays a run.
 */

const RUNS = Number(process.env.HOSTILE_RUNS ?? 200);
/** Drawn afresh each run and printed, so that a failure can be replayed. */
const SEED = Number(process.env.HOSTILE_SEED ?? Math.floor(Math.random() * 2 ** 31));
const HEAP_MB = 160;
const KEY = 'hostile-key';
const MAX_ANSWER_SIZE = 1024 * 1024;
/** Longer than any check may wait, however loaded the machine: a stall of seconds is what is tested for. */
const STALL_BOUND_MS = 5000;

const ACTIONS = ['read', 'write', 'plan', 'explain', 'reed', 'Read', 'read-all', 'x'.repeat(255)];
const eq = (path: string, value: unknown) => ({ path, operator: '==', value });

/** Policies shaped to make the server's work or answers grow fastest: each kind at the sizes its limits allow. */
const adversarialPolicy = fc.oneof(
  // Allow and deny rules alternating: a plan's exemptions grow as their product.
  fc.integer({ min: 50, max: 450 }).map((pairs) => ({
    rules: Array.from({ length: pairs }, (_, index) => [
      { name: `grant-${index}`, effect: 'allow', resource_conditions: [eq(`attributes.owner${index}`, 'alice'), eq(`attributes.kind${index}`, index)], actions: ['plan', 'read'] },
      { name: `denial-${index}`, effect: 'deny', resource_conditions: [eq(`attributes.flag${index}`, true)], actions: ['plan', 'read'] },
    ]).flat(),
  })),
  // Many rules of one action failing on one long principal value: explanations quote it each time.
  fc.integer({ min: 100, max: 1000 }).map((count) => ({
    rules: Array.from({ length: count }, (_, index) => ({ name: `team-${index}`, effect: 'allow', principal_conditions: [eq('attributes.team', `team-${index}-${'t'.repeat(40)}`)], actions: ['explain', 'read'] })),
  })),
  // Rules sharing conditions: validation compares each with every rule before it.
  fc.integer({ min: 100, max: 800 }).map((count) => ({
    rules: Array.from({ length: count }, (_, index) => ({
      name: `r${index}`,
      effect: index % 7 === 0 ? 'deny' : 'allow',
      principal_conditions: [...Array.from({ length: 10 }, (_, position) => eq(`attributes.a${position}`, position)), { path: 'attributes.level', operator: 'gte', value: index }],
      actions: [ACTIONS[index % ACTIONS.length]!],
    })),
  })),
  // Long values and deep paths: filters and explanations amplify what they repeat.
  fc.tuple(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1000, max: 30_000 })).map(([count, length]) => ({
    rules: Array.from({ length: count }, (_, index) => ({
      name: `long-${index}`,
      effect: index % 3 === 0 ? 'deny' : 'allow',
      resource_conditions: [
        { path: `attributes.${Array.from({ length: 40 }, (_, step) => `s${step}`).join('.')}`, operator: 'in', value: Array.from({ length: length / 10 }, (_, item) => `v${item}`) },
        { path: 'attributes.tags.0', operator: 'contains', value: 'x'.repeat(length / 10) },
      ],
      actions: ['plan', 'explain'],
    })),
  })),
);

/** Bodies aimed at the routes where work grows fastest; the rest are drawn from the declared schemas. */
function heavyBody(operation: Operation, vocabulary: Vocabulary): fc.Arbitrary<unknown> | undefined {
  const principal = fc.record({ attributes: fc.record({ team: fc.constantFrom('any', `team-3-${'t'.repeat(40)}`, 'p'.repeat(5000)), level: fc.integer({ min: 0, max: 900 }) }) });
  const check = fc.record({ principal, resource: fc.constant({ attributes: { owner0: 'alice', flag3: true } }), action: fc.constantFrom(...ACTIONS) });
  const plan = fc.record({ principal, action: fc.constantFrom('plan', 'read', 'explain'), mongodb: fc.constantFrom({}, { attributes_prefix: `${'p'.repeat(2000)}.` }) });
  switch (`${operation.method} ${operation.route}`) {
    case 'POST /check/bulk':
      return fc.array(check, { minLength: 1, maxLength: 1000 });
    case 'POST /check':
    case 'POST /check-access':
      return check;
    case 'POST /plan':
      return plan;
    case 'POST /plan/bulk':
      return fc.array(plan, { minLength: 1, maxLength: 300 });
    case 'POST /admin/policies':
    case 'POST /admin/policies/validate':
    case 'POST /create-policy':
      return fc.tuple(adversarialPolicy, fc.constantFrom(...vocabulary.words)).map(([policy, name]) => ({ ...policy, name }));
    default:
      return undefined;
  }
}

/** A request to send: where, with which query, body and key. */
interface Attempt {
  operation: Operation;
  path: string;
  body: unknown;
  keyed: boolean;
}

/** Text as a URL carries it: every byte of its UTF-8 percent-encoded (a lone surrogate as U+FFFD's). */
const percentEncoded = (text: string) => [...Buffer.from(text)].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');

function attemptFor(operation: Operation, vocabulary: Vocabulary): fc.Arbitrary<Attempt> {
  const parameter = fc.oneof(fc.constantFrom(...vocabulary.words), fc.constantFrom('1', '0', '%2F', 'a%2Fb', '..', '%00', 'x'.repeat(3000)));
  const pathParameters = [...operation.route.matchAll(/\{([^}]+)\}/g)].map(([, name]) => name!);
  const pathOf = fc.tuple(...pathParameters.map(() => parameter)).map((values) => {
    let path = operation.route;
    pathParameters.forEach((name, index) => (path = path.replace(`{${name}}`, values[index]!.includes('%') ? values[index]! : percentEncoded(values[index]!))));
    return path;
  });
  const query = fc.tuple(...operation.query.map((name) => fc.option(arbitraryOf((operation.querySchemas[name] ?? {}) as Record<string, unknown>, { ...vocabulary, maxString: 200 }), { freq: 2 }))).map((values) =>
    values.flatMap((value, index) => (value === null || typeof value === 'object' ? [] : [`${operation.query[index]!}=${percentEncoded(String(value))}`])).join('&'),
  );
  const heavy = heavyBody(operation, vocabulary);
  const declared = operation.bodySchema === undefined ? fc.constant(undefined) : arbitraryOf(operation.bodySchema as Record<string, unknown>, vocabulary);
  const body = heavy === undefined ? declared : fc.oneof({ arbitrary: declared, weight: 1 }, { arbitrary: heavy, weight: 2 });
  // One request in ten without the admin key: refused on admin routes, whatever it holds.
  return fc.record({ path: pathOf, query, body, keyed: fc.integer({ min: 0, max: 9 }).map((draw) => draw !== 0) }).map(({ path, query, body, keyed }) => ({
    operation,
    path: query === '' ? path : `${path}?${query}`,
    body,
    keyed,
  }));
}

interface Sent {
  status: number;
  length: number;
  millis: number;
}

async function send(server: RunningVerdict, dispatcher: Agent, method: string, path: string, body: unknown, keyed: boolean): Promise<Sent> {
  const text = body === undefined ? undefined : JSON.stringify(body);
  const started = performance.now();
  const response = await request(`${server.url}${path}`, {
    method: method as 'GET',
    dispatcher,
    body: text,
    headers: { ...(text === undefined ? {} : { 'content-type': 'application/json' }), ...(keyed ? { 'way-api-key': KEY } : {}) },
  });
  const answer = await response.body.text();
  return { status: response.statusCode, length: answer.length, millis: performance.now() - started };
}

/** /check one after another until stopped, each answered 200: their latencies. */
async function probeChecks(server: RunningVerdict, stopped: () => boolean, latencies: number[], failures: string[]): Promise<void> {
  const dispatcher = new Agent({ connections: 1 });
  const check = { principal: { attributes: { team: 'probe' } }, resource: { attributes: { owner: 'probe' } }, action: 'read' };
  try {
    while (!stopped()) {
      try {
        const answer = await send(server, dispatcher, 'POST', '/check', check, false);
        if (answer.status !== 200) failures.push(`a check answered ${answer.status}`);
        latencies.push(answer.millis);
      } catch (error) {
        failures.push(`a check failed: ${(error as Error).message}`);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  } finally {
    await dispatcher.close();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

t.test(`every route of the OpenAPI document, ${RUNS} hostile requests: no crash, no 5xx, bounded answers, checks never held up`, async (t) => {
  const server = await startVerdict(t, ['--store', 'embedded', '--data-dir', join(scratchDir(t), 'data'), '--log-level', 'warn', '--admin-authn-required', '--worker-timeout-ms', '30000'], {
    env: { NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}`, ADMIN_API_KEY: KEY },
  });
  const dispatcher = new Agent({ connections: 1, bodyTimeout: 120_000, headersTimeout: 120_000 });
  t.teardown(() => dispatcher.close());
  const document = await (await request(`${server.url}/docs/json`)).body.json();
  const operations = operationsOf(document as OpenApiDocument);
  t.ok(operations.length >= 30, `${operations.length} operations declared`);
  const vocabulary: Vocabulary = {
    words: ['alternating', 'teams', 'shadowing', 'long', 'p1', 'user:alice', 'doc:1', ...ACTIONS, '1'],
    paths: ['attributes.team', 'attributes.owner0', 'attributes.tags.0', 'uri', `attributes.${'s.'.repeat(200)}x`],
    maxString: 60_000,
    maxItems: 1000,
  };

  // Adversarial policy sets, written through the routes under test, and an entity with large attributes.
  t.comment(`HOSTILE_SEED=${SEED}`);
  const seeded = fc.sample(adversarialPolicy, { numRuns: 6, seed: SEED });
  let written = 0;
  for (const [index, policy] of seeded.entries()) {
    const named = { ...policy, name: ['alternating', 'teams', 'shadowing', 'long', 'p1', 'p2'][index] };
    const answer = await send(server, dispatcher, 'POST', '/admin/policies', named, true);
    t.equal(answer.status, 200, `policy ${named.name} stored`);
    written += JSON.stringify(named).length;
  }
  const alice = { uri: 'user:alice', type: 'principal', attributes: { team: 'probe', notes: 'n'.repeat(60_000), list: Array.from({ length: 5000 }, (_, index) => index) } };
  t.equal((await send(server, dispatcher, 'POST', '/admin/fetchers/registry/entities', alice, true)).status, 200, 'an entity with large attributes');
  written += JSON.stringify(alice).length;

  const latencies: number[] = [];
  const failures: string[] = [];
  let stopped = false;
  const idle: number[] = [];
  await Promise.race([probeChecks(server, () => idle.length >= 40, idle, failures), new Promise((resolve) => setTimeout(resolve, 5000))]);
  const probing = probeChecks(server, () => stopped, latencies, failures);

  const seen = new Map<string, number[]>();
  const attempts = fc.sample(fc.constantFrom(...operations).chain((operation) => attemptFor(operation, vocabulary)), { numRuns: RUNS, seed: SEED });
  try {
    for (const attempt of attempts) {
      const label = `${attempt.operation.method} ${attempt.path.slice(0, 120)}`;
      let answer: Sent;
      try {
        answer = await send(server, dispatcher, attempt.operation.method, attempt.path, attempt.body, attempt.keyed);
      } catch (error) {
        t.fail(`${label}: ${(error as Error).message} (the server ${server.process.exitCode === null ? 'runs' : `exited ${server.process.exitCode} ${server.process.signalCode}`})`);
        break;
      }
      const bodyLength = attempt.body === undefined ? 0 : JSON.stringify(attempt.body).length;
      if (answer.status >= 500) t.fail(`${label}: ${answer.status}`);
      // What an answer may hold: its own budget, what the request brought, and what is stored (a list of policies, an audit page).
      const bound = 4 * MAX_ANSWER_SIZE + 3 * bodyLength + 3 * written;
      if (answer.length > bound) t.fail(`${label}: an answer of ${answer.length} characters, beyond ${bound}`);
      if (answer.status === 200 && /^(POST|PUT) \/(admin\/policies|create-policy)/.test(label) && !label.includes('validate')) written += 2 * bodyLength;
      if (answer.status === 200 && /registry|register-entity|update-entity/.test(label)) written += 2 * bodyLength;
      const key = `${attempt.operation.method} ${attempt.operation.route}`;
      seen.set(key, [...(seen.get(key) ?? []), answer.status]);
    }
  } finally {
    stopped = true;
    await probing;
  }

  t.equal(server.process.exitCode, null, 'the server never exited');
  t.same(failures, [], 'every check sent meanwhile was answered 200');
  t.ok(latencies.length > 0, `${latencies.length} checks sent meanwhile`);
  const longest = Math.max(...latencies);
  t.ok(longest < STALL_BOUND_MS, `no check held up for seconds: the longest took ${longest.toFixed(0)} ms (median ${median(latencies).toFixed(1)} ms; idle median ${median(idle).toFixed(1)} ms)`);
  t.ok(seen.size >= operations.length * 0.8 || RUNS < 100, `${seen.size} of ${operations.length} operations exercised`);
  t.comment([...seen].map(([operation, statuses]) => `${operation}: ${[...new Set(statuses)].sort().join(' ')}`).join('\n'));
});
