import t from 'tap';
import fc from 'fast-check';
import { VerdictClient, VerdictError } from '../../clients/node/src/index.js';
import { startServer } from '../helpers/server.js';
import { answeredAlone, requestsOn, roleRule } from './helpers.js';

// The Node client's batching, against a real Verdict: checks issued together go as bulks split at
// the server's limit, and each caller gets exactly what /check answers that check alone, a check the
// server refuses failing only its caller. CLIENT_RUNS sets the number of random cases.

const RUNS = Number(process.env.CLIENT_RUNS ?? 40);
const MAX_BATCH = 5;

/** Checks of every form: nested and flat, uris and attributes, action attributes, context; some the server refuses (422) or cannot decide as asked. */
const check = fc.oneof(
  fc.record({ principal: fc.record({ attributes: fc.record({ role: fc.constantFrom('reader', 'writer', 'guest') }) }), resource: fc.record({ uri: fc.constantFrom('doc:1', 'doc:2') }), action: fc.constantFrom('read', 'write') }),
  fc.record({ principal_uri: fc.constantFrom('user:alice', 'user:bob', 'user:nobody'), resource_uri: fc.constantFrom('doc:1', 'doc:2'), action: fc.constantFrom('read', 'write') }),
  fc.record({ principal: fc.record({ uri: fc.constant('user:alice'), attributes: fc.record({ role: fc.constantFrom('reader', 'writer') }) }), resource: fc.record({ attributes: fc.record({ kind: fc.constant('doc') }) }), action: fc.record({ name: fc.constant('read'), attributes: fc.record({ soft: fc.boolean() }) }), context: fc.record({ ip: fc.constantFrom('10.1.2.3', '192.0.2.1') }) }),
  // Refused: a uri that is not a string, an unknown field, an action of the wrong type.
  fc.constantFrom<Record<string, unknown>>({ principal: { uri: 5 }, action: 'read' }, { principall: {}, action: 'read' }, { principal: {}, action: 7 }),
);

/** When each caller issues its check: at once (the same turn), after some turns of the event loop, or after a timer. */
const timing = fc.oneof(fc.constant({ kind: 'now' as const }), fc.record({ kind: fc.constant('turns' as const), turns: fc.integer({ min: 1, max: 3 }) }), fc.record({ kind: fc.constant('timer' as const), ms: fc.integer({ min: 0, max: 3 }) }));

async function after(when: { kind: 'now' } | { kind: 'turns'; turns: number } | { kind: 'timer'; ms: number }): Promise<void> {
  if (when.kind === 'turns') for (let turn = 0; turn < when.turns; turn++) await new Promise((resolve) => setImmediate(resolve));
  if (when.kind === 'timer') await new Promise((resolve) => setTimeout(resolve, when.ms));
}

t.test(`batched checks under random interleavings answer as /check answers each alone (${RUNS} cases)`, async (t) => {
  const server = await startServer({ bulkCheckMaxRequests: MAX_BATCH });
  t.teardown(server.close);
  for (const policy of [roleRule('readers', 'reader'), roleRule('writers', 'writer', 'write')]) t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:alice', type: 'principal', attributes: { role: 'reader' } })).status, 200);
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:bob', type: 'principal', attributes: { role: 'writer' } })).status, 200);
  const client = new VerdictClient({ url: server.url, batching: { maxBatch: MAX_BATCH } });
  t.teardown(() => client.close());
  const seen = { answered: 0, refused: 0 };
  await fc.assert(
    fc.asyncProperty(fc.array(fc.tuple(check, timing), { minLength: 1, maxLength: 24 }), async (cases) => {
      const results = await Promise.all(
        cases.map(async ([sent, when]) => {
          await after(when);
          return client.check(sent as never).then(
            (decision) => ({ ok: true as const, decision }),
            (error: unknown) => ({ ok: false as const, error }),
          );
        }),
      );
      for (const [index, [sent]] of cases.entries()) {
        const alone = await answeredAlone(server, sent);
        const result = results[index]!;
        if (alone.status === 200) {
          if (!result.ok) throw new Error(`${JSON.stringify(sent)}: /check answers ${alone.body}, the client failed: ${String(result.error)}`);
          if (JSON.stringify(result.decision) !== alone.body) throw new Error(`${JSON.stringify(sent)}: /check answers ${alone.body}, the client ${JSON.stringify(result.decision)}`);
          seen.answered++;
        } else {
          if (result.ok || !(result.error instanceof VerdictError)) throw new Error(`${JSON.stringify(sent)}: /check refuses it (${alone.status}), the client gave ${JSON.stringify(result)}`);
          if (result.error.status !== alone.status || JSON.stringify({ detail: result.error.detail }) !== alone.body) {
            throw new Error(`${JSON.stringify(sent)}: /check refuses it with ${alone.body}, the client with ${result.error.status} ${JSON.stringify(result.error.detail)}`);
          }
          seen.refused++;
        }
      }
    }),
    { numRuns: RUNS },
  );
  t.ok(seen.answered > RUNS && seen.refused > 0, `answered ${seen.answered}, refused ${seen.refused}`);
  const bulks = await requestsOn(server, '/check/bulk');
  t.ok(bulks > 0, `${bulks} bulks sent`);
  const refusedBulks = ((await server.call('GET', '/metrics')).body as string).split('\n').filter((line) => line.includes('route="/check/bulk"') && line.includes('_count') && line.includes('status_code="400"'));
  t.same(refusedBulks.map((line) => Number(line.slice(line.lastIndexOf(' ') + 1))).filter((count) => count > 0), [], `no bulk beyond the server's limit of ${MAX_BATCH}`);
});

t.test('checks issued in one turn go as one bulk; checkMany keeps the order; with batching off each goes alone', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', roleRule('readers', 'reader'))).status, 200);
  const client = new VerdictClient({ url: server.url });
  t.teardown(() => client.close());
  const roles = ['reader', 'guest', 'reader', 'writer', 'reader'];
  const decisions = await client.checkMany(roles.map((role) => ({ principal: { attributes: { role } }, resource: { uri: 'doc:1' }, action: 'read' })));
  t.same(decisions.map((decision) => decision.allowed), [true, false, true, false, true]);
  t.equal(await requestsOn(server, '/check/bulk'), 1, 'five checks, one bulk');
  t.equal(await requestsOn(server, '/check'), 0);

  const alone = new VerdictClient({ url: server.url, batching: false });
  t.teardown(() => alone.close());
  await alone.checkMany(roles.map((role) => ({ principal: { attributes: { role } }, resource: { uri: 'doc:1' }, action: 'read' })));
  t.equal(await requestsOn(server, '/check'), 5, 'batching off: five requests');

  const explained = await client.check({ principal: { attributes: { role: 'reader' } }, resource: { uri: 'doc:1' }, action: 'read' }, { explain: true });
  t.equal(explained.explain?.decided_by.rule, 'reader-read', 'an explained check comes back with its explanation');
});
