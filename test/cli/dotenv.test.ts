import t from 'tap';
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ask, runVerdict, startVerdict } from '../helpers/child.js';
import { scratchDir } from '../helpers/server.js';
import { parseDotenv } from '../../src/cli/dotenv/parse.js';
import { loadConfigWithDotenv } from '../../src/cli/dotenv/load.js';

// `.env` in the working directory, read as Eunomia reads it: the real CLI started in a directory
// holding Eunomia's `.env`, asked over HTTP.

const KEY = 'eunomia-dotenv-key-4f1c';

/** The `.env` Eunomia's documentation has users write, with python-dotenv's comments, `export` and quotes. */
const EUNOMIA_DOTENV = [
  '# Eunomia server settings',
  'export ADMIN_AUTHN_REQUIRED=true   # protect /admin',
  `ADMIN_API_KEY="${KEY}"`,
  "ENGINE_SQL_DATABASE_URL='sqlite:///./.db/eunomia_db.sqlite'",
  '',
].join('\n');

function eunomiaDirectory(dotenv = EUNOMIA_DOTENV): string {
  const dir = realpathSync(scratchDir(t));
  writeFileSync(join(dir, '.env'), dotenv);
  return dir;
}

const STORE = ['--store', 'embedded', '--data-dir', 'data'];

t.test("Eunomia's .env protects the admin routes, and the start names the file and the settings it gave, never the key", async (t) => {
  const dir = eunomiaDirectory();
  const verdict = await startVerdict(t, STORE, { cwd: dir });
  t.equal((await ask(verdict.url, 'GET', '/admin/policies')).status, 401, 'no key: 401, as on Eunomia');
  t.equal((await ask(verdict.url, 'GET', '/admin/policies', undefined, { 'way-api-key': KEY })).status, 200, 'the key of the .env: 200');
  const { stdout, stderr } = verdict.output();
  const line = stdout.split('\n').find((text) => text.includes('settings read from'));
  t.ok(line, 'a log line about the file');
  const logged = JSON.parse(line!);
  t.equal(logged.msg, `settings read from ${join(dir, '.env')}: ADMIN_AUTHN_REQUIRED, ADMIN_API_KEY; not settings of Verdict's, ignored: ENGINE_SQL_DATABASE_URL`);
  t.same([logged.envFile, logged.settings, logged.ignored], [join(dir, '.env'), ['ADMIN_AUTHN_REQUIRED', 'ADMIN_API_KEY'], ['ENGINE_SQL_DATABASE_URL']]);
  t.notOk(`${stdout}${stderr}`.includes(KEY), 'the key is never printed');
  t.match(stdout, /"adminAuthRequired":true,"adminAuth":"on: ADMIN_AUTHN_REQUIRED is true"/);
});

t.test('flags and the environment win over the file', async (t) => {
  const dir = eunomiaDirectory();
  const byEnvironment = await startVerdict(t, STORE, { cwd: dir, env: { ADMIN_AUTHN_REQUIRED: 'false' } });
  t.equal((await ask(byEnvironment.url, 'GET', '/admin/policies')).status, 200, 'ADMIN_AUTHN_REQUIRED=false in the environment: open');
  t.match(byEnvironment.output().stdout, 'settings read from ' + join(dir, '.env') + ': ADMIN_API_KEY; set by a flag or the environment instead: ADMIN_AUTHN_REQUIRED');
  byEnvironment.process.kill('SIGTERM');
  await byEnvironment.exited;

  const byFlag = await startVerdict(t, [...STORE, '--no-admin-authn-required'], { cwd: dir });
  t.equal((await ask(byFlag.url, 'GET', '/admin/policies')).status, 200, '--no-admin-authn-required: open');
});

t.test('nothing in the file weakens authentication that a flag or the environment decides', async (t) => {
  const dir = realpathSync(scratchDir(t));
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const keysFile = file('keys', '');
  const turnsOff = file('off.env', 'ADMIN_AUTHN_REQUIRED=false\n');
  const load = (dotenv: string, args: string[], env: NodeJS.ProcessEnv) => loadConfigWithDotenv(['--dotenv', dotenv, ...args], env);

  const byKey = load(turnsOff, [], { ADMIN_API_KEY: KEY });
  t.equal(byKey.config.adminAuthRequired, true, 'ADMIN_API_KEY in the environment: on, whatever the file says');
  t.same(byKey.dotenv?.weakening, ['ADMIN_AUTHN_REQUIRED'], 'the report names the setting not taken');
  t.equal(load(turnsOff, ['--admin-keys-file', keysFile], {}).config.adminAuthRequired, true, '--admin-keys-file: on');
  t.equal(load(turnsOff, [], { ADMIN_AUTHN_REQUIRED: 'true', ADMIN_API_KEY: KEY }).config.adminAuthRequired, true, 'ADMIN_AUTHN_REQUIRED=true in the environment: on');
  t.equal(load(file('keyed.env', `ADMIN_API_KEY=${KEY}\n`), [], { ADMIN_AUTHN_REQUIRED: 'false' }).config.adminAuthRequired, false, 'the environment may turn it off itself');

  // An empty secret in the environment is no secret: the file's is taken.
  const secrets = file('secrets.env', `ADMIN_API_KEY=${KEY}\nAUTHZEN_TOKEN=tok3n\n`);
  const emptied = load(secrets, [], { ADMIN_API_KEY: '', AUTHZEN_TOKEN: ' ' });
  t.equal(emptied.config.adminAuthRequired, true, "an empty ADMIN_API_KEY in the environment does not hide the file's");
  t.equal(emptied.config.adminApiKey, KEY);
  t.equal(emptied.config.authzenToken, 'tok3n', "nor an empty AUTHZEN_TOKEN the file's");
  t.same(emptied.dotenv?.settings, ['ADMIN_API_KEY', 'AUTHZEN_TOKEN']);
});

t.test('a started server whose environment sets the key stays protected beside a .env that says otherwise', async (t) => {
  const dir = eunomiaDirectory('ADMIN_AUTHN_REQUIRED=false\n');
  const verdict = await startVerdict(t, STORE, { cwd: dir, env: { ADMIN_API_KEY: KEY } });
  t.equal((await ask(verdict.url, 'GET', '/admin/policies')).status, 401, 'no key: 401');
  t.equal((await ask(verdict.url, 'GET', '/admin/policies', undefined, { 'way-api-key': KEY })).status, 200, 'the key: 200');
  t.match(verdict.output().stdout, /not taken, as they would weaken the authentication that flags or the environment set: ADMIN_AUTHN_REQUIRED/);
});

t.test('--dotenv points elsewhere, --no-dotenv reads none, a missing --dotenv stops the start', async (t) => {
  const dir = eunomiaDirectory();
  const elsewhere = join(dir, 'config');
  mkdirSync(elsewhere);
  writeFileSync(join(elsewhere, 'verdict.env'), EUNOMIA_DOTENV);
  const none = await startVerdict(t, [...STORE, '--no-dotenv'], { cwd: dir });
  t.equal((await ask(none.url, 'GET', '/admin/policies')).status, 200, '--no-dotenv: the .env is not read');
  t.notMatch(none.output().stdout, 'settings read from');
  none.process.kill('SIGTERM');
  await none.exited;

  const other = scratchDir(t);
  const pointed = await startVerdict(t, [...STORE, '--dotenv', join(elsewhere, 'verdict.env')], { cwd: other });
  t.equal((await ask(pointed.url, 'GET', '/admin/policies')).status, 401, '--dotenv: that file is read');
  pointed.process.kill('SIGTERM');
  await pointed.exited;

  const missing = await runVerdict(t, ['start', ...STORE, '--dotenv', join(other, 'nowhere.env')], {}, other).exited;
  t.equal(missing.code, 2);
  t.match(missing.stderr, `verdict: cannot read --dotenv ${join(other, 'nowhere.env')}: ENOENT`);

  const incomplete = eunomiaDirectory('ADMIN_AUTHN_REQUIRED=true\n');
  const refused = await runVerdict(t, ['start', ...STORE], {}, incomplete).exited;
  t.equal(refused.code, 2, 'a .env requiring a key it does not give: the start stops');
  t.match(refused.stderr, `(${join(incomplete, '.env')} gave ADMIN_AUTHN_REQUIRED)\n`, 'and says the setting came from the file');
});

t.test('python-dotenv syntax', async (t) => {
  const parsed = parseDotenv(
    [
      'PLAIN=value with spaces   # a comment',
      'HASH=a#b',
      "SINGLE='literal ${HOME} \\n # not a comment'",
      'DOUBLE="tab\\there\\nnewline \\"quoted\\""',
      'MULTI="first',
      'second"',
      'export EXPORTED = spaced',
      'FROM_FILE=${PLAIN}!',
      'FROM_ENV=${FROM_ENVIRONMENT}',
      'DEFAULTED=${MISSING:-fallback}',
      'EMPTY=',
      'NO_VALUE',
      'BROKEN="never closed',
      'AFTER=still read',
      'TRAILING="quoted" junk',
      'DUPLICATE=1',
      'DUPLICATE=2',
    ].join('\r\n'),
    { FROM_ENVIRONMENT: 'env wins' },
  );
  t.same(Object.fromEntries(parsed.values), {
    PLAIN: 'value with spaces',
    HASH: 'a#b',
    SINGLE: 'literal ${HOME} \\n # not a comment',
    DOUBLE: 'tab\there\nnewline "quoted"',
    MULTI: 'first\nsecond',
    EXPORTED: 'spaced',
    FROM_FILE: 'value with spaces!',
    FROM_ENV: 'env wins',
    DEFAULTED: 'fallback',
    EMPTY: '',
    AFTER: 'still read',
    DUPLICATE: '2',
  });
  t.same(parsed.unreadable, [13, 15], 'the unterminated quote and the text after a closing quote, by line');
});
