import t from 'tap';
import { execFile } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { scratchDir } from '../helpers/server.js';

// The Node client's wire types are generated from the server's schemas (scripts/client-wire.mjs):
// the committed clients/node/src/wire.ts must be what the schemas make now.

const run = promisify(execFile);
const GENERATOR = join(process.cwd(), 'scripts/client-wire.mjs');
const WIRE = join(process.cwd(), 'clients/node/src/wire.ts');

/** The generator's --check against `target`: its exit code and what it said. */
const checked = (target: string) =>
  run(process.execPath, [GENERATOR, '--check'], { env: { ...process.env, CLIENT_WIRE_TARGET: target } }).then(
    () => ({ code: 0, said: '' }),
    (error: { code: number; stderr: string }) => ({ code: error.code, said: error.stderr }),
  );

t.test("the client's wire types are those the server's schemas make now; a file that drifted is named", async (t) => {
  t.same(await checked(WIRE), { code: 0, said: '' }, 'clients/node/src/wire.ts is up to date: run npm run client:wire if not');
  const drifted = join(scratchDir(t), 'wire.ts');
  copyFileSync(WIRE, drifted);
  writeFileSync(drifted, readFileSync(drifted, 'utf8').replace('"verdict-revision"', '"verdict-revision-old"'));
  t.match(await checked(drifted), { code: 1, said: /out of date: run npm run client:wire/ });
});

t.test('the client imports nothing of the server: its modules import one another, undici and Node only', async (t) => {
  const sources = ['batcher', 'call-bounds', 'change-follower', 'client', 'decision-cache', 'errors', 'index', 'middleware', 'transport', 'wire'];
  for (const source of sources) {
    const text = readFileSync(join(process.cwd(), `clients/node/src/${source}.ts`), 'utf8');
    const imported = [...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom '([^']+)'/gm)].map((match) => match[1]!);
    t.same(imported.filter((path) => !path.startsWith('./') && path !== 'undici' && !path.startsWith('node:')), [], source);
  }
});
