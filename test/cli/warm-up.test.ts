import t from 'tap';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { runVerdict, startVerdict } from '../helpers/child.js';
import { scratchDir } from '../helpers/server.js';
import { COMPILE_CACHE_WRITABLE } from '../../src/process/compile-cache.js';

/** Every file under `directory` (Node keeps one folder per Node version and user, a file per module). */
const filesUnder = (directory: string): string[] =>
  existsSync(directory) ? readdirSync(directory, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).map((entry) => entry.name) : [];

t.test('verdict warm-up refuses what it cannot do, with exit code 2', async (t) => {
  const withoutCache = await runVerdict(t, ['warm-up']).exited;
  t.equal(withoutCache.code, 2, 'without NODE_COMPILE_CACHE');
  t.match(withoutCache.stderr, /NODE_COMPILE_CACHE/, 'saying which variable to set');
  const withArgument = await runVerdict(t, ['warm-up', '--port', '1'], { NODE_COMPILE_CACHE: scratchDir(t) }).exited;
  t.equal(withArgument.code, 2, 'with an argument');
  t.match(withArgument.stderr, /takes no arguments/);
});

t.test(`verdict warm-up on Node ${process.versions.node}`, async (t) => {
  const cache = join(scratchDir(t), 'compile-cache');
  const temporary = scratchDir(t);
  const warmed = await runVerdict(t, ['warm-up'], { NODE_COMPILE_CACHE: cache, TMPDIR: temporary }).exited;
  t.equal(warmed.code, 0, `exit 0 (${warmed.stderr})`);
  t.same(readdirSync(temporary), [], 'its scratch store is removed');
  if (!COMPILE_CACHE_WRITABLE) {
    t.match(warmed.stdout, /keeps no compile cache/, 'says that this Node keeps none');
    t.same(filesUnder(cache), [], 'and writes nothing');
    t.comment(`SKIPPED: Node ${process.versions.node} has no compile cache to write or read (Node 22.10 and later have); the cache itself is tested on those`);
    return;
  }
  t.match(warmed.stdout, /the compile cache of a start is in /);
  t.ok(filesUnder(cache).length > 100, `the code of a start is cached (${filesUnder(cache).length} modules)`);

  const server = await startVerdict(t, ['--store', 'embedded', '--data-dir', scratchDir(t)], { env: { NODE_COMPILE_CACHE: cache, NODE_DEBUG_NATIVE: 'COMPILE_CACHE' } });
  t.match(server.output().stderr, /cache for (?:ESM )?file:\S+\/dist\/src\/app\.js was accepted/, 'a start reads the server from the cache instead of compiling it');
});

t.test('a start writes the compile cache once it is ready, not only at an exit a signal never reaches', { skip: COMPILE_CACHE_WRITABLE ? false : `Node ${process.versions.node} keeps no compile cache` }, async (t) => {
  const cache = join(scratchDir(t), 'compile-cache');
  const server = await startVerdict(t, ['--store', 'embedded', '--data-dir', scratchDir(t)], { env: { NODE_COMPILE_CACHE: cache } });
  await t.resolves(waitForFiles(cache), 'files are written while it serves');
  server.process.kill('SIGKILL');
});

async function waitForFiles(directory: string): Promise<void> {
  while (filesUnder(directory).length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
}
