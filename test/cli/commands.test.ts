import t, { type Test } from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, DEFAULT_CONFIG, loadConfig } from '../../src/config/config.js';
import { runVerdict, type Exit } from '../helpers/child.js';
import { scratchDir } from '../helpers/server.js';

// The CLI's commands and its configuration; servers it starts are in cli-start.test.ts.

const PACKAGE_JSON = new URL('../../../package.json', import.meta.url);

// Some twenty child processes, each a whole Node start: minutes on a busy machine, past tap's 120 s per file.
t.setTimeout(600_000);

/** Runs the CLI to completion in a clean environment plus `env`. */
const runCli = (t: Test, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<Exit> => runVerdict(t, args, env, cwd).exited;

t.test('version prints the package.json version', async (t) => {
  const cwd = scratchDir(t);
  const { version } = JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string };
  const commands = ['version', '--version'];
  const runs = await Promise.all(commands.map((command) => runCli(t, [command], {}, cwd)));
  for (const [index, command] of commands.entries()) {
    const run = runs[index]!;
    t.equal(run.code, 0, `${command}: exit 0`);
    t.equal(run.stdout, `${version}\n`, `${command}: prints ${version}`);
    t.equal(run.stderr, '');
  }
});

t.test('--help lists the flags of start and their variables', async (t) => {
  const cwd = scratchDir(t);
  const commands = ['--help', 'help', '-h'];
  const runs = await Promise.all(commands.map((command) => runCli(t, [command], {}, cwd)));
  for (const [index, command] of commands.entries()) {
    const run = runs[index]!;
    t.equal(run.code, 0, `${command}: exit 0`);
    t.equal(run.stderr, '');
    for (const word of [
      'start',
      'version',
      '--host',
      '--port',
      '--data-dir',
      '--[no-]admin-authn-required',
      '--bulk-check-max-requests',
      'HOST',
      'PORT',
      'DATA_DIR',
      'ADMIN_AUTHN_REQUIRED',
      'ADMIN_API_KEY',
      'BULK_CHECK_MAX_REQUESTS',
      '127.0.0.1',
      '8421',
      './data',
      '1000',
    ]) {
      t.ok(run.stdout.includes(word), `${command}: help mentions ${word}`);
    }
    // each flag and its variable on one line
    for (const [flag, variable] of [
      ['--host', 'HOST'],
      ['--port', 'PORT'],
      ['--data-dir', 'DATA_DIR'],
      ['--[no-]admin-authn-required', 'ADMIN_AUTHN_REQUIRED'],
      ['--bulk-check-max-requests', 'BULK_CHECK_MAX_REQUESTS'],
    ]) {
      const line = run.stdout.split('\n').find((l) => l.trim().startsWith(`${flag} `));
      t.ok(line !== undefined && new RegExp(`\\b${variable}\\b`).test(line), `${flag} is listed with ${variable}`);
    }
  }
});

t.test('every command answers --help (and -h) with its own usage, exit 0', async (t) => {
  const commands: [args: string[], usage: RegExp, flags: boolean][] = [
    [['start', '--help', '--store', 'embedded'], /^ {2}verdict start$/m, true],
    [['healthcheck', '-h'], /^ {2}verdict healthcheck$/m, true],
    [['key', '--help'], /^ {2}verdict key$/m, false],
    [['import', '--help'], /^ {2}verdict import entities <file\.jsonl>\n[^]*^ {2}verdict import eunomia \[path\]$/m, true],
    [['import', 'eunomia', '--help'], /^ {2}verdict import eunomia \[path\]$/m, true],
    [['test', '--help'], /^ {2}verdict test \[paths\.\.\.\] \[--format text\|tap\|junit\] \[--schemas <file>\]$/m, false],
    [['policies', 'export', '--help'], /^ {2}verdict policies export <dir>/m, false],
    [['policies', '--help'], /^ {2}verdict policies export <dir>/m, false],
    [['impact', '--help'], /^ {2}verdict impact \[<policy file>\.\.\.\]/m, false],
  ];
  await Promise.all(
    commands.map(async ([args, usage, flags]) => {
      const { code, stdout, stderr } = await runVerdict(t, args).exited;
      t.equal(code, 0, `${args.join(' ')}: exit 0 (${stderr})`);
      t.match(stdout, /^Usage:\n/, `${args.join(' ')}: a usage`);
      t.match(stdout, usage, `${args.join(' ')}: its own`);
      t.equal(stdout.includes('  --host '), flags, `${args.join(' ')}: the flags table ${flags ? 'too' : 'only where the command takes those flags'}`);
    }),
  );
});

t.test('bad configuration stops with exit code 2 and one line on stderr', async (t) => {
  const cwd = scratchDir(t);
  const dataDir = join(cwd, 'data-should-not-be-created');
  const cases: [string, string[], Record<string, string>, RegExp][] = [
    ['--port abc', ['--port', 'abc'], {}, /port/i],
    ['--port 70000', ['--port', '70000'], {}, /port/i],
    ['--port -1', ['--port=-1'], {}, /port/i],
    ['--port 1.5', ['--port', '1.5'], {}, /port/i],
    ['PORT=abc', [], { PORT: 'abc' }, /PORT/],
    ['unknown flag', ['--no-such-flag', 'x'], {}, /no-such-flag/],
    ['stray positional', ['extra'], {}, /extra/],
    ['auth required, empty key', [], { ADMIN_AUTHN_REQUIRED: 'true', ADMIN_API_KEY: '' }, /ADMIN_API_KEY/],
    ['auth required, no key', [], { ADMIN_AUTHN_REQUIRED: 'true' }, /ADMIN_API_KEY/],
    ['auth required by flag, no key', ['--admin-authn-required', 'true'], {}, /ADMIN_API_KEY/],
    ['auth required, blank key', [], { ADMIN_AUTHN_REQUIRED: 'true', ADMIN_API_KEY: '   ' }, /ADMIN_API_KEY/],
    ['ADMIN_AUTHN_REQUIRED=maybe', [], { ADMIN_AUTHN_REQUIRED: 'maybe' }, /ADMIN_AUTHN_REQUIRED/],
    ['BULK_CHECK_MAX_REQUESTS=0', [], { BULK_CHECK_MAX_REQUESTS: '0' }, /BULK_CHECK_MAX_REQUESTS/],
    ['BULK_CHECK_MAX_REQUESTS=abc', [], { BULK_CHECK_MAX_REQUESTS: 'abc' }, /BULK_CHECK_MAX_REQUESTS/],
    ['--bulk-check-max-requests -5', ['--bulk-check-max-requests=-5'], {}, /bulk-check-max-requests/],
    ['empty --data-dir', ['--data-dir', ''], {}, /data-dir/],
  ];
  const runs = await Promise.all(cases.map(([, args, env]) => runCli(t, ['start', '--store', 'embedded', '--data-dir', dataDir, ...args], env, cwd)));
  for (const [index, [label, , , names]] of cases.entries()) {
    const run = runs[index]!;
    t.equal(run.code, 2, `${label}: exit code 2`);
    const lines = run.stderr.split('\n').filter((line) => line !== '');
    t.equal(lines.length, 1, `${label}: one line on stderr (${JSON.stringify(run.stderr)})`);
    t.ok(run.stderr.endsWith('\n'), `${label}: the line ends`);
    t.match(lines[0] ?? '', /^verdict: /, `${label}: starts with "verdict: "`);
    t.match(lines[0] ?? '', names, `${label}: names what to fix`);
    t.notMatch(run.stderr, /\n\s+at /, `${label}: no stack trace`);
    t.equal(run.stdout, '', `${label}: nothing on stdout`);
  }
  t.notOk(existsSync(dataDir), 'no data directory was created by a refused start');
  t.notOk(existsSync(join(cwd, 'data')), 'nor ./data');

  const unknownCommand = await runCli(t, ['serve'], {}, cwd);
  t.equal(unknownCommand.code, 2, 'unknown command: exit code 2');
  t.match(unknownCommand.stderr, /^verdict: .*serve.*\n$/);
});

t.test('loadConfig', async (t) => {
  t.strictSame(loadConfig([], {}), DEFAULT_CONFIG, 'defaults');
  t.equal(DEFAULT_CONFIG.host, '127.0.0.1');
  t.equal(DEFAULT_CONFIG.port, 8421);
  t.equal(DEFAULT_CONFIG.dataDir, './data');
  t.equal(DEFAULT_CONFIG.bulkCheckMaxRequests, 1000);
  t.equal(DEFAULT_CONFIG.registryEnabled, true);
  t.equal(DEFAULT_CONFIG.adminAuthRequired, false);

  t.strictSame(
    loadConfig([], { HOST: '0.0.0.0', PORT: '9000', DATA_DIR: '/var/lib/verdict' }),
    { ...DEFAULT_CONFIG, host: '0.0.0.0', port: 9000, dataDir: '/var/lib/verdict' },
    'HOST, PORT, DATA_DIR',
  );
  t.strictSame(
    loadConfig(['--host', '::1', '--port', '9001', '--data-dir', 'here'], { HOST: '0.0.0.0', PORT: '1', DATA_DIR: 'there' }),
    { ...DEFAULT_CONFIG, host: '::1', port: 9001, dataDir: 'here' },
    'flags win over variables',
  );
  t.equal(loadConfig(['--port=0'], {}).port, 0, 'port 0 allowed');
  t.equal(loadConfig(['--port', '65535'], {}).port, 65535);
  t.equal(loadConfig([], { BULK_CHECK_MAX_REQUESTS: '5' }).bulkCheckMaxRequests, 5);
  t.equal(loadConfig(['--bulk-check-max-requests', '7'], { BULK_CHECK_MAX_REQUESTS: '5' }).bulkCheckMaxRequests, 7);
  t.equal(loadConfig(['--bulk-check-max-requests', '7'], { BULK_CHECK_MAX_REQUESTS: '0' }).bulkCheckMaxRequests, 7, 'a flag hides a bad variable');

  const auth = loadConfig([], { ADMIN_AUTHN_REQUIRED: 'true', ADMIN_API_KEY: 's3cret' });
  t.equal(auth.adminAuthRequired, true);
  t.equal(auth.adminApiKey, 's3cret');
  t.equal(loadConfig([], { ADMIN_AUTHN_REQUIRED: 'false', ADMIN_API_KEY: '' }).adminAuthRequired, false);
  t.equal(loadConfig([], { ADMIN_AUTHN_REQUIRED: 'TRUE', ADMIN_API_KEY: 'k' }).adminAuthRequired, true, 'case-insensitive true');
  t.equal(loadConfig(['--admin-authn-required', 'false'], { ADMIN_AUTHN_REQUIRED: 'true' }).adminAuthRequired, false, 'flag wins, no key needed');
  t.equal(loadConfig(['--registry', 'false'], {}).registryEnabled, false, 'registry can be switched off');
  t.equal(loadConfig([], { REGISTRY_ENABLED: 'false' }).registryEnabled, false);

  const refused: [string, string[], NodeJS.ProcessEnv, RegExp][] = [
    ['--port abc', ['--port', 'abc'], {}, /port/],
    ['--port 70000', ['--port', '70000'], {}, /port/],
    ['--port 65536', ['--port', '65536'], {}, /port/],
    ['--port -1', ['--port=-1'], {}, /port/],
    ['--port 80.5', ['--port', '80.5'], {}, /port/],
    ['--port empty', ['--port', ''], {}, /port/],
    ['PORT=abc', [], { PORT: 'abc' }, /PORT/],
    ['PORT=70000', [], { PORT: '70000' }, /PORT/],
    ['unknown flag', ['--nope', '1'], {}, /nope/],
    ['flag without value', ['--port'], {}, /port/],
    ['positional', ['stray'], {}, /stray/],
    ['auth, empty key', [], { ADMIN_AUTHN_REQUIRED: 'true', ADMIN_API_KEY: '' }, /ADMIN_API_KEY/],
    ['auth, no key', [], { ADMIN_AUTHN_REQUIRED: 'true' }, /ADMIN_API_KEY/],
    ['auth by flag, no key', ['--admin-authn-required', 'true'], {}, /ADMIN_API_KEY/],
    ['auth value invalid', [], { ADMIN_AUTHN_REQUIRED: 'sometimes' }, /ADMIN_AUTHN_REQUIRED/],
    ['BULK_CHECK_MAX_REQUESTS=0', [], { BULK_CHECK_MAX_REQUESTS: '0' }, /BULK_CHECK_MAX_REQUESTS/],
    ['BULK_CHECK_MAX_REQUESTS=-1', [], { BULK_CHECK_MAX_REQUESTS: '-1' }, /BULK_CHECK_MAX_REQUESTS/],
    ['BULK_CHECK_MAX_REQUESTS=x', [], { BULK_CHECK_MAX_REQUESTS: 'x' }, /BULK_CHECK_MAX_REQUESTS/],
    ['empty HOST', [], { HOST: '' }, /host|HOST/],
    ['empty DATA_DIR', [], { DATA_DIR: '' }, /data-dir|DATA_DIR/],
    ['bad log level', ['--log-level', 'loud'], {}, /log-level/],
    ['a plan size beyond a third of the answer size', ['--max-plan-size', '400000'], {}, /--max-plan-size \(400000\) must be at most a third of --max-answer-size \(1048576\)/],
    ['MAX_ANSWER_SIZE below three plans', [], { MAX_ANSWER_SIZE: '262144' }, /--max-plan-size \(262144\) must be at most a third of --max-answer-size \(262144\)/],
    ['MAX_PLAN_SIZE=100', [], { MAX_PLAN_SIZE: '100' }, /MAX_PLAN_SIZE must be an integer from 1024/],
  ];
  for (const [label, args, env, names] of refused) {
    try {
      loadConfig(args, env);
      t.fail(`${label} → should throw`);
    } catch (error) {
      t.ok(error instanceof ConfigError, `${label} → ConfigError`);
      t.match((error as Error).message, names, `${label}: the message names it`);
      t.notMatch((error as Error).message, /\n/, `${label}: one line`);
    }
  }
  // the key is never part of an error message
  try {
    loadConfig(['--port', 'x'], { ADMIN_AUTHN_REQUIRED: 'true', ADMIN_API_KEY: 'topsecret' });
    t.fail('should throw');
  } catch (error) {
    t.notMatch((error as Error).message, /topsecret/);
  }
});

t.test('the mongodb store needs a connection string', async (t) => {
  const run = await runCli(t, ['start', '--store', 'mongodb'], {}, scratchDir(t));
  t.equal(run.code, 2);
  t.equal(run.stderr.trim(), 'verdict: the mongodb store needs a connection string: set --mongodb-uri or MONGODB_URI');
});
