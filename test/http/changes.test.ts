import t from 'tap';
import { Client, request } from 'undici';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { keyDigest } from '../../src/admin-keys.js';
import { scratchDir, startServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import { MAX_FEED_SUBSCRIBERS, MAX_FEEDS_PER_KEY } from '../../src/http/changes.js';
import { MAX_URIS_PER_LINE } from '../../src/services/change-feed.js';
import { HEARTBEAT_MILLIS } from '../../src/schemas/wire.js';
import { ManualClock } from '../helpers/manual-clock.js';

// GET /admin/changes: the decision change feed a caching client follows, over real HTTP.

interface Follower {
  headers: Record<string, string | string[] | undefined>;
  lines: Record<string, unknown>[];
  /** Resolves with the first line (from those not yet taken) that `wanted` accepts. */
  next(wanted: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  ended: Promise<void>;
  close(): void;
}

async function follow(server: TestServer, headers: Record<string, string> = {}): Promise<Follower> {
  const controller = new AbortController();
  // A connection of its own, gone with the feed: a shared agent may keep one open that a closing server waits for.
  const dispatcher = new Client(server.url);
  const response = await request(`${server.url}/admin/changes`, { headers, signal: controller.signal, dispatcher });
  if (response.statusCode !== 200) {
    const text = await response.body.text();
    await dispatcher.destroy();
    throw new Error(`the feed answered ${response.statusCode}: ${text}`);
  }
  const lines: Record<string, unknown>[] = [];
  const waiting: (() => void)[] = [];
  let taken = 0;
  let partial = '';
  response.body.setEncoding('utf8');
  const ended = new Promise<void>((resolve) => {
    response.body.on('data', (chunk: string) => {
      const parts = (partial + chunk).split('\n');
      partial = parts.pop()!;
      for (const part of parts) lines.push(JSON.parse(part) as Record<string, unknown>);
      for (const wake of waiting.splice(0)) wake();
    });
    response.body.on('end', resolve);
    response.body.on('error', () => resolve());
  }).then(() => dispatcher.destroy());
  const next = async (wanted: (line: Record<string, unknown>) => boolean) => {
    for (;;) {
      while (taken < lines.length) {
        const line = lines[taken++]!;
        if (wanted(line)) return line;
      }
      await new Promise<void>((resolve) => waiting.push(resolve));
    }
  };
  return { headers: response.headers, lines, next, ended, close: () => controller.abort() };
}

const POLICY = { name: 'p', rules: [{ name: 'r', effect: 'allow', actions: ['read'] }] };

t.test('the feed starts with the revision served, then names each new revision and each changed entity', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const feed = await follow(server);
  t.teardown(feed.close);
  const first = await feed.next(() => true);
  t.same(Object.keys(first).sort(), ['at', 'revision', 'time_dependent']);
  t.equal(first.time_dependent, false);
  t.equal(feed.headers['verdict-revision'], '0', 'the answer names the revision, as every answer does');
  t.equal(feed.headers['content-type'], 'application/x-ndjson');
  t.equal(first.revision, 0);

  const written = await server.call('POST', '/admin/policies', POLICY);
  t.equal(written.status, 200);
  const revised = await feed.next((line) => line.revision !== undefined);
  t.equal(revised.revision, Number(written.headers['verdict-revision']), "the write's revision, as its answer named it");
  t.ok((revised.at as number) <= Date.now() && (revised.at as number) > Date.now() - 10_000);

  t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:alice', type: 'principal', attributes: { role: 'r' } })).status, 200);
  t.same((await feed.next((line) => line.entities !== undefined)).entities, ['user:alice']);
  t.equal((await server.call('PUT', '/admin/fetchers/registry/entities/user%3Aalice', { uri: 'user:alice', type: 'principal', attributes: { role: 's' } })).status, 200);
  t.same((await feed.next((line) => line.entities !== undefined)).entities, ['user:alice'], 'an update');
  t.equal((await server.call('DELETE', '/admin/fetchers/registry/entities/user%3Aalice')).status, 200);
  t.same((await feed.next((line) => line.entities !== undefined)).entities, ['user:alice'], 'a deletion');

  const schemas = await server.call('PUT', '/admin/schemas', { principal: { attributes: { type: 'object' } } });
  t.equal(schemas.status, 200, JSON.stringify(schemas.body));
  t.equal((await feed.next((line) => line.revision !== undefined)).revision, Number(schemas.headers['verdict-revision']), 'a schema write is a revision too');

  const hours = { name: 'hours', rules: [{ name: 'r', effect: 'allow', actions: ['read'], principal_conditions: [{ path: 'attributes.seen', operator: 'within', value: { last: 'PT1H' } }] }] };
  t.equal((await server.call('POST', '/admin/policies', hours)).status, 200);
  t.same((await feed.next((line) => line.revision !== undefined)).time_dependent, true, 'a policy that reads the decision time makes the revision time-dependent');
  t.equal((await server.call('DELETE', '/admin/policies/hours')).status, 200);
  t.same((await feed.next((line) => line.revision !== undefined)).time_dependent, false, 'and it is no longer once that policy is gone');
});

t.test('a feed with nothing to say sends a heartbeat every two seconds of its clock, a line of `at` alone; the last reader gone, it stops', async (t) => {
  const clock = new ManualClock();
  const server = await startServer({}, { clock });
  t.teardown(server.close);
  const feed = await follow(server);
  await feed.next(() => true);
  clock.advance(HEARTBEAT_MILLIS - 1);
  const beat = clock.now() + 1;
  clock.advance(1);
  t.same(await feed.next(() => true), { at: beat }, 'at the hour it was sent');
  clock.advance(2 * HEARTBEAT_MILLIS);
  t.same([await feed.next(() => true), await feed.next(() => true)], [{ at: beat + HEARTBEAT_MILLIS }, { at: beat + 2 * HEARTBEAT_MILLIS }]);
  const timers = clock.pending;
  feed.close();
  await feed.ended;
  await until(() => clock.pending === timers - 1, 'the heartbeat stopped');
  t.pass('no timer is left once no one follows the feed');
});

t.test('a bulk registration is one line; more uris than a line names make "all"', async (t) => {
  const server = await startServer({ bulkRegisterMaxEntities: 5000 });
  t.teardown(server.close);
  const feed = await follow(server);
  t.teardown(feed.close);
  const entities = (count: number, prefix: string) => Array.from({ length: count }, (_, index) => ({ uri: `${prefix}:${index}`, type: 'resource', attributes: { kind: 'doc' } }));
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities/$bulk', entities(3, 'few'))).status, 200);
  t.same((await feed.next((line) => line.entities !== undefined)).entities, ['few:0', 'few:1', 'few:2']);
  t.equal((await server.call('POST', '/admin/fetchers/registry/entities/$bulk', entities(MAX_URIS_PER_LINE + 1, 'many'))).status, 200);
  const many = await feed.next((line) => line.entities !== undefined);
  t.equal(many.entities, 'all', `${MAX_URIS_PER_LINE + 1} uris are "all"`);
});

t.test('behind the admin key, which a read key passes; at most so many feeds, and half of them per key; closing the server ends them', async (t) => {
  const [key, reader] = ['k'.repeat(32), 'r'.repeat(32)];
  const keys = join(scratchDir(t), 'admin-keys');
  writeFileSync(keys, `reader read ${keyDigest(reader).toString('hex')}\n`);
  const server = await startServer({ adminAuthRequired: true, adminApiKey: key, adminKeysFile: keys });
  const refused = await server.call('GET', '/admin/changes');
  t.equal(refused.status, 401, 'no key, no feed: entity uris are the registry’s');
  const read = await follow(server, { 'way-api-key': reader });
  t.match(await read.next(() => true), { revision: 0 }, 'a read key follows the feed');
  read.close();
  await read.ended;
  const readerFeeds = await Promise.all(Array.from({ length: MAX_FEEDS_PER_KEY }, () => follow(server, { 'way-api-key': reader })));
  const overShare = await server.call('GET', '/admin/changes', undefined, { 'way-api-key': reader });
  t.equal(overShare.status, 503, 'a key past its share is refused');
  t.match((overShare.body as { detail: string }).detail, `The admin key 'reader' already holds ${MAX_FEEDS_PER_KEY} change feeds of this process, its share`);
  const feeds = [...readerFeeds, ...(await Promise.all(Array.from({ length: MAX_FEED_SUBSCRIBERS - MAX_FEEDS_PER_KEY }, () => follow(server, { 'way-api-key': key }))))];
  t.pass('while another key still takes the rest');
  const beyond = await server.call('GET', '/admin/changes', undefined, { 'way-api-key': key });
  t.equal(beyond.status, 503);
  t.match((beyond.body as { detail: string }).detail, `already serves ${MAX_FEED_SUBSCRIBERS} change feeds`);
  feeds[0]!.close();
  // The closed one leaves room once the server has seen it go.
  let again: Follower | undefined;
  for (let attempt = 0; again === undefined && attempt < 50; attempt++) {
    again = await follow(server, { 'way-api-key': reader }).catch(() => undefined);
    if (again === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.ok(again !== undefined, 'a feed closed by its reader frees its place');
  await server.close();
  await Promise.all([...feeds.slice(1), again!].map((feed) => feed.ended));
  t.pass('every open feed ended when the server closed');
});
