import t from 'tap';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { codeBlocks, curlSteps, readDocument, replay, section } from '../helpers/markdown.js';
import { scratchDir, startServer } from '../helpers/server.js';

// The Python client (clients/python), on the Python Debian packages for 3.11 (.ci/run installs them
// where they are missing): its pytest suite against real Verdicts it starts from this checkout's
// build, mypy --strict over it, its wire types held to the server's schemas, its wheel, and the
// README's example run as written. Where those packages are missing, it skips, saying which.

const run = promisify(execFile);
const CHECKOUT = process.cwd();
const CLIENT = join(CHECKOUT, 'clients/python');
const PYTHON = '/usr/bin/python3';
const NEEDED = ['httpx', 'pytest', 'anyio', 'fastapi', 'starlette', 'mypy'];

t.setTimeout(600_000);

async function missingModules(): Promise<string[]> {
  const missing: string[] = [];
  for (const module of NEEDED) await run(PYTHON, ['-c', `import ${module}`]).catch(() => missing.push(module));
  return missing;
}

/** A command's exit code and output, whatever it is. */
const outcome = (command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) =>
  run(command, args, { ...options, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 }).then(
    ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, output: error.stdout + error.stderr }),
  );

const missing = await missingModules().catch(() => ['python3']);
const skipped = missing.length === 0 ? undefined : `${PYTHON} lacks ${missing.join(', ')} (apt-get install python3-httpx python3-pytest python3-anyio python3-fastapi python3-starlette mypy)`;
if (skipped !== undefined) console.log(`# the Python client SKIPPED: ${skipped}`);

t.test('the Python client: its tests against real servers, mypy, its wire types, its wheel and the README example', { skip: skipped }, async (t) => {
  const tests = await outcome(PYTHON, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'tests'], { cwd: CLIENT });
  t.equal(tests.code, 0, tests.output.split('\n').slice(-40).join('\n'));
  t.match(tests.output, /\b\d+ passed\b/);
  t.notMatch(tests.output, /\b(failed|error)\b/);

  const types = await outcome(PYTHON, ['-m', 'mypy', '--strict', 'verdict_client', 'tests'], { cwd: CLIENT });
  t.equal(types.code, 0, types.output);

  const generator = join(CHECKOUT, 'scripts/client-wire-python.mjs');
  const wire = join(CLIENT, 'verdict_client/wire.py');
  t.same(await outcome(process.execPath, [generator, '--check']), { code: 0, output: '' }, 'wire.py is what the schemas make: run node scripts/client-wire-python.mjs if not');
  const drifted = join(scratchDir(t), 'wire.py');
  copyFileSync(wire, drifted);
  writeFileSync(drifted, readFileSync(drifted, 'utf8').replace('"verdict-revision"', '"verdict-revision-old"'));
  t.match(await outcome(process.execPath, [generator, '--check'], { env: { ...process.env, CLIENT_WIRE_TARGET: drifted } }), { code: 1, output: /out of date/ });

  const wheels = scratchDir(t);
  const built = await outcome(PYTHON, ['-m', 'build', '--no-isolation', '--skip-dependency-check', '--wheel', '--outdir', wheels, CLIENT]);
  if (built.code === 0) {
    const [wheel] = readdirSync(wheels).filter((file) => file.endsWith('.whl'));
    const listed = (await run(PYTHON, ['-m', 'zipfile', '-l', join(wheels, wheel!)])).stdout;
    const files = [...listed.matchAll(/^(\S+)\s/gm)].map((match) => match[1]!).filter((file) => file !== 'File');
    t.same(files.filter((file) => !file.startsWith('verdict_client/') && !file.startsWith('verdict_client-')), [], `the wheel holds the package alone: ${files.length} files`);
  } else t.comment(`the wheel is not built here (python3-build or hatchling missing): ${built.output.split('\n').slice(-3).join(' ')}`);

  const server = await startServer();
  t.teardown(server.close);
  await replay(t, server, curlSteps(section(readDocument('README.md'), 'First example')));
  const [example] = codeBlocks(section(readDocument('README.md'), 'From a Python app')).filter((block) => block.lang === 'python');
  t.ok(example !== undefined && example.text.trim().split('\n').length <= 11, "README's Python example, about ten lines");
  const script = join(scratchDir(t), 'example.py');
  writeFileSync(script, example!.text.replaceAll('http://127.0.0.1:8421', server.url));
  const printed = await outcome(PYTHON, [script], { env: { ...process.env, PYTHONPATH: CLIENT } });
  t.equal(printed.output.trim(), /# (.*)$/m.exec(example!.text)![1], 'it prints what its comment says');
});
