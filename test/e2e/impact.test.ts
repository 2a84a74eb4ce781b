import t from 'tap';
import { startServer } from '../helpers/server.js';
import { chromiumMissing, field, heading, launchChromium, openDashboard } from '../helpers/browser.js';

/** The policy editor's "Preview impact" in a real headless Chromium: what saving would do to the checks decided lately, before saving. */

const missing = chromiumMissing();
if (missing !== undefined) {
  t.plan(0, `dashboard end-to-end tests skipped: ${missing}`);
} else {
  t.test('editing a policy, Preview impact counts the checks it would turn, by rule, with the checks themselves, and saves nothing', async (t) => {
    const chromium = await launchChromium();
    t.teardown(() => chromium.close());
    const server = await startServer();
    t.teardown(() => server.close());
    const readers = { name: 'access', rules: [{ name: 'readers', effect: 'allow', principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'reader' }], actions: ['read'] }] };
    t.equal((await server.call('POST', '/admin/policies', readers)).status, 200);
    for (const role of ['reader', 'reader', 'guest']) await server.call('POST', '/check', { principal: { attributes: { role } }, resource: { uri: 'doc:1' }, action: 'read' });

    const { page, context } = await openDashboard(chromium, server.url);
    t.teardown(() => context.close());
    await page.goto(`${server.url}/dashboard/#/policy/access`);
    await heading(page, 'Policy access').waitFor();
    await field(page, 'Value (JSON)').fill('"guest"');
    await page.getByRole('button', { name: 'Preview impact' }).click();
    const impact = page.getByRole('region', { name: 'Impact' });
    await impact.waitFor();
    t.match(await impact.innerText(), /Of 3 recent checks .*saving would turn 2 from allow to deny and 1 from deny to allow/s);
    const rows = await impact.getByRole('row').allInnerTexts();
    t.match(rows.slice(1).join('\n'), /access\/readers\s+default deny\s+2\s+0/);
    t.match(rows.slice(1).join('\n'), /default deny\s+access\/readers\s+0\s+1/);
    t.equal(await impact.getByRole('list', { name: 'Changed checks' }).getByRole('listitem').count(), 3);
    t.same((await server.call('GET', '/admin/policies/access')).body.rules[0].principal_conditions[0].value, 'reader', 'nothing was saved');
  });
}
