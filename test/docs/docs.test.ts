import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_CONFIG, START_OPTIONS } from '../../src/config/config.js';
import { OPERATORS, type Operator } from '../../src/schemas/policy.js';
import { CANONICAL_OPERATOR } from '../../src/engine/operators/index.js';
import { codeBlocks, codeSpans, curlSteps, readDocument, replay, section, tableAfter } from '../helpers/markdown.js';
import { scratchDir, startServer } from '../helpers/server.js';
import { runVerdict } from '../helpers/child.js';

/**
 * docs/evaluation.md and docs/configuration.md checked against the server: the operator table's
 * examples are decided by a real server exactly as the table says, every operator the server accepts
 * is in the table, the slug examples are what the server stores, the worked example is replayed byte
 * for byte, and the configuration table has one row for every flag with its variable and default.
 */

const EVALUATION = readDocument('docs/evaluation.md');
const CONFIGURATION = readDocument('docs/configuration.md');

interface OperatorExample {
  operator: string;
  path: string;
  /** Undefined where the table gives none (`exists`, `not_exists`). */
  value: unknown;
  holdsFor: unknown[];
  failsFor: unknown[];
  /** Whether the condition holds when the attribute is left out: the table says "left out" where it does. */
  holdsWhenMissing: boolean;
  /** Whether the table says "left out" among the values the condition does not hold for. */
  failsWhenMissing: boolean;
}

const LEFT_OUT = /left out/;

function operatorExamples(): OperatorExample[] {
  return tableAfter(EVALUATION, '### Operators').flatMap(([operators, , path, value, holds, fails]) =>
    codeSpans(operators!).map((operator) => {
      const [valueText] = codeSpans(value!);
      return {
        operator,
        path: codeSpans(path!)[0]!,
        value: valueText === undefined ? undefined : JSON.parse(valueText),
        holdsFor: codeSpans(holds!).map((text) => JSON.parse(text)),
        failsFor: codeSpans(fails!).map((text) => JSON.parse(text)),
        holdsWhenMissing: LEFT_OUT.test(holds!),
        failsWhenMissing: LEFT_OUT.test(fails!),
      };
    }),
  );
}

t.test('every operator the server accepts is documented once, with examples either way', async (t) => {
  const examples = operatorExamples();
  t.strictSame(examples.map((example) => example.operator).sort(), [...OPERATORS].sort(), 'the table spells exactly the accepted operators');
  for (const example of examples) {
    t.ok(
      (example.holdsFor.length > 0 || example.holdsWhenMissing) && (example.failsFor.length > 0 || example.failsWhenMissing),
      `${example.operator}: an example that holds and one that does not`,
    );
    t.notOk(example.holdsWhenMissing && example.failsWhenMissing, `${example.operator}: left out on one side only`);
  }
});

t.test('each row of the operator table names one operator and all its spellings', async (t) => {
  const rows = tableAfter(EVALUATION, '### Operators').map(([operators]) => codeSpans(operators!));
  const spellings = (operator: Operator) => OPERATORS.filter((other) => CANONICAL_OPERATOR[other] === CANONICAL_OPERATOR[operator]);
  for (const row of rows) t.same([...row].sort(), spellings(row[0] as Operator).sort(), `${row.join(' ')}: the spellings that share a definition`);
});

t.test("the operator table's examples are decided as the table says", async (t) => {
  const examples = operatorExamples();
  const server = await startServer();
  t.teardown(server.close);
  // One rule per spelling, each under an action of its own, so that no two rules meet in one check.
  const action = (index: number) => `operator-${index}`;
  const created = await server.call('POST', '/admin/policies', {
    name: 'operators',
    rules: examples.map((example, index) => ({
      name: `rule-${index}`,
      effect: 'allow',
      principal_conditions: [{ path: example.path, operator: example.operator, value: example.value }],
      actions: [action(index)],
    })),
  });
  t.equal(created.status, 200, 'every example condition is accepted');

  const checks: { label: string; allowed: boolean; request: unknown }[] = [];
  examples.forEach((example, index) => {
    const key = example.path.replace(/^attributes\./, '');
    const check = (attributes: Record<string, unknown>) => ({
      principal: { attributes },
      resource: { attributes: { kind: 'document' } },
      action: action(index),
    });
    for (const value of example.holdsFor) {
      checks.push({ label: `${key} ${example.operator} ${JSON.stringify(example.value)} holds for ${JSON.stringify(value)}`, allowed: true, request: check({ [key]: value }) });
    }
    for (const value of example.failsFor) {
      checks.push({ label: `${key} ${example.operator} ${JSON.stringify(example.value)} fails for ${JSON.stringify(value)}`, allowed: false, request: check({ [key]: value }) });
    }
    const missing = example.holdsWhenMissing ? 'holds when the attribute is left out' : 'a missing attribute satisfies no condition';
    checks.push({ label: `${key} ${example.operator}: ${missing}`, allowed: example.holdsWhenMissing, request: check({ unrelated: example.holdsFor[0] ?? example.failsFor[0] }) });
  });
  const decided = await server.call('POST', '/check/bulk', checks.map((check) => check.request));
  t.equal(decided.status, 200);
  checks.forEach((check, index) => t.equal(decided.body[index]?.allowed, check.allowed, check.label));
});

t.test('the slug examples are the names the server stores', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const rows = tableAfter(EVALUATION, '### Names');
  t.ok(rows.length >= 3, 'a few examples');
  for (const [sent, stored] of rows) {
    const name = codeSpans(sent!)[0]!;
    const created = await server.call('POST', '/admin/policies', {
      name,
      rules: [{ name, effect: 'allow', actions: ['read'] }],
    });
    t.equal(created.body.name, codeSpans(stored!)[0], `policy '${name}' is stored as its slug`);
    t.equal(created.body.rules[0].name, codeSpans(stored!)[0], `rule '${name}' is stored as its slug`);
  }
});

t.test("docs/evaluation.md's example, replayed exactly", async (t) => {
  const steps = curlSteps(section(EVALUATION, 'An example'));
  t.equal(steps.length, 5, 'two policies and three checks');
  t.ok(steps.every((step) => step.exact !== undefined), 'each with its answer');
  const server = await startServer();
  t.teardown(server.close);
  await replay(t, server, steps);
});

t.test("docs/evaluation.md's relations, action attributes and context: replayed exactly, validated, explained, planned and tested from a file", async (t) => {
  const text = section(EVALUATION, 'Relations, action attributes and context');
  t.match(text, /Eunomia's SDKs cannot\s+parse a policy that uses `value_from`, `action_conditions` or `context_conditions`/, 'says plainly what Eunomia clients cannot read');
  const steps = curlSteps(text);
  const server = await startServer();
  t.teardown(server.close);
  const answers = await replay(t, server, steps);
  const sent = steps.map((step) => ({ path: step.curl.url.replace(/^http:\/\/[^/]+/, ''), body: JSON.parse(step.curl.body!) }));
  const policies = sent.filter((step) => step.path === '/admin/policies').map((step) => step.body);
  const checks = sent.flatMap((step, index) => (step.path === '/check' ? [{ body: step.body, answer: answers[index] as { allowed: boolean; reason: string } }] : []));
  t.same(policies.map((policy) => policy.name), ['Documents', 'Expenses', 'Deletion', 'Payroll'], 'the owner, department-manager, soft-delete and office-network examples');
  t.ok(checks.some((check) => check.answer.allowed) && checks.some((check) => !check.answer.allowed), 'checks both allowed and denied');

  const validated = await server.call('POST', '/admin/policies/validate', policies);
  t.equal(validated.status, 200, 'every example policy validates');
  t.equal(validated.body.valid, true);
  for (const { body, answer } of checks) {
    const explained = await server.call('POST', '/check?explain=true', body);
    t.equal(explained.body.allowed, answer.allowed, 'explained as decided');
    t.equal(explained.body.explain.decided_by.kind, answer.allowed ? 'rule' : 'default', 'the explanation names what decided');
    const planned = await server.call('POST', '/plan', { principal: body.principal ?? { attributes: body.principal_attributes }, action: body.action, action_attributes: body.action_attributes, context: body.context });
    t.equal(planned.status, 200, 'each check can be planned');
    t.ok(planned.body.mongodb !== undefined, 'with an exact MongoDB filter');
  }

  // The same checks as a `verdict test` file, run by the real CLI.
  const dir = scratchDir(t);
  const cases = checks.map(({ body, answer }, index) => ({ name: `check ${index + 1}`, ...body, allowed: answer.allowed, reason: answer.reason }));
  const testFile = cases.map((testCase) => {
    // Test files take the nested form of the entities.
    const { principal_attributes, resource_attributes, ...rest } = testCase as Record<string, unknown>;
    return { ...rest, principal: rest.principal ?? { attributes: principal_attributes }, resource: rest.resource ?? { attributes: resource_attributes } };
  });
  writeFileSync(join(dir, 'relations.test.json'), JSON.stringify({ policies, cases: testFile }));
  const exit = await runVerdict(t, ['test', dir]).exited;
  t.equal(exit.code, 0, exit.stdout + exit.stderr);
  t.match(exit.stdout, new RegExp(`${checks.length} passed, 0 failed`));
});

t.test("docs/evaluation.md's path pattern: replayed exactly, validated, explained, and planned without a MongoDB filter, saying why", async (t) => {
  const steps = curlSteps(section(EVALUATION, 'Policies and rules'));
  t.equal(steps.length, 4, 'a policy and three checks');
  const server = await startServer();
  t.teardown(server.close);
  const answers = (await replay(t, server, steps)) as { allowed: boolean }[];
  const policy = JSON.parse(steps[0]!.curl.body!);
  const pattern: string = policy.rules[0].resource_conditions[0].value;
  t.match(JSON.parse(steps[2]!.curl.body!).resource.attributes.path, '/../', 'the second check climbs out with ..');
  t.equal(answers[2]!.allowed, false, 'and is denied');
  t.same((await server.call('POST', '/admin/policies/validate', policy)).body, { valid: true, warnings: [] }, 'it validates without a warning');
  const denied = await server.call('POST', '/check?explain=true', JSON.parse(steps[3]!.curl.body!));
  const failed = denied.body.explain.policies[0].rules[0].failed;
  t.same([failed.operator, failed.expected, failed.actual], ['matches', pattern, '/archive/projects/q3-plan/reports/summary.pdf'], 'the explanation names the pattern and the path it did not match');
  const planned = await server.call('POST', '/plan', { principal: { attributes: { role: 'analyst' } }, action: 'read' });
  t.same(planned.body.condition, { path: 'attributes.path', operator: 'matches', value: pattern }, 'the plan states the condition');
  t.equal(planned.body.mongodb, undefined, 'and gives no MongoDB filter');
  t.match(planned.body.reason, /no MongoDB filter: condition attributes\.path matches .* has no exact MongoDB filter: MongoDB's regular expressions \(PCRE\)/);
});

/**
 * The test file a document shows, run by the real CLI: it passes as written (4 cases), and each
 * `[written, moved, failing]` change of it fails the case `failing` names.
 */
async function passesUntilMoved(t: Test, file: string, moves: readonly (readonly [string, string, RegExp])[]): Promise<void> {
  const dir = scratchDir(t);
  writeFileSync(join(dir, 'shown.test.yaml'), file);
  const passed = await runVerdict(t, ['test', dir]).exited;
  t.equal(passed.code, 0, passed.stdout + passed.stderr);
  t.match(passed.stdout, /4 passed, 0 failed/);
  for (const [written, moved, failing] of moves) {
    writeFileSync(join(dir, 'shown.test.yaml'), file.replace(written, moved));
    const failed = await runVerdict(t, ['test', dir]).exited;
    t.equal(failed.code, 1, `${moved}: a case decided otherwise fails`);
    t.match(failed.stdout, failing);
  }
}

t.test("docs/evaluation.md's business hours and expiry: the test file shown passes as written, and fails for a wrong time", async (t) => {
  const [file] = codeBlocks(section(EVALUATION, 'Policies and rules')).filter((block) => block.lang === 'yaml');
  t.ok(file !== undefined, 'the section shows a test file');
  // A minute before 18:00, the case that expects a denial is allowed: the file fails, naming it.
  await passesUntilMoved(t, file!.text, [['2026-11-27T17:00:00Z', '2026-11-27T16:59:00Z', /Friday at 18:00 in Berlin/]]);
});

t.test("docs/evaluation.md's fresh sign-in and last day before expiry: the test file shown passes as written, and fails a moment past each span", async (t) => {
  const [file] = codeBlocks(section(EVALUATION, 'Policies and rules')).filter((block) => block.lang === 'yaml' && block.text.includes('operator: within'));
  t.ok(file !== undefined, 'the section shows a test file of within');
  await passesUntilMoved(t, file!.text, [
    ['signed_in: "2026-11-27T09:10:00+01:00"', 'signed_in: "2026-11-27T09:15:00+01:00"', /signed in twenty minutes ago/],
    ['expires: "2026-11-28T00:00:00Z"', 'expires: "2026-11-28T12:00:00.001Z"', /twelve hours before expiry/],
  ]);
});

/** `checks` (as /check takes them) with the `answers` the server gave, as the cases of a `verdict test` file of `policies`: it passes, run by the real CLI. */
async function passesAsTestFile(t: Test, policies: unknown[], checks: Record<string, unknown>[], answers: { allowed: boolean; reason: string }[]): Promise<void> {
  const dir = scratchDir(t);
  const cases = checks.map((check, index) => ({ name: `check ${index + 1}`, ...check, ...answers[index]! }));
  writeFileSync(join(dir, 'example.test.json'), JSON.stringify({ policies, cases }));
  const exit = await runVerdict(t, ['test', dir]).exited;
  t.equal(exit.code, 0, exit.stdout + exit.stderr);
  t.match(exit.stdout, new RegExp(`${cases.length} passed, 0 failed`));
}

t.test("docs/evaluation.md's groups: admins or the owner replayed exactly, validated, explained, planned as shown with a filter, and tested from a file", async (t) => {
  const text = section(EVALUATION, 'Groups of conditions');
  t.match(text, /Eunomia's SDKs cannot parse a policy that holds a group/, 'says plainly what Eunomia clients cannot read');
  const steps = curlSteps(text);
  t.equal(steps.length, 4, 'a policy and three checks');
  const server = await startServer();
  t.teardown(server.close);
  const answers = (await replay(t, server, steps)) as { allowed: boolean; reason: string }[];
  const policy = JSON.parse(steps[0]!.curl.body!);
  const checks = steps.slice(1).map((step) => JSON.parse(step.curl.body!));
  t.same(
    (await server.call('POST', '/admin/policies/validate', policy)).body.warnings.map((warning: { type: string }) => warning.type),
    ['escaped_by_omission'],
    'it validates, warned only that leaving out the status escapes the deny rule',
  );
  const editor = await server.call('POST', '/check?explain=true', checks[0]);
  t.same(editor.body.explain.policies[0].rules[1].alternatives_held, [{ side: 'principal', alternative: 0 }], 'the explanation names the alternative that held');
  const planned = await server.call('POST', '/plan', { principal: checks[0].principal, action: 'edit' });
  const shownPlan = codeSpans(text.slice(text.indexOf('What the editor may edit'))).find((span) => span.startsWith('{"not"'))!;
  t.same(planned.body.condition, JSON.parse(shownPlan), 'the plan the section shows');
  t.ok(planned.body.mongodb !== undefined, 'with an exact MongoDB filter');
  await passesAsTestFile(t, [policy], checks, answers.slice(1));
});

t.test("docs/evaluation.md's scoped policies: replayed exactly, explained by the policy that speaks for the resource, planned by type", async (t) => {
  const text = section(EVALUATION, 'Policies scoped to resource types');
  t.match(text, /Eunomia's SDKs cannot parse a policy that has `resource_types`/, 'says plainly what Eunomia clients cannot read');
  const steps = curlSteps(text);
  t.equal(steps.length, 5, 'two policies and three checks');
  const server = await startServer();
  t.teardown(server.close);
  await replay(t, server, steps);
  const [document, folder] = [2, 3].map((index) => JSON.parse(steps[index]!.curl.body!));
  t.same((await server.call('POST', '/check?explain=true', document)).body.explain.decided_by.policy, 'document-editing', "a document's denial is the document policy's default");
  t.same((await server.call('POST', '/check?explain=true', folder)).body.explain.decided_by.policy, 'folders');
  const planned = await server.call('POST', '/plan', { principal: document.principal, action: 'edit' });
  t.same(planned.body.condition, { path: 'uri', operator: 'startswith', value: 'folder:' }, 'a reader edits folders, whatever else they hold');
  t.ok(planned.body.mongodb !== undefined, 'with an exact MongoDB filter');
  const validated = await server.call('POST', '/admin/policies/validate', steps.slice(0, 2).map((step) => JSON.parse(step.curl.body!)));
  t.same(validated.body, { valid: true, warnings: [] }, 'both validate without a warning');
});

t.test("docs/evaluation.md's derived roles: replayed exactly, explained by the sets' names, planned, validated, tested from a file", async (t) => {
  const text = section(EVALUATION, 'Condition sets');
  t.match(text, /Eunomia's SDKs cannot parse a policy that has `condition_sets`/, 'says plainly what Eunomia clients cannot read');
  const allSteps = curlSteps(text);
  t.equal(allSteps.length, 6, 'two examples, each a policy and two checks');
  const server = await startServer();
  t.teardown(server.close);
  const allAnswers = (await replay(t, server, allSteps)) as { allowed: boolean; reason: string }[];
  const [steps, combined] = [allSteps.slice(0, 3), allSteps.slice(3)];
  const answers = allAnswers.slice(0, 3);
  const combining = JSON.parse(combined[0]!.curl.body!);
  t.same((await server.call('POST', '/admin/policies/validate', combining)).body, { valid: true, warnings: [] }, 'roles that combine validate without a warning');
  const outsider = await server.call('POST', '/check?explain=true', JSON.parse(combined[2]!.curl.body!));
  t.same(
    outsider.body.explain.policies.find((policy: { name: string }) => policy.name === 'expense-reads').rules[0].failed.alternatives.map((failed: { set: string }) => failed.set),
    ['manager', 'requester'],
    'the explanation names the set of each alternative that failed',
  );
  const policy = JSON.parse(steps[0]!.curl.body!);
  const [active, inactive] = steps.slice(1).map((step) => JSON.parse(step.curl.body!));
  t.same((await server.call('POST', '/admin/policies/validate', policy)).body, { valid: true, warnings: [] }, 'it validates without a warning');
  const explained = await server.call('POST', '/check?explain=true', inactive);
  t.same(explained.body.explain.policies[0].rules[0].failed, { side: 'principal', set: 'manager', failed: { path: 'attributes.active', operator: '==', expected: true, actual: false } }, "the explanation names the set and what in it did not hold");
  const planned = await server.call('POST', '/plan', { principal: active.principal, action: 'approve' });
  t.same(planned.body.condition, { path: 'attributes.amount', operator: 'lte', value: 1000 }, 'the set decided on the known principal');
  t.ok(planned.body.mongodb !== undefined, 'with an exact MongoDB filter');
  await passesAsTestFile(t, [policy], [active, inactive], answers.slice(1));
});

t.test('the configuration table has one row per flag, with its variable and default', async (t) => {
  const rows = tableAfter(CONFIGURATION, '# Configuration');
  const flagRows = rows.filter(([flag]) => flag !== '');
  t.strictSame(
    flagRows.map(([flag]) => flag).sort(),
    Object.keys(START_OPTIONS).map((name) => `\`--${name}\``).sort(),
    'every flag of start, once, and nothing else',
  );
  for (const [name, option] of Object.entries(START_OPTIONS)) {
    const row = flagRows.find(([flag]) => flag === `\`--${name}\``);
    if (row === undefined) continue;
    t.equal(row[1], `\`${option.env}\``, `--${name} is read from ${option.env}`);
    // The worker count defaults to the machine's cores, which the table says in words.
    if (option.default !== '' && name !== 'workers') t.equal(row[2], `\`${option.default}\``, `--${name} defaults to ${option.default}`);
  }
  const variableOnly = rows.filter(([flag]) => flag === '').map(([, variable]) => variable);
  t.strictSame(variableOnly, ['`ADMIN_API_KEY`'], 'the admin key is a variable only (never a flag, so never in a process list)');
  t.equal(DEFAULT_CONFIG.adminApiKey, '', 'and has no default');
});
