import t, { type Test } from 'tap';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, runVerdict, type Exit } from '../helpers/child.js';

/**
 * How `verdict start` ends when it cannot start: exit code 2 for bad configuration (fix the flags or
 * variables), 1 for a dependency it cannot reach (retrying later may work), each with one line on
 * stderr that says what to check, and no stack trace.
 */

function scratch(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-startup-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function oneLine(t: Test, exit: Exit): string {
  const lines = exit.stderr.split('\n').filter((line) => line !== '');
  t.equal(lines.length, 1, `one line on stderr: ${JSON.stringify(exit.stderr)}`);
  t.notMatch(exit.stderr, /\n\s+at /, 'no stack trace');
  t.match(lines[0] ?? '', /^verdict: /);
  return lines[0] ?? '';
}

t.test('bad configuration: exit code 2', async (t) => {
  const exit = await runVerdict(t, ['start', '--store', 'embedded', '--port', 'eighty', '--data-dir', join(scratch(t), 'data')]).exited;
  t.equal(exit.code, 2);
  t.match(oneLine(t, exit), /--port must be an integer/);
});

t.test('an unreachable MongoDB: exit code 1, saying it timed out, after how long, and what to check', async (t) => {
  const closedPort = await freePort();
  const uri = `mongodb://verdict:secret-password@127.0.0.1:${closedPort}/?directConnection=true`;
  const exit = await runVerdict(t, ['start', '--port', String(await freePort()), '--mongodb-uri', uri], { LOG_LEVEL: 'warn' }).exited;
  t.equal(exit.code, 1);
  const line = oneLine(t, exit);
  t.match(line, `no server at 127.0.0.1:${closedPort} answered within 10 s`, 'names the host and the time it waited');
  t.match(line, /check that MongoDB runs there/, 'says what to check');
  t.notMatch(line, /secret-password/, 'never shows the credentials in the URI');
});

t.test('--store mongodb-memory without a mongod: exit code 1 and one line, not the library\'s stack traces', async (t) => {
  // No mongod to find (an empty home, download directory and working directory) and none to download (a closed local port).
  const home = scratch(t);
  mkdirSync(join(home, 'binaries'));
  const exit = await runVerdict(t, ['start', '--store', 'mongodb-memory', '--port', String(await freePort()), '--data-dir', join(home, 'data')], {
    HOME: home,
    MONGOMS_DOWNLOAD_DIR: join(home, 'binaries'),
    MONGOMS_DOWNLOAD_URL: `https://127.0.0.1:${await freePort()}/mongodb-linux-x86_64-debian12-8.2.6.tgz`,
    MONGOMS_SYSTEM_BINARY: '',
    LOG_LEVEL: 'warn',
  }, home).exited;
  t.equal(exit.code, 1);
  const line = oneLine(t, exit);
  t.match(line, /^verdict: --store mongodb-memory has no mongod to start: downloading it from 127\.0\.0\.1:\d+ failed \(.*ECONNREFUSED/);
  t.match(line, /set MONGOMS_SYSTEM_BINARY to an installed mongod/, 'says what to do offline');
  t.equal(exit.stdout, '', 'nothing on stdout either');
});
