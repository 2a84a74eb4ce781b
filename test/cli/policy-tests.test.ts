import t, { type Test } from 'tap';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { XMLParser } from 'fast-xml-parser';
import { Parser, type FinalResults } from 'tap-parser';
import YAML from 'yaml';
import { policyTestFileSchema } from '../../src/schemas/policy-test.js';
import { runVerdict } from '../helpers/child.js';
import { startServer } from '../helpers/server.js';

// `verdict test` as users run it: the real CLI in a child process, on files on disk; each output
// format parsed back with a parser of that format.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const EXAMPLE = join(ROOT, 'examples/first-example.test.yaml');

async function verdictTest(t: Test, ...args: string[]) {
  return runVerdict(t, ['test', ...args]).exited;
}

function parseTap(text: string): Promise<FinalResults> {
  return new Promise((resolve) => {
    const parser = new Parser(resolve);
    parser.end(text);
  });
}

/** A directory with a policy file, a test file that fails in two ways, and one that cannot be run. */
function failingFixtures(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-policy-tests-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'policies'));
  writeFileSync(
    join(dir, 'policies/it-desk.yaml'),
    YAML.stringify({
      name: 'IT desk',
      rules: [{ name: 'IT admins', effect: 'allow', principal_conditions: [{ path: 'attributes.department', operator: '==', value: 'it' }], actions: ['administer'] }],
    }),
  );
  writeFileSync(
    join(dir, 'desk.test.yaml'),
    YAML.stringify({
      policies: [{ file: 'policies/it-desk.yaml' }],
      cases: [
        { name: 'IT administers', principal: { attributes: { department: 'it' } }, resource: { attributes: { kind: 'laptop' } }, action: 'administer', allowed: true },
        { name: 'sales <&> "administers"', principal: { attributes: { department: 'sales' } }, resource: { attributes: { kind: 'laptop' } }, action: 'administer', allowed: true },
        { name: 'wrong reason', principal: { attributes: { department: 'it' } }, resource: { attributes: { kind: 'laptop' } }, action: 'administer', allowed: true, reason: 'Rule x allowed the action in policy y' },
      ],
    }),
  );
  writeFileSync(
    join(dir, 'unusable.test.json'),
    JSON.stringify({ policies: [{ name: 'adults', rules: [{ name: 'r', effect: 'allow', principal_conditions: [{ path: 'attributes.age', operator: 'gt', value: '18' }], actions: ['read'] }] }], cases: [{ name: 'c', principal: { attributes: { age: 20 } }, resource: { uri: 'doc' }, allowed: true }] }),
  );
  writeFileSync(join(dir, 'notes.yaml'), 'not: a test file\n');
  return dir;
}

t.test("the shipped example for the README's first example passes, one line per case and a summary", async (t) => {
  const exit = await verdictTest(t, 'examples');
  t.equal(exit.code, 0, exit.stderr);
  t.same(exit.stdout.trimEnd().split('\n'), [
    'ok    examples/first-example.test.yaml: Alice may administer a laptop',
    'ok    examples/first-example.test.yaml: Alice may not read HR records',
    'ok    examples/first-example.test.yaml: someone from HR, named by attributes alone, may',
    'ok    examples/first-example.test.yaml: supplied attributes never override the registry',
    '4 passed, 0 failed',
  ]);
});

t.test("the example's expectations are what a real server answers", async (t) => {
  const example = YAML.parse(readFileSync(EXAMPLE, 'utf8'));
  const server = await startServer();
  t.teardown(server.close);
  for (const policy of example.policies) t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
  for (const entity of example.entities) t.equal((await server.call('POST', '/admin/fetchers/registry/entities', entity)).status, 200);
  for (const { name, principal, resource, action, allowed, reason } of example.cases) {
    const answer = await server.call('POST', '/check', { principal, resource, action });
    const decision = answer.status === 400 ? { allowed: false, reason: answer.body.detail } : answer.body;
    t.same(decision, { allowed, reason }, name);
  }
});

t.test('failures: what was expected, what was decided and why; an unusable file; exit code 1', async (t) => {
  const dir = failingFixtures(t);
  const exit = await verdictTest(t, dir);
  t.equal(exit.code, 1);
  const lines = exit.stdout.trimEnd().split('\n').map((line) => line.replaceAll(`${dir}/`, ''));
  t.same(lines, [
    'ok    desk.test.yaml: IT administers',
    'FAIL  desk.test.yaml: sales <&> "administers": expected allowed, got denied (Action denied by default effect)',
    "        No rule for action 'administer' matched in the policies with rules for it (it-desk); so the default effects decide, and a deny default anywhere denies: policy it-desk is the first with default_effect deny",
    '        rule it-admins of policy it-desk: principal attributes.department == "it" does not hold: found "sales"',
    'FAIL  desk.test.yaml: wrong reason: expected allowed (Rule x allowed the action in policy y), got allowed (Rule it-admins allowed the action in policy it-desk)',
    "        Rule it-admins is the first rule of policy it-desk to match, and it allows: no policy's first matching rule denies",
    '        rule it-admins of policy it-desk: matched',
    "ERROR unusable.test.json: policies.0.rules.0.principal_conditions.0.value: operator 'gt' needs a number value",
    '1 passed, 3 failed',
  ]);
});

t.test('a test file, or a policy file it names, that does not parse: an error naming the file and the place; the other files still run', async (t) => {
  const dir = failingFixtures(t);
  rmSync(join(dir, 'unusable.test.json'));
  writeFileSync(join(dir, 'truncated.test.json'), '{"policies": [{"file": "policies/it-desk.yaml"}], "cases": [');
  writeFileSync(join(dir, 'broken.test.yaml'), 'policies: [\n  {file: policies/it-desk.yaml}\ncases: oops\n');
  writeFileSync(join(dir, 'policies/broken.yaml'), 'name: IT desk\nrules: [\n');
  writeFileSync(join(dir, 'names-broken.test.yaml'), YAML.stringify({ policies: [{ file: 'policies/broken.yaml' }], cases: [{ name: 'c', principal: { uri: 'u' }, resource: { uri: 'r' }, allowed: true }] }));
  const exit = await verdictTest(t, dir);
  t.equal(exit.code, 1);
  const lines = exit.stdout.trimEnd().split('\n').map((line) => line.replaceAll(`${dir}/`, ''));
  t.match(
    lines.filter((line) => line.startsWith('ERROR')),
    [/^ERROR broken\.test\.yaml: .+ at line 3, column 1/, /^ERROR names-broken\.test\.yaml: policies\/broken\.yaml: .+ at line 3, column 1/, /^ERROR truncated\.test\.json: .*JSON/],
    'one error a test file, each naming the test file, then the file that does not parse (a policy file it names, too) and where',
  );
  for (const line of lines.filter((text) => text.startsWith('ERROR'))) t.notMatch(line, /:$/, `ends with what is wrong, not a dangling colon: ${line}`);
  t.equal(lines.at(-1), '1 passed, 5 failed', 'the three cases of the good file ran, and count with the three errors');
});

t.test('a policy file a test file names that a write would refuse: the test file, then the policy file, then each field, set apart', async (t) => {
  const dir = failingFixtures(t);
  rmSync(join(dir, 'unusable.test.json'));
  mkdirSync(join(dir, 'tests'));
  writeFileSync(join(dir, 'policies/misspelt.yaml'), YAML.stringify({ name: 'misspelt', rules: [{ name: 'r', effect: 'allow', actionz: ['read'] }] }));
  writeFileSync(join(dir, 'tests/misspelt.test.yaml'), YAML.stringify({ policies: [{ file: '../policies/misspelt.yaml' }], cases: [{ name: 'c', principal: { uri: 'u' }, resource: { uri: 'r' }, allowed: true }] }));
  const exit = await verdictTest(t, dir);
  const errors = exit.stdout.split('\n').map((line) => line.replaceAll(`${dir}/`, '')).filter((line) => line.startsWith('ERROR'));
  t.same(errors, [
    "ERROR tests/misspelt.test.yaml: policy file ../policies/misspelt.yaml: rules.0.actions: Field required; policy file ../policies/misspelt.yaml: rules.0.actionz: Extra inputs are not permitted",
  ]);
});

t.test('--format tap, parsed back by a TAP parser', async (t) => {
  const dir = failingFixtures(t);
  const exit = await verdictTest(t, dir, '--format', 'tap');
  t.equal(exit.code, 1);
  const results = await parseTap(exit.stdout);
  t.equal(results.count, 4);
  t.equal(results.pass, 1);
  t.equal(results.fail, 3);
  const [sales, reason, unusable] = results.failures;
  t.match(sales!.name, /desk\.test\.yaml: sales <&> "administers"$/);
  t.same(sales!.diag.expected, { allowed: true });
  t.same(sales!.diag.actual, { allowed: false, reason: 'Action denied by default effect' });
  t.match(sales!.diag.why[1], /does not hold: found "sales"/);
  t.same(reason!.diag.expected, { allowed: true, reason: 'Rule x allowed the action in policy y' });
  t.match(unusable!.name, /unusable\.test\.json: could not be run$/);
  t.match(unusable!.diag.message, /operator 'gt' needs a number value/);
  const passing = await parseTap((await verdictTest(t, EXAMPLE, '--format', 'tap')).stdout);
  t.same([passing.ok, passing.count, passing.pass], [true, 4, 4]);
});

t.test('--format junit, parsed back by an XML parser', async (t) => {
  const dir = failingFixtures(t);
  const exit = await verdictTest(t, dir, '--format', 'junit');
  t.equal(exit.code, 1);
  const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', isArray: (name) => ['testsuite', 'testcase'].includes(name) }).parse(exit.stdout);
  const suites = xml.testsuites;
  t.same([suites.tests, suites.failures, suites.errors], ['4', '2', '1']);
  const [desk, unusable] = suites.testsuite;
  t.match(desk.name, /desk\.test\.yaml$/);
  t.same(desk.testcase.map((testCase: { name: string }) => testCase.name), ['IT administers', 'sales <&> "administers"', 'wrong reason']);
  t.equal(desk.testcase[0].failure, undefined);
  t.equal(desk.testcase[1].failure.message, 'expected allowed, got denied (Action denied by default effect)');
  t.match(desk.testcase[1].failure['#text'], /does not hold: found "sales"/);
  t.match(unusable.testcase[0].error.message, /operator 'gt' needs a number value/);
});

t.test('usage errors exit 2; directories yield only *.test.* files', async (t) => {
  const format = await verdictTest(t, EXAMPLE, '--format', 'xml');
  t.equal(format.code, 2);
  t.match(format.stderr, /--format must be one of text, tap, junit, got 'xml'/);
  const empty = mkdtempSync(join(tmpdir(), 'verdict-no-tests-'));
  t.teardown(() => rmSync(empty, { recursive: true, force: true }));
  writeFileSync(join(empty, 'policy.yaml'), 'name: x\nrules: []\n');
  const none = await verdictTest(t, empty);
  t.equal(none.code, 2);
  t.match(none.stderr, /no test files \(\*\.test\.yaml, \*\.test\.yml, \*\.test\.json\) under/);
  const missing = await verdictTest(t, join(empty, 'nowhere'));
  t.equal(missing.code, 2);
  t.match(missing.stderr, /no such file or directory/);
});

t.test('docs/policy-test.schema.json is the schema verdict test validates with, and the example satisfies it', async (t) => {
  const shipped = JSON.parse(readFileSync(join(ROOT, 'docs/policy-test.schema.json'), 'utf8'));
  const { $schema, ...schema } = shipped;
  t.equal($schema, 'http://json-schema.org/draft-07/schema#');
  t.same(schema, JSON.parse(JSON.stringify(policyTestFileSchema)), 'regenerate the file from src/schemas/policy-test.ts when this fails');
  const validate = new Ajv({ strict: false, allowUnionTypes: true }).compile(shipped);
  t.ok(validate(YAML.parse(readFileSync(EXAMPLE, 'utf8'))), JSON.stringify(validate.errors));
  t.notOk(validate({ cases: [{ name: 'no expectation', principal: { uri: 'u' }, resource: { uri: 'r' } }] }), 'a case needs allowed');
});

t.test('a case with action attributes and a context; a relation that fails is shown with its reference and what it resolved to', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-policy-tests-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const owner = { name: 'documents', rules: [{ name: 'owner deletes softly', effect: 'allow', resource_conditions: [{ path: 'attributes.ownerID', operator: '==', value_from: 'principal.attributes.email' }], action_conditions: [{ path: 'attributes.soft', operator: '==', value: true }], context_conditions: [{ path: 'attributes.ip', operator: 'startswith', value: '10.' }], actions: ['delete'] }] };
  const alice = { attributes: { email: 'alice@example.com' } };
  writeFileSync(
    join(dir, 'owner.test.yaml'),
    YAML.stringify({
      policies: [owner],
      cases: [
        { name: 'soft, from the office', principal: alice, resource: { attributes: { ownerID: 'alice@example.com' } }, action: { name: 'delete', attributes: { soft: true } }, context: { ip: '10.0.0.1' }, allowed: true },
        { name: 'flat action attributes', principal: alice, resource: { attributes: { ownerID: 'alice@example.com' } }, action: 'delete', action_attributes: { soft: true }, context: { ip: '10.0.0.1' }, allowed: true },
        { name: 'not hers', principal: alice, resource: { attributes: { ownerID: 'bob@example.com' } }, action: { name: 'delete', attributes: { soft: true } }, context: { ip: '10.0.0.1' }, allowed: true },
      ],
    }),
  );
  const exit = await verdictTest(t, dir);
  t.equal(exit.code, 1);
  const lines = exit.stdout.trimEnd().split('\n').map((line) => line.replaceAll(`${dir}/`, ''));
  t.same(lines, [
    'ok    owner.test.yaml: soft, from the office',
    'ok    owner.test.yaml: flat action attributes',
    'FAIL  owner.test.yaml: not hers: expected allowed, got denied (Action denied by default effect)',
    "        No rule for action 'delete' matched in the policies with rules for it (documents); so the default effects decide, and a deny default anywhere denies: policy documents is the first with default_effect deny",
    '        rule owner-deletes-softly of policy documents: resource attributes.ownerID == principal.attributes.email ("alice@example.com") does not hold: found "bob@example.com"',
    '2 passed, 1 failed',
  ]);
});

t.test("attribute schemas: a policy they contradict is warned of, a case that breaks them fails, in every format; found beside the policy files or given with --schemas", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-policy-tests-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'policies'));
  const schemas = { principal: { attributes: { type: 'object', properties: { level: { type: 'integer' }, clearance: { enum: [1, 2, 3] } }, required: ['level'] } } };
  writeFileSync(join(dir, 'policies/schemas.json'), JSON.stringify(schemas));
  writeFileSync(
    join(dir, 'policies/records.yaml'),
    YAML.stringify({
      name: 'records',
      default_effect: 'allow',
      rules: [
        { name: 'junior staff', effect: 'deny', actions: ['read'], principal_conditions: [{ path: 'attributes.level', operator: 'lt', value: 3 }] },
        { name: 'clearance two', effect: 'deny', actions: ['read'], principal_conditions: [{ path: 'attributes.clearence', operator: '==', value: 2 }] },
      ],
    }),
  );
  const read = (principal: Record<string, unknown>, allowed: boolean) => ({ principal: { attributes: principal }, resource: { attributes: { kind: 'record' } }, action: 'read', allowed });
  mkdirSync(join(dir, 'tests'));
  writeFileSync(
    join(dir, 'tests/records.test.yaml'),
    YAML.stringify({
      policies: [{ file: '../policies/records.yaml' }],
      cases: [
        { name: 'senior reads', ...read({ level: 5, clearance: 1 }, true) },
        { name: 'junior is denied', ...read({ level: 1, clearance: 1 }, false) },
        { name: 'a string level slips past', ...read({ level: '1', clearance: 1 }, true) },
        { name: 'a forgotten level slips past', ...read({ clearance: 1 }, false) },
      ],
    }),
  );
  const policyFile = join(dir, 'policies/records.yaml');
  const warning = `WARN  ${policyFile}: policy 'records': rules.1.principal_conditions.0.path: rule 'clearance-two': principal attribute 'clearence' is not declared by the principal schemas`;
  const expected = [
    'ok    tests/records.test.yaml: senior reads',
    'ok    tests/records.test.yaml: junior is denied',
    'FAIL  tests/records.test.yaml: a string level slips past: decided as expected: allowed (Action allowed by default effect); the check breaks the attribute schemas',
    "        breaks the attribute schemas: principal: attribute 'level' must be integer (type)",
    'FAIL  tests/records.test.yaml: a forgotten level slips past: expected denied, got allowed (Action allowed by default effect); the check breaks the attribute schemas',
    "        breaks the attribute schemas: principal: attribute 'level' is required (required)",
    "        No rule for action 'read' matched in the policies with rules for it (records); so the default effects decide: none of the policies has default_effect deny, and policy records is the first with default_effect allow",
    '        rule junior-staff of policy records: principal attributes.level lt 3 does not hold: missing',
    '        rule clearance-two of policy records: principal attributes.clearence == 2 does not hold: missing',
    warning,
    '2 passed, 2 failed',
  ];
  const found = await runVerdict(t, ['test', 'tests'], {}, dir).exited;
  t.equal(found.code, 1);
  t.same(found.stdout.trimEnd().split('\n'), expected, 'the schemas.json beside the policy files');

  // Given: the same from a file anywhere; none at all: the cases pass as before, no warning.
  const elsewhere = join(dir, 'elsewhere.json');
  writeFileSync(elsewhere, JSON.stringify(schemas));
  rmSync(join(dir, 'policies/schemas.json'));
  const given = await runVerdict(t, ['test', 'tests', '--schemas', elsewhere], {}, dir).exited;
  t.same([given.code, given.stdout.trimEnd().split('\n')], [1, expected], '--schemas');
  const without = await runVerdict(t, ['test', 'tests'], {}, dir).exited;
  t.equal(without.code, 1, 'the forgotten level is still decided against the expectation');
  t.notMatch(without.stdout, /WARN|schemas/);

  const tap = await runVerdict(t, ['test', 'tests', '--schemas', elsewhere, '--format', 'tap'], {}, dir).exited;
  const results = await parseTap(tap.stdout);
  t.same([results.pass, results.fail], [2, 2]);
  t.match(tap.stdout, `# ${warning.replace('WARN  ', 'WARN ')}`);
  t.same(results.failures[0]!.diag.why, ["breaks the attribute schemas: principal: attribute 'level' must be integer (type)"]);
  const junit = await runVerdict(t, ['test', 'tests', '--schemas', elsewhere, '--format', 'junit'], {}, dir).exited;
  const suite = new XMLParser({ ignoreAttributes: false }).parse(junit.stdout).testsuites.testsuite;
  t.equal(suite['@_failures'], '2');
  t.equal(suite['system-out'], warning.replace('WARN  ', 'WARN '));

  const unusable = join(dir, 'unusable.json');
  writeFileSync(unusable, JSON.stringify({ principal: { attributes: { type: 'object', propertees: {} } } }));
  const refused = await runVerdict(t, ['test', 'tests', '--schemas', unusable], {}, dir).exited;
  t.equal(refused.code, 2);
  t.match(refused.stderr, `--schemas ${unusable}: principal.attributes is not a valid JSON Schema: strict mode: unknown keyword: "propertees"`);
});

t.test('a test file may name a policy directory: its files in the order --policies reads them, decided as a server on it decides', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-policy-tests-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'policies'));
  mkdirSync(join(dir, 'tests'));
  // Two allow rules for the same check: the reason names the policy created first, b-readers's file sorting before c-more.
  const readers = (name: string) => ({ name, rules: [{ name: 'readers', effect: 'allow', principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'reader' }], actions: ['read'] }] });
  writeFileSync(join(dir, 'policies/c-more.yaml'), YAML.stringify([readers('c more'), { name: 'z deny', rules: [], default_effect: 'deny' }]));
  writeFileSync(join(dir, 'policies/b-readers.json'), JSON.stringify(readers('b readers')));
  writeFileSync(join(dir, 'policies/.hidden.yaml'), 'not: a policy\n');
  writeFileSync(join(dir, 'policies/notes.txt'), 'not a policy file\n');
  const server = await startServer({ policiesDir: join(dir, 'policies') });
  t.teardown(server.close);
  const check = { principal: { attributes: { role: 'reader' } }, resource: { uri: 'doc:1' }, action: 'read' };
  const decided = (await server.call('POST', '/check', check)).body;
  t.same(decided, { allowed: true, reason: 'Rule readers allowed the action in policy b-readers' }, 'the server on the directory');
  writeFileSync(join(dir, 'tests/readers.test.yaml'), YAML.stringify({ policies: [{ directory: '../policies' }], cases: [{ name: 'a reader reads', ...check, ...decided }] }));
  const passed = await verdictTest(t, join(dir, 'tests'));
  t.equal(passed.code, 0, passed.stdout + passed.stderr);
  t.match(passed.stdout, /1 passed, 0 failed/);

  writeFileSync(join(dir, 'tests/missing.test.yaml'), YAML.stringify({ policies: [{ directory: '../nowhere' }], cases: [{ name: 'c', ...check, allowed: true }] }));
  const failed = await verdictTest(t, join(dir, 'tests'));
  t.match(failed.stdout.replaceAll(`${dir}/`, ''), /^ERROR tests\/missing\.test\.yaml: policy directory \.\.\/nowhere: no such directory$/m);
});
