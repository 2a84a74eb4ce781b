// One process of `npm run test:fast` (see test-fast.mjs): runs the tap test files named on its standard
// input, a line each, one after another, and tells the parent on file descriptor 3 when each has ended
// and which of its tests failed. (Not over an IPC channel: tap takes a process that has one for a
// child of its own runner.)
import t from 'tap';
import { createWriteStream } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

const [rootTest, rootPlan] = [t.test, t.plan];

/**
 * Imports `file` with the root's `test` watched, waits for the tests it starts, and names those that
 * failed. A file that skips itself with `t.plan(0, why)` says so in a comment: planned on the root, it
 * would end it for the files after it.
 */
async function runFile(file) {
  const started = [];
  t.test = (...args) => {
    const running = rootTest.apply(t, args);
    started.push({ name: typeof args[0] === 'string' ? args[0] : '(unnamed)', running });
    return running;
  };
  t.plan = (count, why) => (count === 0 ? t.comment(`${file}: ${why ?? 'skipped'}`) : rootPlan.call(t, count, why));
  try {
    await import(pathToFileURL(resolve(file)).href);
  } finally {
    t.test = rootTest;
    t.plan = rootPlan;
  }
  const results = await Promise.all(started.map(({ running }) => running));
  return started.filter((_, index) => results[index] !== null && !results[index].ok).map(({ name }) => name);
}

/** The kinds of resource keeping the event loop alive (servers, sockets, timers...), counted. */
function activeResources() {
  const counts = new Map();
  for (const kind of process.getActiveResourcesInfo()) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return counts;
}

/**
 * What a file left running that was not running before it: a server, a socket, a timer, a child
 * process. It would run on beside the files after it in this process, and make one of them fail that
 * passes alone (the failure then points at the wrong file). A few turns of the event loop first, for
 * what is closing as the file ends.
 */
async function leftBehind(before) {
  let left = [];
  for (let turn = 0; turn < 20; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    left = [...activeResources()].filter(([kind, count]) => count > (before.get(kind) ?? 0)).map(([kind, count]) => `${count - (before.get(kind) ?? 0)} ${kind}`);
    if (left.length === 0) return [];
  }
  return left;
}

const toParent = createWriteStream('', { fd: 3 });
// tap ends its root when the process would otherwise exit: held open while the parent may send a file.
const keepAlive = setInterval(() => {}, 1 << 30);
for await (const file of createInterface({ input: process.stdin })) {
  const startedAt = performance.now();
  const before = activeResources();
  const failures = await runFile(file).catch((error) => [`${file} could not be run: ${error?.stack ?? error}`]);
  const left = await leftBehind(before);
  if (left.length > 0) failures.push(`${file} left running: ${left.join(', ')}`);
  // A file may still end tap's root (`t.end()`, a plan of its own): no test of a later file would run here.
  const last = t.ended;
  toParent.write(`${JSON.stringify({ file, failures, seconds: (performance.now() - startedAt) / 1000, last })}\n`);
  if (last) break;
}
clearInterval(keepAlive);
toParent.end();
