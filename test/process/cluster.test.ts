import t from 'tap';
import { join } from 'node:path';
import { ask, startVerdict, type Answer } from '../helpers/child.js';
import { scratchDir } from '../helpers/server.js';

// `--processes N`: Node's cluster, one port, one store. The test-only VERDICT_TEST_PROCESS_HEADER
// makes every answer name the process that gave it.

/**
 * Asks GET /health on fresh connections (the cluster hands each to its processes in turn) until
 * `enough` holds for the healthy answers seen so far, by process id; fails after a generous bound.
 */
async function healthByProcess(url: string, enough: (answers: Map<string, Answer>) => boolean): Promise<Map<string, Answer>> {
  const answers = new Map<string, Answer>();
  const deadline = Date.now() + 30_000;
  while (!enough(answers)) {
    if (Date.now() > deadline) throw new Error(`gave up; healthy answers by process: ${JSON.stringify([...answers])}`);
    let answer: Answer;
    try {
      // A connection handed to a process as it dies is reset, or never answered.
      answer = await ask(url, 'GET', '/health', undefined, {}, 5000);
    } catch {
      continue;
    }
    const pid = answer.headers['verdict-test-process'];
    if (typeof pid !== 'string') throw new Error(`no process header: ${JSON.stringify(answer.headers)}`);
    if (answer.status === 200) answers.set(pid, answer);
    else await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return answers;
}

t.test('--processes 2: two processes serve one port and stay in step; one that dies is replaced', async (t) => {
  const cwd = scratchDir(t);
  const server = await startVerdict(t, ['--store', 'embedded', '--data-dir', join(cwd, 'data'), '--processes', '2', '--workers', '1'], {
    env: { LOG_LEVEL: 'warn', VERDICT_TEST_PROCESS_HEADER: '1' },
    cwd,
  });
  const first = await healthByProcess(server.url, (answers) => answers.size === 2);
  const pids = [...first.keys()];
  t.notOk(pids.includes(String(server.process.pid)), `two processes answered (${pids.join(', ')}), neither of them the supervisor`);

  const created = await ask(server.url, 'POST', '/admin/policies', { name: 'p', rules: [] });
  t.equal(created.status, 200);
  const inStep = await healthByProcess(server.url, (answers) => pids.every((pid) => answers.get(pid)?.body.revision === 1));
  t.same(pids.map((pid) => inStep.get(pid)!.body), [{ status: 'ok', revision: 1 }, { status: 'ok', revision: 1 }], 'both serve the new revision');

  const [dead, survivor] = pids as [string, string];
  process.kill(Number(dead), 'SIGKILL');
  const after = await healthByProcess(server.url, (answers) => [...answers.keys()].some((pid) => !pids.includes(pid)) && answers.has(survivor));
  const replacement = [...after.keys()].find((pid) => !pids.includes(pid))!;
  t.same(after.get(replacement)!.body, { status: 'ok', revision: 1 }, `process ${replacement} replaced ${dead}, at the store's revision`);
  t.match(server.output().stderr, `process ${dead} ended (SIGKILL); starting another`);

  server.process.kill('SIGTERM');
  t.equal((await server.exited).code, 0, 'SIGTERM stops the supervisor and its processes cleanly');
});
