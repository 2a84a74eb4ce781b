import t from 'tap';
import type { Browser, Page } from 'playwright-core';
import { startServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import { chromiumMissing, field, heading, launchChromium, openDashboard, openPage, screenshot } from '../helpers/browser.js';

/**
 * The dashboard in a real headless Chromium against a real Verdict: README's first example done
 * from the dashboard alone (policy by form and by the simple form, an entity, allowed and denied
 * checks), then editing and deleting, and the admin key prompt.
 */

const missing = chromiumMissing();
if (missing !== undefined) {
  t.plan(0, `dashboard end-to-end tests skipped: ${missing}`);
} else {
  await run();
}


async function conditionFields(page: Page, side: 'Principal conditions' | 'Resource conditions', path: string, value: string) {
  const group = page.getByRole('group', { name: 'Rule 1' }).getByRole('group', { name: side });
  // A new rule has no conditions to fill: each is added.
  if ((await group.getByLabel('Path', { exact: true }).count()) === 0) await group.getByRole('button', { name: /^Add .* condition$/ }).click();
  await group.getByLabel('Path', { exact: true }).fill(path);
  await group.getByLabel('Operator', { exact: true }).selectOption('==');
  await group.getByLabel('Value (JSON)', { exact: true }).fill(value);
}

async function runCheck(page: Page, check: { principalUri?: string; principalAttributes?: string; resourceAttributes: string; action: string }) {
  await field(page, 'Principal URI').fill(check.principalUri ?? '');
  await field(page, 'Principal attributes (JSON object)').fill(check.principalAttributes ?? '');
  await field(page, 'Resource attributes (JSON object)').fill(check.resourceAttributes);
  await field(page, 'Action').fill(check.action);
  await page.getByRole('button', { name: 'Run check' }).click();
}

async function run() {
  let chromium: Browser;
  let server: TestServer;
  t.before(async () => {
    chromium = await launchChromium();
  });
  t.teardown(async () => {
    await chromium.close();
  });

  t.test('a new operator reproduces the first example from the dashboard alone', async (t) => {
    server = await startServer();
    t.teardown(() => server.close());
    const { page, context, foreignRequests, cspViolations } = await openDashboard(chromium, server.url);
    t.teardown(() => context.close());

    await t.test('create a policy through the form', async (t) => {
      await heading(page, 'Policies').waitFor();
      await page.getByRole('link', { name: 'New policy' }).click();
      await heading(page, 'New policy').waitFor();
      await field(page, 'Policy name').fill('IT desk');
      await field(page, 'Description').fill('IT staff administer laptops');
      await field(page, 'Rule name').fill('IT admins');
      await field(page, 'Rule description').fill('Only the IT department');
      await field(page, 'Actions').fill('administer');
      await conditionFields(page, 'Principal conditions', 'attributes.department', '"it"');
      await conditionFields(page, 'Resource conditions', 'attributes.kind', '"laptop"');
      await page.getByRole('button', { name: 'Create policy' }).click();
      await heading(page, 'Policy it-desk').waitFor();
      await screenshot(page, 'policy-editor');
      const stored = await server.call('GET', '/admin/policies/it-desk');
      t.strictSame(stored.body.rules, [
        {
          name: 'it-admins',
          description: 'Only the IT department',
          effect: 'allow',
          principal_conditions: [{ path: 'attributes.department', operator: '==', value: 'it' }],
          resource_conditions: [{ path: 'attributes.kind', operator: '==', value: 'laptop' }],
          actions: ['administer'],
        },
      ]);
    });

    await t.test('server validation messages appear by the field they concern', async (t) => {
      await page.getByRole('link', { name: 'Policies', exact: true }).click();
      await page.getByRole('link', { name: 'New policy' }).click();
      await field(page, 'Policy name').fill('broken');
      await field(page, 'Rule name').fill('no actions');
      await conditionFields(page, 'Principal conditions', 'attributes.department', 'it');
      await conditionFields(page, 'Resource conditions', 'attributes.kind', '"laptop"');
      await page.getByRole('button', { name: 'Create policy' }).click();
      const value = page.getByRole('group', { name: 'Principal conditions' }).getByLabel('Value (JSON)', { exact: true });
      t.equal(await value.getAttribute('aria-invalid'), 'true', 'a value that is not JSON is marked');
      await page.getByText('Not valid JSON: put text in double quotes').waitFor();

      await value.fill('"it"');
      const checks = page.getByRole('region', { name: 'Checks as you type' });
      await checks.getByText('Rule 1, actions: must NOT have fewer than 1 items').waitFor();
      await field(page, 'Actions').fill('read');
      await checks.getByText('No problems and no warnings.').waitFor();
      const principal = page.getByRole('group', { name: 'Principal conditions' });
      await principal.getByLabel('Operator', { exact: true }).selectOption('in');
      await value.fill('[]');
      await checks.getByText('Rule 1, principal conditions: this rule can never match: attributes.department in [] holds for no value').waitFor();
      await screenshot(page, 'policy-warnings');
      await principal.getByLabel('Operator', { exact: true }).selectOption('==');
      await value.fill('"it"');
      await field(page, 'Actions').fill('');
      await page.getByRole('button', { name: 'Create policy' }).click();
      await page.locator('.field-error').getByText('must NOT have fewer than 1 items').waitFor();
      t.equal(await field(page, 'Actions').getAttribute('aria-invalid'), 'true', 'the empty action list is marked');
      t.equal(await value.getAttribute('aria-invalid'), 'false');
      await screenshot(page, 'policy-validation');
      t.equal((await server.call('GET', '/admin/policies/broken')).status, 404, 'nothing was stored');
    });

    await t.test('create the HR policy with the simple form, then find it by search', async (t) => {
      await page.getByRole('link', { name: 'Policies', exact: true }).click();
      await page.getByRole('link', { name: 'Simple policy' }).click();
      await field(page, 'Policy name').fill('hr-records');
      await field(page, 'Principal attributes (JSON object)').fill('{"department": "hr"}');
      await field(page, 'Resource attributes (JSON object)').fill('{"kind": "hr-record"}');
      await field(page, 'Action').fill('read');
      await page.getByRole('button', { name: 'Create simple policy' }).click();
      await heading(page, 'Policy hr-records').waitFor();

      await page.getByRole('link', { name: 'Policies', exact: true }).click();
      await page.getByRole('link', { name: 'hr-records' }).waitFor();
      t.equal(await page.getByRole('row').count(), 3, 'a header and two policies');
      await field(page, 'Search policies').fill('laptops');
      await page.getByText('1 of 2 shown.').waitFor();
      t.equal(await page.getByRole('link', { name: 'it-desk' }).count(), 1);
      t.equal(await page.getByRole('link', { name: 'hr-records' }).count(), 0);
      await screenshot(page, 'policies');
    });

    await t.test('register an entity', async (t) => {
      await page.getByRole('link', { name: 'Registry' }).click();
      await page.getByRole('link', { name: 'Register entity' }).click();
      await field(page, 'URI').fill('user:alice');
      await field(page, 'Type').selectOption('principal');
      await field(page, 'Attributes (JSON object)').fill('{"department": "it"}');
      await page.getByRole('button', { name: 'Register entity' }).click();
      await heading(page, 'Entity user:alice').waitFor();
      t.same((await server.call('GET', '/admin/fetchers/registry/entities/user%3Aalice')).body.attributes.map((a: { key: string; value: unknown }) => [a.key, a.value]), [['department', 'it']]);

      await page.getByRole('link', { name: 'Registry', exact: true }).first().click();
      await page.getByText('Showing 1–1 of 1 entities').waitFor();
      await field(page, 'Find by uri').fill('user:bob');
      await page.getByRole('button', { name: 'Find' }).click();
      await page.getByText('No entity has the uri user:bob.').waitFor();
      await field(page, 'Find by uri').fill('user:alice');
      await page.getByRole('button', { name: 'Find' }).click();
      await heading(page, 'Entity user:alice').waitFor();
      await page.getByRole('link', { name: 'Registry', exact: true }).first().click();
      await page.getByText('Showing 1–1 of 1 entities').waitFor();
      await screenshot(page, 'registry');
    });

    await t.test('allowed and denied checks in the playground, and a bulk as a table', async (t) => {
      await page.getByRole('link', { name: 'Playground' }).click();
      await runCheck(page, { principalUri: 'user:alice', resourceAttributes: '{"kind": "laptop"}', action: 'administer' });
      await page.getByText('Rule it-admins allowed the action in policy it-desk').waitFor();
      t.equal(await page.locator('.decision .badge').textContent(), 'Allowed');
      const trace = page.getByRole('region', { name: 'Why' });
      t.match(await trace.getByRole('row').nth(1).textContent(), /it-desk.*it-admins \(decided\).*allow.*matched/, 'the trace names the deciding rule');
      t.match(await trace.textContent(), /Principal, as decided on.*user:alice \{"department":"it"\}/, 'the registered attributes decided on');

      await runCheck(page, { principalUri: 'user:alice', resourceAttributes: '{"kind": "hr-record"}', action: 'read' });
      await page.getByText('Action denied by default effect').waitFor();
      t.equal(await page.locator('.decision .badge').textContent(), 'Denied');
      await page.getByText("No rule for action 'read' matched in the policies with rules for it (hr-records); so the default effects decide, and a deny default anywhere denies: policy it-desk is the first with default_effect deny (it has no rule for 'read').").waitFor();
      t.match(
        await page.getByRole('region', { name: 'Why' }).getByRole('row').nth(1).textContent(),
        /hr-records.*principal attributes.department == "hr" does not hold: it is "it"/,
        'the first condition that failed, with the value found',
      );
      await screenshot(page, 'playground-trace');

      await runCheck(page, { principalAttributes: '{"department": "hr"}', resourceAttributes: '{"kind": "hr-record"}', action: 'read' });
      await page.getByText('Rule hr-records allowed the action in policy hr-records').waitFor();

      await runCheck(page, { principalUri: 'user:alice', principalAttributes: '{"department": "hr"}', resourceAttributes: '{"kind": "hr-record"}', action: 'read' });
      await page.getByRole('alert').getByText("For entity 'user:alice', attribute 'department' has more than one value").waitFor();

      await page.getByRole('button', { name: 'Run bulk' }).click();
      await page.getByRole('table').getByText('Rule it-admins allowed the action in policy it-desk').waitFor();
      const rows = page.getByRole('table').getByRole('row');
      t.equal(await rows.count(), 3, 'a header and one row per check');
      t.match(await rows.nth(2).textContent(), /Allowed.*Rule hr-records allowed the action in policy hr-records/);
      await screenshot(page, 'playground');
    });

    await t.test('which resources: the plan as a readable expression, with its MongoDB filter', async (t) => {
      await page.getByLabel('Which resources may a principal act on?').check();
      await field(page, 'Principal URI').fill('user:alice');
      await field(page, 'Action').fill('administer');
      await page.getByRole('button', { name: 'Show which resources' }).click();
      await page.locator('.plan .expression').getByText('attributes.kind == "laptop"', { exact: true }).waitFor();
      t.equal(await page.locator('.plan .badge').textContent(), 'The resources where');
      t.match(await page.locator('.plan pre').textContent(), /"attributes\.kind": \{\s*"\$eq": "laptop"/);
      await field(page, 'Known resource attributes (JSON object)').fill('{"kind": "phone"}');
      await page.getByRole('button', { name: 'Show which resources' }).click();
      await page.locator('.plan .badge').getByText('No resource').waitFor();
      await field(page, 'Known resource attributes (JSON object)').fill('{"kind": "laptop"}');
      await page.getByRole('button', { name: 'Show which resources' }).click();
      await page.locator('.plan .badge').getByText('Every resource').waitFor();
      t.equal(await page.locator('.plan .reason').textContent(), 'Rule it-admins allowed the action in policy it-desk');
      await field(page, 'Known resource attributes (JSON object)').fill('');
      await page.getByRole('button', { name: 'Show which resources' }).click();
      await page.locator('.plan .expression').waitFor();
      await screenshot(page, 'playground-plan');
      await page.getByLabel('May a principal act on this resource?').check();
    });

    await t.test('edit an entity and a policy', async (t) => {
      await page.goto(`${server.url}/dashboard/#/entity/user%3Aalice`);
      await field(page, 'Edit attributes (JSON object)').fill('{"level": 3}');
      await page.getByRole('button', { name: 'Save attributes' }).click();
      await page.getByText('Attributes merged.').waitFor();
      const merged = await server.call('GET', '/admin/fetchers/registry/entities/user%3Aalice');
      t.same(Object.fromEntries(merged.body.attributes.map((a: { key: string; value: unknown }) => [a.key, a.value])), { department: 'it', level: 3 });

      await field(page, 'Edit attributes (JSON object)').fill('{"department": "hr"}');
      await page.getByLabel('Replace: these become all the attributes').check();
      await page.getByRole('button', { name: 'Save attributes' }).click();
      await page.getByText('Attributes replaced.').waitFor();
      const replaced = await server.call('GET', '/admin/fetchers/registry/entities/user%3Aalice');
      t.same(replaced.body.attributes.map((a: { key: string }) => a.key), ['department']);

      await page.goto(`${server.url}/dashboard/#/policy/it-desk`);
      await heading(page, 'Policy it-desk').waitFor();
      await field(page, 'Actions').fill('administer, reboot');
      await page.getByRole('button', { name: 'Save policy' }).click();
      await page.getByText('Saved policy it-desk.').waitFor();
      t.same((await server.call('GET', '/admin/policies/it-desk')).body.rules[0].actions, ['administer', 'reboot']);

      await page.getByRole('button', { name: 'JSON', exact: true }).click();
      const json = JSON.parse(await field(page, 'Policy JSON').inputValue());
      t.equal(json.default_effect, 'deny', 'the JSON view shows the policy');
      await field(page, 'Policy JSON').fill(JSON.stringify({ ...json, default_effect: 'allow' }));
      await page.getByRole('button', { name: 'Save policy' }).click();
      await page.getByText('Saved policy it-desk.').waitFor();
      t.equal((await server.call('GET', '/admin/policies/it-desk')).body.default_effect, 'allow', 'saved from the JSON view');
    });

    await t.test('restore an earlier version: a POST with no body, from the dashboard with authentication off', async (t) => {
      await page.goto(`${server.url}/dashboard/#/policy/it-desk/history`);
      await heading(page, 'History of it-desk').waitFor();
      await page.getByRole('button', { name: 'Restore version 2' }).click();
      await page.getByRole('button', { name: 'Yes, restore' }).click();
      await page.getByRole('status').getByText('Version 2 is the current policy again').waitFor();
      t.equal((await server.call('GET', '/admin/policies/it-desk')).body.default_effect, 'deny', 'version 2 is in force again');
    });

    await t.test('delete a policy and an entity, after confirming', async (t) => {
      await page.goto(`${server.url}/dashboard/#/policy/hr-records`);
      await heading(page, 'Policy hr-records').waitFor();
      await page.getByRole('button', { name: 'Delete' }).click();
      await page.getByRole('button', { name: 'Cancel' }).click();
      t.equal((await server.call('GET', '/admin/policies/hr-records')).status, 200, 'cancel keeps it');
      await page.getByRole('button', { name: 'Delete' }).click();
      await page.getByRole('button', { name: 'Yes, delete' }).click();
      await heading(page, 'Policies').waitFor();
      t.equal((await server.call('GET', '/admin/policies/hr-records')).status, 404);

      await page.goto(`${server.url}/dashboard/#/entity/user%3Aalice`);
      await heading(page, 'Entity user:alice').waitFor();
      await page.getByRole('button', { name: 'Delete' }).click();
      await page.getByRole('button', { name: 'Yes, delete' }).click();
      await heading(page, 'Registry').waitFor();
      await page.getByText('Showing none of 0 entities').waitFor();
      t.equal((await server.call('GET', '/admin/fetchers/registry/entities/user%3Aalice')).status, 404);
    });

    await t.test('the live view counts exactly the decisions made above', async (t) => {
      await page.getByRole('link', { name: 'Live' }).click();
      await heading(page, 'Live').waitFor();
      const tile = (label: string) => page.locator('.tile', { has: page.getByText(label, { exact: true }) }).locator('dd');
      // The playground made three checks (two allowed, one denied), a refused one, and a bulk of two allowed.
      await tile('Allowed').filter({ hasText: /^4 \(80%\)$/ }).waitFor();
      t.equal(await tile('Denied').textContent(), '1 (20%)');
      const revision = String((await server.call('GET', '/health')).body.revision);
      await tile('Snapshot revision').filter({ hasText: new RegExp(`^${revision}$`) }).waitFor();
      t.pass(`the snapshot revision ${revision} from /health`);
    });

    t.same(foreignRequests, [], 'the dashboard asked nothing of any other host');
    t.same(cspViolations, [], 'and its Content-Security-Policy blocked nothing it does');
  });

  t.test('the dashboard and /docs render under their Content-Security-Policy, which stops a script injected inline', async (t) => {
    server = await startServer();
    t.teardown(() => server.close());
    for (const [path, rendered] of [
      ['/dashboard', (page: Page) => heading(page, 'Policies').waitFor()],
      ['/docs', (page: Page) => page.getByText('/admin/policies/{name}/restore', { exact: true }).first().waitFor()],
    ] as const) {
      const { page, context, foreignRequests, cspViolations } = await openPage(chromium, server.url, path);
      t.teardown(() => context.close());
      await rendered(page);
      await page.waitForLoadState('networkidle');
      await screenshot(page, `csp${path.replace('/', '-')}`);
      t.same(cspViolations, [], `${path}: rendered with nothing blocked`);
      t.same(foreignRequests, [], `${path}: nothing asked of another host`);
      const injectedRan = await page.evaluate(() => {
        const script = document.createElement('script');
        script.textContent = 'document.body.dataset.injected = "ran"';
        document.head.append(script);
        return document.body.dataset.injected === 'ran';
      });
      t.equal(injectedRan, false, `${path}: an inline script does not run`);
      await until(() => cspViolations.length > 0, `${path}: a report of the blocked script`).catch(() => undefined);
      t.match(cspViolations, [/^script-src-elem blocked inline/], `${path}: the policy reported it`);
    }
  });

  t.test('with authentication on, the key is asked for once and a wrong one is refused clearly', async (t) => {
    server = await startServer({ adminAuthRequired: true, adminApiKey: 'open sesame' });
    t.teardown(() => server.close());
    const { page, context } = await openDashboard(chromium, server.url);
    t.teardown(() => context.close());

    await heading(page, 'Admin key').waitFor();
    await field(page, 'Admin API key').fill('wrong key');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('alert').getByText('Wrong admin key').waitFor();
    await screenshot(page, 'key-refused');

    await field(page, 'Admin API key').fill('open sesame');
    await page.getByRole('button', { name: 'Continue' }).click();
    await heading(page, 'Policies').waitFor();
    await page.reload();
    await heading(page, 'Policies').waitFor();
    t.pass('the key is kept for the tab across a reload');

    await page.getByRole('button', { name: 'Forget key' }).click();
    await heading(page, 'Admin key').waitFor();
    t.equal(await page.getByRole('alert').count(), 0, 'forgetting is not an error');
  });

  t.test('the keyboard reaches every section, with a visible focus ring', async (t) => {
    server = await startServer();
    t.teardown(() => server.close());
    const { page, context } = await openDashboard(chromium, server.url);
    t.teardown(() => context.close());
    await heading(page, 'Policies').waitFor();
    const focused = () =>
      page.evaluate(() => {
        const element = document.activeElement as HTMLElement;
        return { text: element.textContent, outline: getComputedStyle(element).outlineStyle };
      });

    await page.keyboard.press('Tab');
    t.same(await focused(), { text: 'Skip to content', outline: 'solid' });
    for (const section of ['Policies', 'Registry', 'Playground', 'Live']) {
      await page.keyboard.press('Tab');
      t.same(await focused(), { text: section, outline: 'solid' }, `${section} is next in the navigation, focus visible`);
    }
    await page.keyboard.press('Enter');
    await heading(page, 'Live').waitFor();
    // The heading is focused by an effect that runs after the screen is painted: wait for it.
    await page.waitForFunction(() => document.activeElement?.tagName === 'H1');
    t.pass('a new screen starts at its heading');
  });
}
