import t from 'tap';
import { join } from 'node:path';
import { Pool } from 'undici';
import { VerdictClient } from '../../clients/node/src/index.js';
import { scratchDir } from '../helpers/server.js';
import { startVerdict } from '../helpers/child.js';
import { roleRule } from './helpers.js';

// The Node client over the sidecar's Unix socket (verdict start --socket), a real server process.

t.test('checks, a write and the change feed over a Unix socket', async (t) => {
  const dir = scratchDir(t);
  const socket = join(dir, 'verdict.sock');
  await startVerdict(t, ['--store', 'embedded', '--data-dir', join(dir, 'data'), '--socket', socket]);
  const client = new VerdictClient({ url: 'http://localhost', socketPath: socket, cache: true });
  t.teardown(() => client.close());
  while (!client.cacheServing) await new Promise((resolve) => setTimeout(resolve, 5));
  const check = { principal: { uri: 'user:alice' }, resource: { uri: 'doc:1' }, action: 'read' };
  t.match(await client.check(check), { allowed: false, reason: 'Action denied by default because there are no policies' });
  await client.registerEntity({ uri: 'user:alice', type: 'principal', attributes: { role: 'reader' } });
  t.match(await client.check(check), { allowed: false, reason: 'Action denied by default because there are no policies' });
  const applied = client.changesApplied;
  // A policy written by another caller on the same socket reaches this client through the feed.
  const other = new Pool('http://localhost', { socketPath: socket });
  t.teardown(() => other.close());
  const response = await other.request({ method: 'POST', path: '/admin/policies', body: JSON.stringify(roleRule('readers', 'reader')), headers: { 'content-type': 'application/json' } });
  t.equal(response.statusCode, 200);
  await response.body.dump();
  while (client.changesApplied === applied) await new Promise((resolve) => setTimeout(resolve, 5));
  t.match(await client.check(check), { allowed: true, reason: 'Rule reader-read allowed the action in policy readers' });
});
