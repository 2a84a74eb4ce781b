import t from 'tap';
import { request } from 'undici';
import { startVerdict, type RunningVerdict } from '../helpers/child.js';
import { scratchDir, startServer } from '../helpers/server.js';
import { examplePath, operationsOf } from '../helpers/openapi.js';
import { MIN_REVISION_HEADER } from '../../src/schemas/wire.js';

// Read-your-writes across processes: two real Verdict processes on one data directory. A client
// writes through one and checks through the other with the write's revision in
// verdict-min-revision; the other answers only once it serves that revision.

async function call(server: RunningVerdict, method: 'GET' | 'POST', path: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await request(server.url + path, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
  });
  return { status: response.statusCode, revision: Number(response.headers['verdict-revision']), body: (await response.body.json()) as any };
}

const allow = (action: string) => ({
  name: `allow-${action}`,
  rules: [{ name: 'everyone', effect: 'allow', principal_conditions: [], resource_conditions: [], actions: [action] }],
});
const checkOf = (action: string) => ({ principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } }, action });
const planOf = (action: string) => ({ principal: { attributes: { a: 1 } }, action });

t.test('verdict-min-revision: a check waits for the revision written through another process, or is 503 after the wait', async (t) => {
  const dataDir = scratchDir(t);
  const args = ['--store', 'embedded', '--data-dir', dataDir, '--min-revision-wait-ms', '5000', '--log-level', 'warn'];
  const writer = await startVerdict(t, args);
  const reader = await startVerdict(t, args);

  for (let round = 1; round <= 5; round++) {
    const written = await call(writer, 'POST', '/admin/policies', allow(`act-${round}`));
    t.equal(written.status, 200);
    t.equal(written.revision, round, 'the write answers with the revision that includes it');
    const minimum = { 'verdict-min-revision': String(written.revision) };
    const single = await call(reader, 'POST', '/check', checkOf(`act-${round}`), minimum);
    t.same([single.status, single.body.allowed], [200, true], `round ${round}: the other process decides with the write`);
    t.ok(single.revision >= round, 'at that revision or later');
    const bulk = await call(reader, 'POST', '/check/bulk', [checkOf(`act-${round}`), checkOf('nothing')], minimum);
    t.same(bulk.body.map((decision: { allowed: boolean }) => decision.allowed), [true, false], 'a bulk too');
    const legacy = await call(reader, 'POST', '/check-access', checkOf(`act-${round}`), minimum);
    t.equal(legacy.body, true, 'and /check-access');
    const planned = await call(reader, 'POST', '/plan', planOf(`act-${round}`), minimum);
    t.same([planned.status, planned.body.kind], [200, 'always_allowed'], 'and /plan');
    const plans = await call(reader, 'POST', '/plan/bulk', [planOf(`act-${round}`), planOf('nothing')], minimum);
    t.same(plans.body.map((plan: { kind: string }) => plan.kind), ['always_allowed', 'always_denied'], 'and /plan/bulk');
  }

  // Each of these waits the whole 5 s before its 503: asked together, they wait it once.
  const [ahead, ...aheadPlans] = await Promise.all(
    (
      [
        ['/check', checkOf('act-1')],
        ['/plan', planOf('act-1')],
        ['/plan/bulk', [planOf('act-1')]],
      ] as const
    ).map(([path, body]) => call(reader, 'POST', path, body, { 'verdict-min-revision': '1000' })),
  );
  t.equal(ahead!.status, 503, 'a revision that does not arrive in time');
  t.equal(
    ahead!.body.detail,
    'This process serves policy revision 5; revision 1000 did not reach it within 5000 ms. Retry, or send the check to the process that answered the write',
  );
  const malformed = await call(reader, 'POST', '/check', checkOf('act-1'), { 'verdict-min-revision': 'latest' });
  t.equal(malformed.status, 400);
  t.match(malformed.body.detail, /^verdict-min-revision must be a revision number/);
  for (const [index, [path, body]] of ([['/plan', planOf('act-1')], ['/plan/bulk', [planOf('act-1')]]] as const).entries()) {
    t.same(aheadPlans[index], { status: 503, revision: 5, body: ahead!.body }, `${path}: 503 alike`);
    t.same(await call(reader, 'POST', path, body, { 'verdict-min-revision': 'latest' }), { status: 400, revision: 5, body: malformed.body }, `${path}: 400 alike`);
  }
  t.equal((await call(reader, 'POST', '/check', checkOf('act-1'), { 'verdict-min-revision': '0' })).status, 200, 'a revision already served answers at once');
});

const AUTHZEN_EVALUATION = { subject: { type: 'user', id: 'a' }, action: { name: 'act' }, resource: { type: 'doc', id: '1' } };

t.test('every route that documents verdict-min-revision honours it: 503 past the wait, 400 malformed, at once when served', async (t) => {
  const server = await startServer({ minRevisionWaitMs: 50 });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', allow('act'))).status, 200);
  const operations = operationsOf((await server.call('GET', '/docs/json')).body);
  const documenting = operations.filter((operation) => operation.description.includes(MIN_REVISION_HEADER));
  t.strictSame(
    operations.filter((operation) => !operation.secured && operation.takesBody && !documenting.includes(operation)).map(({ method, route }) => `${method} ${route}`),
    [],
    'every public route that decides documents the header',
  );
  const bodies = new Map<string, unknown>([
    ['/check', checkOf('act')],
    ['/check-access', checkOf('act')],
    ['/check/bulk', [checkOf('act')]],
    ['/access/v1/evaluation', AUTHZEN_EVALUATION],
    ['/access/v1/evaluations', { ...AUTHZEN_EVALUATION, evaluations: [{}] }],
    ['/access/v1/search/subject', AUTHZEN_EVALUATION],
    ['/access/v1/search/resource', AUTHZEN_EVALUATION],
    ['/access/v1/search/action', AUTHZEN_EVALUATION],
    ['/plan', planOf('act')],
    ['/plan/bulk', [planOf('act')]],
  ]);
  for (const operation of documenting) {
    const name = `${operation.method} ${operation.route}`;
    if (!bodies.has(operation.route)) t.fail(`${name}: no example body`);
    const ask = (revision: string) => server.call(operation.method, examplePath(operation), bodies.get(operation.route), { [MIN_REVISION_HEADER]: revision });
    const far = await ask('1000');
    t.same([far.status, far.body.detail], [503, 'This process serves policy revision 1; revision 1000 did not reach it within 50 ms. Retry, or send the check to the process that answered the write'], `${name}: a revision that does not arrive`);
    const malformed = await ask('latest');
    t.same([malformed.status, malformed.body.detail], [400, "verdict-min-revision must be a revision number (from a verdict-revision header), got 'latest'"], `${name}: a malformed one`);
    t.equal((await ask('1')).status, 200, `${name}: one already served answers at once`);
  }
});
