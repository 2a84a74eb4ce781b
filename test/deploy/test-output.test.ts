import t from 'tap';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runVerdict, tracked } from '../helpers/child.js';

// What `npm test` prints is read by people: no warnings from the tests' own helpers, and no raw
// control characters (which terminals act on) from the inputs a test sends.

const CONTROL_CHARACTER = /[\u0000-\u0008\u000b-\u001f\u007f]/;

t.test('children started at once by a test add one exit listener, not one each (no MaxListenersExceededWarning)', async (t) => {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.name);
  process.on('warning', onWarning);
  t.teardown(() => process.off('warning', onWarning));
  const before = process.listenerCount('exit');
  const children = Array.from({ length: 12 }, () => runVerdict(t, ['version']));
  t.ok(process.listenerCount('exit') <= before + 1, `exit listeners: ${before} before, ${process.listenerCount('exit')} with 12 children running`);
  for (const child of children) t.equal((await child.exited).code, 0);
  await new Promise((resolve) => setImmediate(resolve));
  t.same(warnings, [], 'no warning');
});

t.test("the hostile-input test's output holds no raw control characters", async (t) => {
  const file = fileURLToPath(new URL('../http/errors.test.js', import.meta.url));
  const { code, stdout, stderr } = await tracked(t, spawn(process.execPath, [file], { stdio: ['ignore', 'pipe', 'pipe'] })).exited;
  t.equal(code, 0, stderr);
  const found = `${stdout}\n${stderr}`.split('\n').filter((line) => CONTROL_CHARACTER.test(line));
  t.same(found.map((line) => JSON.stringify(line)), [], 'no line holds a control character');
});
