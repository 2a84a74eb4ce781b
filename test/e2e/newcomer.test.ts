import t, { type Test } from 'tap';
import type { Browser, Locator, Page } from 'playwright-core';
import { startServer, type TestServer } from '../helpers/server.js';
import { chromiumMissing, field, heading, launchChromium, openDashboard, screenshot } from '../helpers/browser.js';

/**
 * What a newcomer's screenshots showed at 1280×800 and 420 px, checked in a real headless Chromium
 * against a real Verdict: labels readable on every state of a button, a placeholder that is not
 * mistaken for data, one spelling per operator, one format of time, a navigation that fits, no
 * "Delete" for what is not there, no "No problems" for what was not checked, and the dashboard's own
 * probe of the key not counted as a client error.
 */

const missing = chromiumMissing();
if (missing !== undefined) {
  t.plan(0, `dashboard tests skipped: ${missing}`);
} else {
  await run();
}

/** WCAG's contrast ratio between an element's text colour and the background it is drawn on. */
async function contrast(locator: Locator): Promise<number> {
  return locator.evaluate((element) => {
    const rgb = (text: string) => (text.match(/[\d.]+/g) ?? []).slice(0, 4).map(Number);
    const background = (start: Element | null): number[] => {
      for (let at = start; at !== null; at = at.parentElement) {
        const [r = 0, g = 0, b = 0, alpha = 1] = rgb(getComputedStyle(at).backgroundColor);
        if (alpha > 0) return [r, g, b];
      }
      return [255, 255, 255];
    };
    const luminance = ([r, g, b]: number[]) =>
      [r!, g!, b!].map((channel) => channel / 255).map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4)).reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i]!, 0);
    const [text, back] = [luminance(rgb(getComputedStyle(element).color)), luminance(background(element))];
    return (Math.max(text, back) + 0.05) / (Math.min(text, back) + 0.05);
  });
}

/** The operators a new principal condition offers (a new rule has no condition until one is added). */
async function operatorOptions(page: Page): Promise<string[]> {
  await page.getByRole('button', { name: 'Add principal condition' }).first().click();
  return page.getByLabel('Operator', { exact: true }).first().locator('option').allTextContents();
}

async function run() {
  let chromium: Browser;
  t.before(async () => {
    chromium = await launchChromium();
  });
  t.teardown(() => chromium.close());

  async function dashboard(t: Test, server: TestServer, hash = '') {
    const opened = await openDashboard(chromium, `${server.url}`);
    t.teardown(() => opened.context.close());
    if (hash !== '') await opened.page.goto(`${server.url}/dashboard/${hash}`);
    return opened;
  }

  async function fresh(t: Test, overrides = {}): Promise<TestServer> {
    const server = await startServer(overrides);
    t.teardown(server.close);
    return server;
  }

  t.test('a hovered Form or JSON tab keeps its label readable, and so does the disabled Continue', async (t) => {
    const server = await fresh(t);
    const { page } = await dashboard(t, server, '#/policies/new');
    await heading(page, 'New policy').waitFor();
    for (const tab of ['Form', 'JSON']) {
      const button = page.getByRole('button', { name: tab, exact: true });
      await button.hover();
      t.ok((await contrast(button)) >= 4.5, `${tab} hovered: contrast ${(await contrast(button)).toFixed(2)}`);
    }
    await page.getByRole('button', { name: 'JSON', exact: true }).click();
    await page.getByRole('button', { name: 'JSON', exact: true }).hover();
    t.ok((await contrast(page.getByRole('button', { name: 'JSON', exact: true }))) >= 4.5, 'the pressed tab hovered');

    const locked = await fresh(t, { adminAuthRequired: true, adminApiKey: 'open sesame' });
    const prompt = (await dashboard(t, locked)).page;
    await heading(prompt, 'Admin key').waitFor();
    const continueButton = prompt.getByRole('button', { name: 'Continue' });
    t.equal(await continueButton.isDisabled(), true, 'Continue waits for a key');
    t.ok((await contrast(continueButton)) >= 4.5, `disabled Continue: contrast ${(await contrast(continueButton)).toFixed(2)}`);
    await screenshot(prompt, 'newcomer-key-prompt');
  });

  t.test('the rule description shows no example sentence that reads as data', async (t) => {
    const server = await fresh(t);
    const { page } = await dashboard(t, server, '#/policies/new');
    await heading(page, 'New policy').waitFor();
    t.equal(await field(page, 'Rule description').getAttribute('placeholder'), null);
  });

  t.test('the operator list spells each operator once, in the style the server answers in', async (t) => {
    const spec = await fresh(t);
    const specPage = (await dashboard(t, spec, '#/policies/new')).page;
    await heading(specPage, 'New policy').waitFor();
    t.same(await operatorOptions(specPage), ['==', '!=', 'contains', 'not_contains', 'startswith', 'endswith', 'gt', 'gte', 'lt', 'lte', 'in', 'not_in', 'exists', 'not_exists', 'matches', 'not_matches', 'in_cidr', 'not_in_cidr', 'before', 'after', 'during', 'within']);

    const eunomia = await fresh(t, { operatorStyle: 'eunomia' });
    const eunomiaPage = (await dashboard(t, eunomia, '#/policies/new')).page;
    await heading(eunomiaPage, 'New policy').waitFor();
    const options = await operatorOptions(eunomiaPage);
    t.same(options, ['equals', 'not_equals', 'contains', 'not_contains', 'startswith', 'endswith', 'gt', 'gte', 'lt', 'lte', 'in', 'not_in', 'exists', 'not_exists', 'matches', 'not_matches', 'in_cidr', 'not_in_cidr', 'before', 'after', 'during', 'within']);
    t.equal(await eunomiaPage.getByLabel('Operator', { exact: true }).first().inputValue(), 'equals', 'a new condition starts with the style’s equality');
  });

  t.test('Audit, History and Registry show times in one format', async (t) => {
    const server = await fresh(t);
    t.equal((await server.call('POST', '/admin/policies', { name: 'timed', rules: [] })).status, 200);
    t.equal((await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:timed', type: 'principal', attributes: { a: 1 } })).status, 200);
    const { page } = await dashboard(t, server, '#/audit');
    const cells: Record<string, string> = {};
    await heading(page, 'Audit').waitFor();
    cells.audit = (await page.locator('table tbody tr').first().locator('td').first().textContent())!;
    await page.goto(`${server.url}/dashboard/#/policy/timed/history`);
    await page.locator('table tbody tr').first().waitFor();
    cells.history = (await page.locator('table tbody tr td', { hasText: /\d{4}/ }).first().textContent())!;
    await page.goto(`${server.url}/dashboard/#/registry`);
    await page.locator('table tbody tr').first().waitFor();
    cells.registry = (await page.locator('table tbody tr').first().locator('td').nth(3).textContent())!;
    for (const [screen, text] of Object.entries(cells)) t.match(text, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/, `${screen}: ${text}`);
  });

  t.test('at 420 px the navigation fits the width', async (t) => {
    const server = await fresh(t);
    const { page } = await dashboard(t, server);
    await page.setViewportSize({ width: 420, height: 800 });
    await heading(page, 'Policies').waitFor();
    await screenshot(page, 'newcomer-420');
    t.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 420, 'no horizontal scrolling');
    for (const link of await page.getByRole('navigation', { name: 'Sections' }).getByRole('link').all()) {
      const box = (await link.boundingBox())!;
      t.ok(box.x >= 0 && box.x + box.width <= 420, `${await link.textContent()} within the page`);
    }
  });

  t.test('a policy that does not exist offers no Delete', async (t) => {
    const server = await fresh(t);
    const { page } = await dashboard(t, server, '#/policy/nothing-here');
    await page.getByRole('alert').getByText('Policy not found').waitFor();
    t.equal(await page.getByRole('button', { name: 'Delete' }).count(), 0);
  });

  t.test('"No problems" is not shown while a value is not valid JSON', async (t) => {
    const server = await fresh(t);
    const { page } = await dashboard(t, server, '#/policies/new');
    await heading(page, 'New policy').waitFor();
    await field(page, 'Policy name').fill('checked');
    await field(page, 'Rule name').fill('team-reads');
    await field(page, 'Actions').fill('read');
    await page.getByText('No problems and no warnings.').waitFor();
    t.equal(await page.locator('[aria-invalid="true"]').count(), 0, 'a new policy flags nothing before anything is typed');
    await page.getByRole('button', { name: 'Add principal condition' }).click();
    await page.getByLabel('Path', { exact: true }).first().fill('attributes.team');
    await page.getByLabel('Value (JSON)', { exact: true }).first().fill('"it"');
    await page.getByText('No problems and no warnings.').waitFor();
    await page.getByLabel('Value (JSON)', { exact: true }).first().fill('"it');
    await page.getByText('Not checked while something typed is not valid JSON.').waitFor();
    t.equal(await page.getByText('No problems and no warnings.').count(), 0);
  });

  t.test("the dashboard's own probe of the key is not counted as a client error in Live", async (t) => {
    const server = await fresh(t, { adminAuthRequired: true, adminApiKey: 'open sesame' });
    const { page } = await dashboard(t, server);
    await heading(page, 'Admin key').waitFor();
    await field(page, 'Admin API key').fill('open sesame');
    await page.getByRole('button', { name: 'Continue' }).click();
    await heading(page, 'Policies').waitFor();
    await page.getByRole('link', { name: 'Live', exact: true }).click();
    await heading(page, 'Live').waitFor();
    const live = (await server.call('GET', '/admin/live', undefined, { 'way-api-key': 'open sesame' })).body;
    const clientErrors = live.seconds.reduce((sum: number, second: { errors_4xx: number }) => sum + second.errors_4xx, 0);
    t.equal(clientErrors, 0, 'the 401 of the probe without a key is not a client error');
  });
}
