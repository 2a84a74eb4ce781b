import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../helpers/server.js';

// What a process holds for its checks is bounded in bytes, and /metrics says how much it holds of each
// bound: the entity cache (--entity-cache-bytes), the recent checks kept for impact previews, the live
// view's recent denials, and the decision log's queue.

const gauge = (metrics: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1]);

t.test('the entity cache holds at most --entity-cache-bytes of attributes, however large the entities; checks naming the rest read the store and decide the same', async (t) => {
  const server = await startServer({ entityCacheBytes: 16 * 1024 });
  t.teardown(server.close);
  const policy = { name: 'tiers', rules: [{ name: 'gold-reads', effect: 'allow', principal_conditions: [{ path: 'attributes.tier', operator: '==', value: 'gold' }], actions: ['read'] }] };
  t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
  // Forty entities of about 2 KB each (80 KB in all), and one of 40 KB: larger than the whole cache.
  for (let index = 0; index < 40; index++) {
    t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: `user:${index}`, attributes: { tier: index % 2 === 0 ? 'gold' : 'tin', bio: 'x'.repeat(2000) } })).status, 200);
  }
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:huge', attributes: { tier: 'gold', bio: 'y'.repeat(40_000) } })).status, 200);
  for (let round = 0; round < 2; round++) {
    for (const uri of [...Array.from({ length: 40 }, (_, index) => `user:${index}`), 'user:huge']) {
      const answer = await server.call('POST', '/check', { principal: { uri }, resource: { attributes: { kind: 'doc' } }, action: 'read' });
      t.equal(answer.body.allowed, uri === 'user:huge' || Number(uri.slice(5)) % 2 === 0, `${uri}, round ${round + 1}`);
    }
  }
  const metrics = (await server.call('GET', '/metrics')).body as string;
  t.equal(gauge(metrics, 'verdict_entity_cache_bytes_limit'), 16 * 1024, 'the bound, said');
  const held = gauge(metrics, 'verdict_entity_cache_bytes');
  t.ok(held > 8 * 1024 && held <= 16 * 1024, `what it holds, within the bound: ${held} bytes`);
  t.ok(gauge(metrics, 'verdict_entity_cache_entries') < 10, 'fewer than ten 2 KB entities fit');
});

t.test('the recent checks say what they hold and their bound in bytes', async (t) => {
  const server = await startServer({ recentChecks: 10 });
  t.teardown(server.close);
  for (let index = 0; index < 3; index++) await server.call('POST', '/check', { principal: { attributes: { note: 'z'.repeat(1000) } }, resource: { attributes: { kind: 'doc' } }, action: 'read' });
  const metrics = (await server.call('GET', '/metrics')).body as string;
  t.equal(gauge(metrics, 'verdict_recent_checks_bytes_limit'), 10 * 16 * 1024, '--recent-checks × 16 KB');
  const held = gauge(metrics, 'verdict_recent_checks_bytes');
  t.ok(held >= 3000 && held < 4000, `three checks of about 1 KB: ${held} bytes`);
});

t.test("the live view's recent denials hold at most --recent-denials × 16 KB, however large the denied checks; /metrics says what they hold", async (t) => {
  const server = await startServer({ recentDenials: 5 });
  t.teardown(server.close);
  const denied = (attributes: Record<string, string>) => ({ principal: { attributes }, resource: { attributes: { kind: 'doc' } }, action: 'read' });
  // About 120 KB each: two values of 60,000 characters (a value may have 65,536).
  const large = denied({ note: 'x'.repeat(60_000), more: 'y'.repeat(60_000) });
  for (let index = 0; index < 10; index++) t.equal((await server.call('POST', '/check', large)).body.allowed, false);
  for (const note of ['small', 'smaller']) t.equal((await server.call('POST', '/check', denied({ note }))).body.allowed, false);
  const listed = (await server.call('GET', '/admin/live')).body.recent_denials.denials;
  t.same(listed.map((denial: { principal: { attribute_keys: string[] } }) => denial.principal.attribute_keys), [['note'], ['note']], 'the two small denials, listed');
  const metrics = (await server.call('GET', '/metrics')).body as string;
  t.equal(gauge(metrics, 'verdict_recent_denials_bytes_limit'), 5 * 16 * 1024, '--recent-denials × 16 KB');
  const held = gauge(metrics, 'verdict_recent_denials_bytes');
  t.ok(held > 0 && held < 200, `two small checks: ${held} bytes`);
  t.equal(gauge(metrics, 'verdict_recent_denials_skipped'), 10, 'the ten large ones counted, not kept');
});

t.test("the decision log's queue says what waits and its bounds, in lines and bytes; once written, nothing waits", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-log-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const server = await startServer({ decisionLog: join(dir, 'decisions.ndjson') });
  t.teardown(server.close);
  for (let index = 0; index < 5; index++) t.equal((await server.call('POST', '/check', { principal: { attributes: { notes: 'x'.repeat(1000) } }, resource: { uri: 'doc:1' }, action: 'read' })).status, 200);
  // The writer thread writes the five lines in its own time.
  let metrics = '';
  for (let tries = 0; tries < 200; tries++) {
    metrics = (await server.call('GET', '/metrics')).body as string;
    if (gauge(metrics, 'verdict_decision_log_queue_lines') === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  t.equal(gauge(metrics, 'verdict_decision_log_queue_lines_limit'), 10_000);
  t.equal(gauge(metrics, 'verdict_decision_log_queue_bytes_limit'), 64 * 1024 * 1024);
  t.equal(gauge(metrics, 'verdict_decision_log_queue_lines'), 0, 'the lines written, none waits');
  t.equal(gauge(metrics, 'verdict_decision_log_queue_bytes'), 0, 'and what they were counted as is given back');
  t.equal(readFileSync(join(dir, 'decisions.ndjson'), 'utf8').trim().split('\n').length, 5);
});
