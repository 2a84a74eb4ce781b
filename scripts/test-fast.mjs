// npm run test:fast: every test file but the slow kinds (see docs/development.md), run from dist/
// (build first) by a few long-lived plain `node` processes, one a core and one more, each taking the
// next file as it finishes one (scripts/test-group.mjs). With --all (npm test), the slow kinds too,
// each in a process of its own once the others are done.
//
// Why not a process per file, through tap's runner: tap starts every test process, and every worker
// thread a test starts, with its loaders for TypeScript and mocks, which these built JavaScript files
// use neither of and which about double their CPU time; and a process per file loads tap, Fastify and
// the server's modules again for each file, about a second of CPU time each. The files are the same
// tap files `npm test` runs, each in its own process. A file fails when a test of it is not ok, or when
// its process dies while running it; every file that failed is then run again alone, and its whole
// output printed: a file that passes alone failed only beside others (a test leaves something behind).
//
//   npm run test:fast                             the files below
//   npm test (test-fast.mjs --all)                every file, the slow kinds each alone
//   npm run test:fast -- dist/test/http/...js     these files only (the slow kinds among them each alone)
//   npm run test:fast -- --times                  also each file's time, as it finishes
//
// Test data directories go under /dev/shm when the machine has it (a memory file system: SQLite's
// fsync on every commit costs nothing there; the tests that are about durability are the slow kinds).
// Files start longest first, by their times in the last run (kept in node_modules/.cache/).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { Parser } from 'tap-parser';

/** The slow kinds: a browser, the Dockerfile, the real command and its processes, the hostile and generated suites. */
const SLOW = [
  /^dist\/test\/(e2e|deploy|cli|process|hostile)\//,
  /-property\.test\.js$/,
  // The plan property again, on a real MongoDB it starts.
  /^dist\/test\/engine\/plan-mongodb\.test\.js$/,
  /^dist\/test\/store\/(crash-safety|persistence)\.test\.js$/,
];

const TIMES_FILE = 'node_modules/.cache/verdict-test-fast/times.json';

const { timeout } = JSON.parse(readFileSync('package.json', 'utf8')).tap;

/** Every test file, or (`fastOnly`) all but the slow kinds. */
function testFiles(fastOnly) {
  return readdirSync('dist/test', { recursive: true })
    .map((path) => join('dist/test', path))
    .filter((path) => path.endsWith('.test.js') && !path.startsWith('dist/test/helpers/') && !(fastOnly && SLOW.some((slow) => slow.test(path))))
    .sort();
}

function readTimes() {
  try {
    return JSON.parse(readFileSync(TIMES_FILE, 'utf8'));
  } catch {
    return {};
  }
}

/** Collects a child's output and parses its TAP; `done` resolves with both once it has closed. */
function collect(child) {
  const output = [];
  let results;
  const parser = new Parser((final) => (results = final));
  child.stdout.on('data', (chunk) => {
    output.push(chunk);
    parser.write(chunk);
  });
  child.stderr.on('data', (chunk) => output.push(chunk));
  return new Promise((resolve) =>
    child.on('close', (code, signal) => {
      parser.end();
      resolve({ code, signal, results, output: Buffer.concat(output).toString('utf8') });
    }),
  );
}

/** Runs one file in a process of its own; resolves with its TAP results, exit code and output. */
function runAlone(file, env) {
  return collect(spawn(process.execPath, ['--enable-source-maps', file], { env, stdio: ['ignore', 'pipe', 'pipe'] }));
}

/**
 * Runs files from `queue` in one process until the queue is empty or the process dies; resolves with
 * the files it ran, those that passed (and their times), those that failed, and the process's own result.
 */
async function runProcess(queue, env, onFileEnd) {
  // tap's own timeout is for a whole process: here each file has it, enforced below.
  const child = spawn(process.execPath, ['--enable-source-maps', 'scripts/test-group.mjs'], { env: { ...env, TAP_TIMEOUT: '0' }, stdio: ['pipe', 'pipe', 'pipe', 'pipe'] });
  const closed = collect(child);
  const passed = new Map();
  const failed = [];
  const ran = [];
  let running;
  let timer;
  const sendNext = () => {
    clearTimeout(timer);
    running = queue.shift();
    if (running === undefined) child.stdin.end();
    else {
      ran.push(running);
      child.stdin.write(`${running}\n`);
    }
    // A file past the timeout, or one that leaves a server or a timer behind, would hold the process.
    timer = setTimeout(() => child.kill('SIGKILL'), timeout * 1000);
  };
  createInterface({ input: child.stdio[3] }).on('line', (line) => {
    const ended = JSON.parse(line);
    if (ended.failures.length === 0) passed.set(ended.file, ended.seconds);
    else failed.push(ended);
    onFileEnd(ended);
    if (ended.last) {
      // This process can run no more files: the next one takes the rest of the queue.
      running = undefined;
      child.stdin.end();
      clearTimeout(timer);
      timer = setTimeout(() => child.kill('SIGKILL'), timeout * 1000);
    } else sendNext();
  });
  sendNext();
  const ended = await closed;
  clearTimeout(timer);
  if (running !== undefined) failed.push({ file: running, failures: [`its process ended with ${ended.signal ?? `exit ${ended.code}`} while it ran`] });
  return { passed, failed, ran, ended };
}

const args = process.argv.slice(2);
const times = args.includes('--times');
const all = args.includes('--all');
const named = args.filter((arg) => arg !== '--times' && arg !== '--all');
const lastTimes = readTimes();
const files = (named.length > 0 ? named : testFiles(!all)).sort((a, b) => (lastTimes[b] ?? 0) - (lastTimes[a] ?? 0));
const scratch = existsSync('/dev/shm') ? mkdtempSync('/dev/shm/verdict-test-fast-') : undefined;
const env = { ...process.env, TAP_TIMEOUT: String(timeout), ...(scratch && { TMPDIR: scratch }) };
const started = performance.now();
const isSlow = (file) => SLOW.some((slow) => slow.test(file));
const queue = files.filter((file) => !isSlow(file));
const slowNamed = files.filter(isSlow);
let done = 0;

const onFileEnd = ({ file, seconds }) => {
  done++;
  if (times) process.stdout.write(`# ${seconds.toFixed(1).padStart(6)} s ${file}\n`);
  else if (process.stdout.isTTY) process.stdout.write(`\r${done}/${files.length} files`);
  // A log (CI) gets a line every tenth of the files, so that a long run shows it is moving.
  else if (done % Math.ceil(files.length / 10) === 0) process.stdout.write(`# ${done}/${files.length} files\n`);
};

/** Processes one after another, each going on where the last died, until the queue is empty. */
async function runProcesses() {
  const processes = [];
  while (queue.length > 0) {
    const ran = await runProcess(queue, env, onFileEnd);
    processes.push(ran);
    if (ran.ran.length === 0) break;
  }
  return processes;
}

// One more than the cores: some files spend seconds waiting on timers and child processes, and the
// extra process keeps the cores busy meanwhile.
const groups = (await Promise.all(Array.from({ length: Math.min(availableParallelism() + 1, queue.length) }, runProcesses))).flat();
// The slow kinds (with --all, or when named) each in a process of its own: some set up tap's root
// for themselves (a timeout, a browser opened before every test), which would hold for the files after them.
const alone = [];
await Promise.all(
  Array.from({ length: Math.min(availableParallelism(), slowNamed.length) }, async () => {
    for (let file = slowNamed.shift(); file !== undefined; file = slowNamed.shift()) {
      const startedAt = performance.now();
      const ran = await runAlone(file, env);
      const seconds = (performance.now() - startedAt) / 1000;
      onFileEnd({ file, seconds });
      alone.push({ file, ran, seconds });
    }
  }),
);
if (process.stdout.isTTY && !times) process.stdout.write('\n');

const failed = [];
for (const group of groups) {
  for (const { file, failures } of group.failed) {
    const alone = await runAlone(file, env);
    if (alone.code === 0 && alone.results?.ok) {
      const before = group.ran.slice(0, group.ran.indexOf(file));
      process.stdout.write(`\n# ${file} failed after ${before.join(', ') || 'no other file'} in one process, and passes alone: a test leaves something behind\n${failures.map((name) => `not ok ${name}\n`).join('')}`);
    } else process.stdout.write(`\n# ${file} failed (exit ${alone.signal ?? alone.code})\n${alone.output}\n`);
    failed.push(file);
  }
  if (group.failed.length === 0 && (group.ended.code !== 0 || !group.ended.results?.ok)) {
    process.stdout.write(`\n# a test process ended with ${group.ended.signal ?? `exit ${group.ended.code}`} after its files passed\n${group.ended.output}\n`);
    failed.push('(a test process)');
  }
}
for (const { file, ran } of alone) {
  if (ran.code === 0 && ran.results?.ok) continue;
  process.stdout.write(`\n# ${file} failed (exit ${ran.signal ?? ran.code})\n${ran.output}\n`);
  failed.push(file);
}
for (const file of queue) {
  process.stdout.write(`\n# ${file} was not run: its test processes died before they took a file\n`);
  failed.push(file);
}
if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });

const ranTimes = Object.fromEntries([
  ...groups.flatMap((group) => [...group.passed]),
  ...alone.filter(({ ran }) => ran.code === 0 && ran.results?.ok).map(({ file, seconds }) => [file, seconds]),
]);
mkdirSync(dirname(TIMES_FILE), { recursive: true });
writeFileSync(TIMES_FILE, JSON.stringify({ ...lastTimes, ...ranTimes }));

for (const file of failed) process.stdout.write(`not ok ${file}\n`);
const pass = Object.keys(ranTimes).length;
process.stdout.write(`# { total: ${files.length}, pass: ${pass}${failed.length > 0 ? `, fail: ${failed.length}` : ''} }\n`);
process.stdout.write(`# time=${Math.round(performance.now() - started)}ms\n`);
process.exitCode = failed.length > 0 || pass !== files.length ? 1 : 0;
