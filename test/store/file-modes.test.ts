import t from 'tap';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ask, runVerdict, startVerdict } from '../helpers/child.js';
import { scratchDir } from '../helpers/server.js';

// The files Verdict makes hold every policy, entity, audit record and decision: its user's alone.

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

t.test('the data directory is 0700 and the database, its journal files and the decision log 0600', async (t) => {
  const scratch = scratchDir(t);
  const dataDir = join(scratch, 'state', 'data');
  const decisionLog = join(scratch, 'decisions.log');
  const server = await startVerdict(t, ['--store', 'embedded', '--data-dir', dataDir, '--decision-log', decisionLog, '--workers', '1'], {
    env: { LOG_LEVEL: 'warn' },
  });
  t.equal((await ask(server.url, 'POST', '/admin/policies', { name: 'p', rules: [] })).status, 200);
  t.equal((await ask(server.url, 'POST', '/check', { principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } } })).status, 200);
  for (const directory of [dataDir, join(scratch, 'state')]) t.equal(modeOf(directory), '700', `${directory}: made by Verdict, its user's alone`);
  for (const file of ['verdict.db', 'verdict.db-wal', 'verdict.db-shm']) {
    t.ok(existsSync(join(dataDir, file)), `${file} exists while the server runs`);
    t.equal(modeOf(join(dataDir, file)), '600', file);
  }
  t.equal(modeOf(decisionLog), '600', 'the decision log');
  server.process.kill('SIGTERM');
  t.equal((await server.exited).code, 0);

  const exported = join(scratch, 'export', 'policies');
  const exporting = await runVerdict(t, ['policies', 'export', exported, '--data-dir', dataDir]).exited;
  t.equal(exporting.code, 0, exporting.stderr);
  t.equal(modeOf(exported), '700', 'a directory policies are exported to');
  t.equal(modeOf(join(exported, '001-p.yaml')), '600', 'an exported policy');
});

t.test('files that already exist keep the mode their owner gave them', async (t) => {
  const scratch = scratchDir(t);
  const decisionLog = join(scratch, 'decisions.log');
  writeFileSync(decisionLog, '', { mode: 0o640 });
  const server = await startVerdict(t, ['--store', 'embedded', '--data-dir', scratch, '--decision-log', decisionLog, '--workers', '1'], {
    env: { LOG_LEVEL: 'warn' },
  });
  t.equal(modeOf(decisionLog), '640', 'a log shipper given group access keeps it');
  t.equal(modeOf(join(scratch, 'verdict.db')), '600', 'a database Verdict makes in an existing directory is 0600');
  server.process.kill('SIGTERM');
  await server.exited;
});
