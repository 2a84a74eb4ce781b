// npm run test:fast: every test file but the slow kinds (see docs/development.md), each in its own
// plain `node` process, as many at once as there are cores, run from dist/ (build first).
//
// Not through tap's runner: it starts every test process, and every worker thread a test starts,
// with its loaders for TypeScript and mocks, which these built JavaScript files use neither of and
// which about double their CPU time. The files are the same tap files `npm test` runs, with tap's
// timeout from package.json; a file fails when its process exits non-zero (tap's exit code) or its
// TAP output says not ok. A passing run prints the counts; a failing file's output is printed whole.
//
//   npm run test:fast                             the files below
//   npm run test:fast -- dist/test/http/...js     these files only
//   npm run test:fast -- --times                  also each file's time, as it finishes
//
// Test data directories go under /dev/shm when the machine has it (a memory file system: SQLite's
// fsync on every commit costs nothing there; the tests that are about durability are the slow kinds).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { Parser } from 'tap-parser';

/** The slow kinds: a browser, the Dockerfile, the real command and its processes, the hostile and generated suites. */
const SLOW = [
  /^dist\/test\/(e2e|deploy|cli|process|hostile)\//,
  /-property\.test\.js$/,
  // The plan property again, on a real MongoDB it starts.
  /^dist\/test\/engine\/plan-mongodb\.test\.js$/,
  /^dist\/test\/store\/(crash-safety|persistence)\.test\.js$/,
];

const { timeout } = JSON.parse(readFileSync('package.json', 'utf8')).tap;

function fastFiles() {
  return readdirSync('dist/test', { recursive: true })
    .map((path) => join('dist/test', path))
    .filter((path) => path.endsWith('.test.js') && !path.startsWith('dist/test/helpers/') && !SLOW.some((slow) => slow.test(path)))
    .sort();
}

/** Runs one file; resolves with its TAP results, exit code and output. */
function run(file, env) {
  return new Promise((resolve) => {
    const startedAt = performance.now();
    const child = spawn(process.execPath, ['--enable-source-maps', file], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const output = [];
    let results;
    const parser = new Parser((final) => (results = final));
    child.stdout.on('data', (chunk) => {
      output.push(chunk);
      parser.write(chunk);
    });
    child.stderr.on('data', (chunk) => output.push(chunk));
    child.on('close', (code, signal) => {
      parser.end();
      resolve({ file, code, signal, results, output: Buffer.concat(output).toString('utf8'), seconds: (performance.now() - startedAt) / 1000 });
    });
  });
}

const args = process.argv.slice(2);
const times = args.includes('--times');
const named = args.filter((arg) => arg !== '--times');
const files = named.length > 0 ? named : fastFiles();
const scratch = existsSync('/dev/shm') ? mkdtempSync('/dev/shm/verdict-test-fast-') : undefined;
const env = { ...process.env, TAP_TIMEOUT: String(timeout), ...(scratch && { TMPDIR: scratch }) };
const started = performance.now();
const queue = [...files];
const failed = [];
let done = 0;
let pass = 0;

async function worker() {
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    const ran = await run(file, env);
    done++;
    if (ran.code === 0 && ran.results?.ok) pass++;
    else {
      failed.push(ran.file);
      process.stdout.write(`\n# ${ran.file} failed (exit ${ran.signal ?? ran.code})\n${ran.output}\n`);
    }
    if (times) process.stdout.write(`# ${ran.seconds.toFixed(1).padStart(6)} s ${ran.file}\n`);
    else if (process.stdout.isTTY) process.stdout.write(`\r${done}/${files.length} files`);
  }
}

await Promise.all(Array.from({ length: Math.min(availableParallelism(), files.length) }, worker));
if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
if (process.stdout.isTTY) process.stdout.write('\n');
for (const file of failed) process.stdout.write(`not ok ${file}\n`);
process.stdout.write(`# { total: ${files.length}, pass: ${pass}${failed.length > 0 ? `, fail: ${failed.length}` : ''} }\n`);
process.stdout.write(`# time=${Math.round(performance.now() - started)}ms\n`);
process.exitCode = failed.length > 0 ? 1 : 0;
