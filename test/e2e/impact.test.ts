import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchDir, startServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import { chromiumMissing, field, heading, launchChromium, openDashboard } from '../helpers/browser.js';
import type { Browser, Page } from 'playwright-core';

/** The policy editor's "Preview impact" in a real headless Chromium: what saving would do to the checks decided lately, before saving. */

/** The policy `access` letting readers read, and three checks decided by it (two readers, a guest): the status of the policy write. */
async function readersAndThreeChecks(server: TestServer): Promise<number> {
  const readers = { name: 'access', rules: [{ name: 'readers', effect: 'allow', principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'reader' }], actions: ['read'] }] };
  const written = await server.call('POST', '/admin/policies', readers);
  for (const role of ['reader', 'reader', 'guest']) await server.call('POST', '/check', { principal: { attributes: { role } }, resource: { uri: 'doc:1' }, action: 'read' });
  return written.status;
}

/** The dashboard's editor of `access`, its rule changed (not saved) to let guests read instead. */
async function editingReadersForGuests(t: Test, chromium: Browser, server: TestServer): Promise<Page> {
  const { page, context } = await openDashboard(chromium, server.url);
  t.teardown(() => context.close());
  await page.goto(`${server.url}/dashboard/#/policy/access`);
  await heading(page, 'Policy access').waitFor();
  await field(page, 'Value (JSON)').fill('"guest"');
  return page;
}

const missing = chromiumMissing();
if (missing !== undefined) {
  t.plan(0, `dashboard end-to-end tests skipped: ${missing}`);
} else {
  t.test('editing a policy, Preview impact counts the checks it would turn, by rule, with the checks themselves, and saves nothing', async (t) => {
    const chromium = await launchChromium();
    t.teardown(() => chromium.close());
    const server = await startServer();
    t.teardown(() => server.close());
    t.equal(await readersAndThreeChecks(server), 200);

    const page = await editingReadersForGuests(t, chromium, server);
    await page.getByRole('button', { name: 'Preview impact' }).click();
    const impact = page.getByRole('region', { name: 'Impact' });
    await impact.waitFor();
    t.match(await impact.innerText(), /Of 3 recent checks .*saving would turn 2 from allow to deny and 1 from deny to allow/s);
    const rows = await impact.getByRole('row').allInnerTexts();
    t.match(rows.slice(1).join('\n'), /access\/readers\s+default deny\s+2\s+0/);
    t.match(rows.slice(1).join('\n'), /default deny\s+access\/readers\s+0\s+1/);
    t.equal(await impact.getByRole('list', { name: 'Changed checks' }).getByRole('listitem').count(), 3);
    t.same((await server.call('GET', '/admin/policies/access')).body.rules[0].principal_conditions[0].value, 'reader', 'nothing was saved');

    await impact.getByRole('list', { name: 'Changed checks' }).getByRole('listitem').first().getByRole('button', { name: 'Open in the playground' }).click();
    await heading(page, 'Playground').waitFor();
    const compared = page.getByLabel('Compared decisions');
    const [now, after] = [compared.getByRole('region', { name: 'Now' }), compared.getByRole('region', { name: 'After the change' })];
    t.match(await now.innerText(), /Allowed Rule readers allowed the action in policy access/);
    t.match(await after.innerText(), /Denied\s/);
    t.match(await now.innerText(), /readers/, 'the explanation before: the rule that matched');
    t.match(await after.innerText(), /attributes\.role == "guest" does not hold: it is "reader"/, 'the explanation after: why the changed rule fails');
    t.equal(await field(page, 'Action').inputValue(), 'read', 'the check is in the form');
  });
}

if (missing === undefined) {
  t.test('the Shadow view: the shadow policies, how often they agree, the latest disagreements grouped by what decided them; promote makes one live, discard deletes one', async (t) => {
    const chromium = await launchChromium();
    t.teardown(() => chromium.close());
    const server = await startServer();
    t.teardown(() => server.close());
    const rule = (role: string) => ({ name: `${role}s`, effect: 'allow', principal_conditions: [{ path: 'attributes.role', operator: '==', value: role }], actions: ['read'] });
    t.equal((await server.call('POST', '/admin/policies', { name: 'access', rules: [rule('reader')] })).status, 200);
    t.equal((await server.call('POST', '/admin/policies', { name: 'access-next', shadow: 'access', rules: [rule('reader'), rule('guest')] })).status, 200);
    t.equal((await server.call('POST', '/admin/policies', { name: 'trial', shadow: true, rules: [rule('auditor')] })).status, 200);
    for (const role of ['reader', 'guest', 'auditor', 'guest', 'other']) await server.call('POST', '/check', { principal: { attributes: { role } }, resource: { uri: 'doc:1' }, action: 'read' });

    const { page, context } = await openDashboard(chromium, server.url);
    t.teardown(() => context.close());
    await page.getByRole('link', { name: 'Shadow' }).click();
    await heading(page, 'Shadow policies').waitFor();
    // The heading comes before the report: wait for what it lists.
    await page.getByRole('list', { name: 'Shadow policies' }).waitFor();
    t.same(await page.getByRole('list', { name: 'Shadow policies' }).getByRole('listitem').allInnerTexts().then((items) => items.map((item) => item.split(' Promote')[0])), [
      'access-next in place of access',
      'trial beside the live policies',
    ]);
    t.match(await page.getByRole('status', { name: 'Agreement' }).innerText(), /Agreed on 2 of 5 checks \(40\.0%\): 0 allowed that the shadows would deny, 3 denied that they would allow/);
    const groups = page.getByRole('list', { name: 'Disagreements by what decided' }).getByRole('listitem');
    t.same(
      (await groups.allInnerTexts()).map((text) => text.split('. The newest')[0]),
      [
        '2 checks: denied (Action denied by default effect) → the shadows: allowed (Rule guests allowed the action in policy access-next)',
        '1 check: denied (Action denied by default effect) → the shadows: allowed (Rule auditors allowed the action in policy trial)',
      ],
      'one line per pair of decisions, the largest first, not one per check',
    );
    const chart = page.getByRole('figure', { name: 'Agreement with the live policies, each minute' });
    t.match(await chart.getByTestId('readout').innerText(), /agreed 40%/, 'the chart reads the latest minute: 2 of 5');
    t.equal(await chart.locator('svg').count(), 1, 'drawn');
    const renderedSize = (locator: typeof chart) => locator.locator('.axis-label').first().evaluate((label) => label.getBoundingClientRect().height);
    const labelHeight = await renderedSize(chart);
    t.ok(labelHeight > 6 && labelHeight < 20, `its axis text is drawn at the size of the live view's (${labelHeight.toFixed(1)} px high), not scaled up with the page`);
    const segment = await chart.locator('.series path').evaluate((path) => (path as SVGPathElement).getBBox().width);
    t.ok(segment > 3, `a single minute draws a segment a minute wide (${segment.toFixed(1)} units), not a lone dot`);
    await groups.first().getByRole('button', { name: 'Open in the playground' }).click();
    await heading(page, 'Playground').waitFor();
    t.match(await page.getByLabel('Compared decisions').getByRole('region', { name: 'The live policies' }).innerText(), /Denied/);
    t.match(await page.getByLabel('Compared decisions').getByRole('region', { name: 'With the shadows' }).innerText(), /Allowed Rule guests allowed the action in policy access-next/);
    await page.getByRole('link', { name: 'Shadow' }).click();
    await heading(page, 'Shadow policies').waitFor();

    await page.getByRole('button', { name: 'Promote access-next' }).click();
    await page.getByText('Promoted access-next.').waitFor();
    t.equal((await server.call('POST', '/check', { principal: { attributes: { role: 'guest' } }, resource: { uri: 'doc:1' }, action: 'read' })).body.allowed, true, 'promoted: guests read');
    await page.getByRole('button', { name: 'Discard trial' }).click();
    await page.getByText('Discarded trial.').waitFor();
    t.equal((await server.call('GET', '/admin/policies/trial')).status, 404);
    await page.getByText('No shadow policy.', { exact: false }).waitFor();
    t.equal(await page.getByRole('list', { name: 'Shadow policies' }).count(), 0, 'no shadow left');
  });
}

if (missing === undefined) {
  t.test("Preview impact can replay the decision log file instead, and says how many of its lines it read", async (t) => {
    const chromium = await launchChromium();
    t.teardown(() => chromium.close());
    const log = join(scratchDir(t), 'decisions.ndjson');
    const server = await startServer({ decisionLog: log, recentChecks: 0 });
    t.teardown(() => server.close());
    t.equal(await readersAndThreeChecks(server), 200);
    await until(() => readFileSync(log, 'utf8').split('\n').length === 4, 'three decisions logged');

    const page = await editingReadersForGuests(t, chromium, server);
    const checkbox = page.getByRole('checkbox', { name: 'Replay the decision log file' });
    const [box, label] = [(await checkbox.boundingBox())!, (await page.locator('label', { hasText: 'Replay the decision log file' }).boundingBox())!];
    t.ok(box.width < 40 && label.height < 2.5 * box.height, `the checkbox sits beside its words (box ${box.width.toFixed(0)} px wide; label ${label.height.toFixed(0)} px high)`);
    await checkbox.check();
    await page.getByRole('button', { name: 'Preview impact' }).click();
    const impact = page.getByRole('region', { name: 'Impact' });
    await impact.waitFor();
    t.match(await impact.innerText(), /Of 3 checks of the decision log's newest 3 lines .*saving would turn 2 from allow to deny and 1 from deny to allow/s);
  });
}
