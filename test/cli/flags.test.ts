import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig, START_OPTIONS } from '../../src/config/config.js';
import { ask, freePort, runVerdict, waitFor } from '../helpers/child.js';

/** The longest line --help may print when stdout is not a terminal. */
const HELP_WIDTH = 120;

t.test('on/off flags: bare switches, --no-…, and true/false values', async (t) => {
  const key = { ADMIN_API_KEY: 'k' };
  const cases: [string[], NodeJS.ProcessEnv, boolean, boolean][] = [
    // args, env, adminAuthRequired, registryEnabled
    [[], {}, false, true],
    [['--admin-authn-required'], key, true, true],
    [['--admin-authn-required', '--no-registry'], key, true, false],
    [['--no-registry', '--admin-authn-required'], key, true, false],
    [['--registry'], { REGISTRY_ENABLED: 'false' }, false, true],
    [['--no-admin-authn-required'], { ADMIN_AUTHN_REQUIRED: 'true' }, false, true],
    [['--admin-authn-required', 'true'], key, true, true],
    [['--admin-authn-required', 'false'], { ADMIN_AUTHN_REQUIRED: 'true' }, false, true],
    [['--admin-authn-required=false', '--registry=false'], {}, false, false],
    [['--registry', 'off'], {}, false, false],
    [['--registry', 'FALSE'], {}, false, false],
    [['--admin-authn-required', '--port', '9000'], key, true, true],
    [[], { ADMIN_AUTHN_REQUIRED: 'true', REGISTRY_ENABLED: 'no', ...key }, true, false],
  ];
  for (const [args, env, adminAuthRequired, registryEnabled] of cases) {
    const config = loadConfig(args, env);
    t.same(
      { adminAuthRequired: config.adminAuthRequired, registryEnabled: config.registryEnabled },
      { adminAuthRequired, registryEnabled },
      `${args.join(' ') || '(no flags)'} ${JSON.stringify(env)}`,
    );
  }
  t.equal(loadConfig(['--admin-authn-required', '--port', '9000'], key).port, 9000, 'the flag after a bare switch is read as a flag');

  const refused: [string[], RegExp][] = [
    [['--no-port'], /no-port/],
    [['--admin-authn-required', 'maybe'], /maybe/],
    [['--registry=maybe'], /--registry must be true or false/],
    [['--no-registry=true'], /no-registry/],
  ];
  for (const [args, names] of refused) {
    try {
      loadConfig(args, {});
      t.fail(`${args.join(' ')} is refused`);
    } catch (error) {
      t.ok(error instanceof ConfigError, `${args.join(' ')} is refused as bad configuration`);
      t.match((error as Error).message, names, `${args.join(' ')}: the message names it`);
    }
  }
});

t.test('a bare switch on the real CLI: --admin-authn-required --no-registry', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'verdict-flags-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = runVerdict(
    t,
    ['start', '--store', 'embedded', '--port', String(port), '--data-dir', dataDir, '--log-level', 'warn', '--admin-authn-required', '--no-registry'],
    { ADMIN_API_KEY: 'flag-test-key', ADMIN_AUTHN_REQUIRED: '', REGISTRY_ENABLED: '' },
  );
  await waitFor(url, '/health', 200, child);
  t.equal((await ask(url, 'GET', '/admin/policies')).status, 401, 'admin routes demand the key');
  t.equal((await ask(url, 'GET', '/admin/policies', undefined, { 'WAY-API-KEY': 'flag-test-key' })).status, 200, 'and accept it');
  const registry = await ask(url, 'GET', '/admin/fetchers/registry/entities', undefined, { 'WAY-API-KEY': 'flag-test-key' });
  t.equal(registry.status, 404, 'the registry is off');
  child.process.kill('SIGTERM');
  t.equal((await child.exited).code, 0);
});

t.test('--help: every option on one row, in columns that never run together', async (t) => {
  const run = runVerdict(t, ['--help']);
  const { code, stdout } = await run.exited;
  t.equal(code, 0);
  const lines = stdout.split('\n');
  for (const line of lines) t.ok(line.length <= HELP_WIDTH, `no line is wider than ${HELP_WIDTH}: ${JSON.stringify(line)}`);

  const first = lines.find((line) => line.startsWith('  --host '))!;
  const variableColumn = first.indexOf('HOST');
  const gap = / {2,}(?=\S)/.exec(first.slice(variableColumn))!;
  const descriptionColumn = variableColumn + gap.index + gap[0].length;
  const continuation = new RegExp(`^ {${descriptionColumn}}\\S`);
  const rows = Object.entries(START_OPTIONS).map(([name, option]) => {
    const at = lines.findIndex((line) => new RegExp(`^  --(\\[no-\\])?${name} +${option.env} +\\S`).test(line));
    t.not(at, -1, `--${name} has a row with ${option.env}`);
    // The entry: its row, then the lines that continue its description.
    let end = at + 1;
    while (end < lines.length && continuation.test(lines[end]!)) end++;
    return { name, option, line: lines[at]!, entry: lines.slice(at, end), at };
  });
  for (const { name, option, line, entry } of rows) {
    t.equal(line.indexOf(` ${option.env} `, 2) + 1, variableColumn, `--${name}: its variable starts in the variable column`);
    t.match(line.slice(variableColumn - 2, variableColumn), /^ {2}$/, `--${name}: two spaces at least before the variable`);
    t.match(line.slice(descriptionColumn - 2, descriptionColumn + 1), /^ {2}\S$/, `--${name}: its description starts in its column`);
    const text = entry.map((part) => part.slice(descriptionColumn)).join(' ');
    t.ok((text.match(/\(default:/g) ?? []).length <= 1, `--${name}: its default is stated once at most`);
    if (option.default !== '' || option.defaultHelp !== undefined) t.match(text, /\(default: [^)]+\)$/, `--${name}: states its default last`);
  }
  t.same(
    rows.map(({ at }) => at),
    rows.map(({ at }) => at).sort((a, b) => a - b),
    'rows appear in the order of the options',
  );
  t.match(lines.find((line) => line.includes('ADMIN_API_KEY  ')), new RegExp(`^ {${variableColumn}}ADMIN_API_KEY +\\S`), 'the key has a row, in the variable column');
});
