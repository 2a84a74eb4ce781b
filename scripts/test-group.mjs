// One process of `npm run test:fast` (see test-fast.mjs): runs the tap test files named on its standard
// input, a line each, one after another, and tells the parent on file descriptor 3 when each has ended
// and which of its tests failed. (Not over an IPC channel: tap takes a process that has one for a
// child of its own runner.)
import t from 'tap';
import { createWriteStream } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

const rootTest = t.test;

/** Imports `file` with the root's `test` watched, waits for the tests it starts, and names those that failed. */
async function runFile(file) {
  const started = [];
  t.test = (...args) => {
    const running = rootTest.apply(t, args);
    started.push({ name: typeof args[0] === 'string' ? args[0] : '(unnamed)', running });
    return running;
  };
  try {
    await import(pathToFileURL(resolve(file)).href);
  } finally {
    t.test = rootTest;
  }
  const results = await Promise.all(started.map(({ running }) => running));
  return started.filter((_, index) => results[index] !== null && !results[index].ok).map(({ name }) => name);
}

const toParent = createWriteStream('', { fd: 3 });
for await (const file of createInterface({ input: process.stdin })) {
  const startedAt = performance.now();
  const failures = await runFile(file).catch((error) => [`${file} could not be run: ${error?.stack ?? error}`]);
  toParent.write(`${JSON.stringify({ file, failures, seconds: (performance.now() - startedAt) / 1000 })}\n`);
}
toParent.end();
