import t from 'tap';
import type { Browser, Page } from 'playwright-core';
import { ALLOWED, BY_DEFAULT, BY_GUARD, createLivePolicies } from '../helpers/live-traffic.js';
import { scratchDir, startServer, type TestServer } from '../helpers/server.js';
import { chromiumMissing, field, heading, launchChromium, openDashboard, screenshot } from '../helpers/browser.js';
import type { Config } from '../../src/config/config.js';

/**
 * The Live screen in a real headless Chromium against a real Verdict, with traffic the test sends
 * over HTTP: exact counts, charts with a read-out, top rules, recent denials (masked by default)
 * and a denial replayed in the playground in one click (with its action's attributes and context); an empty window; dark mode.
 */

const missing = chromiumMissing();
if (missing !== undefined) {
  t.plan(0, `live view end-to-end tests skipped: ${missing}`);
} else {
  await run();
}


async function serverWithPolicies(overrides: Partial<Config> = {}): Promise<TestServer> {
  const server = await startServer(overrides);
  await createLivePolicies(server);
  return server;
}

/** Waits until the server has closed a second after the last one it reported (the live view's tick). */
async function nextSecond(server: TestServer): Promise<void> {
  const last = (await server.call('GET', '/admin/live')).body.seconds.at(-1)?.at ?? 0;
  for (let attempt = 0; attempt < 600; attempt++) {
    if ((await server.call('GET', `/admin/live?since=${last}`)).body.seconds.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the server closed no second in 30 s');
}

/**
 * Five bursts a second apart, growing: 79 allowed (desk's rule), 15 denied by guard's rule and 11
 * by the default effect; three bulks among them.
 */
async function sendTraffic(server: TestServer): Promise<void> {
  for (let burst = 0; burst < 5; burst++) {
    const bodies = [...Array(5 + 3 * burst).fill(ALLOWED), ...Array(burst + 1).fill(BY_GUARD), BY_DEFAULT];
    for (const body of bodies) await server.call('POST', '/check', body);
    if (burst % 2 === 0) await server.call('POST', '/check/bulk', [...Array(8).fill(ALLOWED), BY_DEFAULT, BY_DEFAULT]);
    await nextSecond(server);
  }
}

const tile = (page: Page, label: string) => page.locator('.tile', { has: page.getByText(label, { exact: true }) }).locator('dd');
const chart = (page: Page, title: string) => page.locator('figure.chart', { has: page.getByText(title, { exact: true }) });

async function run() {
  let chromium: Browser;
  t.before(async () => {
    chromium = await launchChromium();
  });
  t.teardown(async () => {
    await chromium.close();
  });

  t.test('with traffic running, the Live screen charts it, names the top rules and lists the denials, values hidden', async (t) => {
    const server = await serverWithPolicies();
    t.teardown(() => server.close());
    await sendTraffic(server);
    const { page, context, foreignRequests } = await openDashboard(chromium, server.url);
    t.teardown(() => context.close());
    await page.getByRole('link', { name: 'Live' }).click();
    await heading(page, 'Live').waitFor();

    await t.test('exact counts in the tiles', async (t) => {
      await tile(page, 'Allowed').filter({ hasText: /^79 \(75%\)$/ }).waitFor();
      t.equal(await tile(page, 'Denied').textContent(), '26 (25%)');
      t.equal(await page.getByText(/^No decisions/).count(), 0, 'the window is not empty');
    });

    await t.test('eight charts; the decisions are drawn, and read out under the pointer and the arrow keys', async (t) => {
      t.equal(await page.locator('figure.chart').count(), 8);
      const decisions = chart(page, 'Decisions');
      const lines = decisions.locator('.series path');
      t.equal(await lines.count(), 2, 'allowed and denied');
      for (const d of await lines.evaluateAll((paths) => paths.map((path) => path.getAttribute('d')))) t.match(d, /^M[\d.]+,[\d.]+(L[\d.]+,[\d.]+)+$/, 'a line through the seconds');
      const axisLabels = await decisions.locator('.axis-label').allTextContents();
      t.ok(axisLabels.some((label) => /^\d\d:\d\d:\d\d$/.test(label)), `times on the x axis: ${axisLabels.join(' ')}`);
      t.ok(axisLabels.includes('0'), 'the y axis starts at 0');
      const readout = decisions.getByTestId('readout');
      t.match(await readout.textContent(), /^latest.*allowed \d[\d.,]* \/s.*denied \d[\d.,]* \/s$/);

      const box = (await decisions.locator('svg').boundingBox())!;
      await page.mouse.move(box.x + box.width * 0.9, box.y + box.height / 2);
      await readout.locator('.readout-time').filter({ hasText: /^\d\d:\d\d:\d\d$/ }).waitFor();
      t.equal(await decisions.locator('.cursor line').count(), 1, 'a cursor marks the second read');
      await screenshot(page, 'live-hover');
      await page.mouse.move(0, 0);
      await readout.locator('.readout-time').filter({ hasText: 'latest' }).waitFor();

      await decisions.locator('svg').focus();
      await page.keyboard.press('ArrowLeft');
      const first = await readout.locator('.readout-time').textContent();
      t.match(first, /^\d\d:\d\d:\d\d$/, 'the arrow keys read the seconds too');
      await page.keyboard.press('ArrowLeft');
      t.not(await readout.locator('.readout-time').textContent(), first, 'one second earlier');
      await page.keyboard.press('Escape');

      const latency = chart(page, 'Check latency (POST /check)');
      t.equal(await latency.locator('.series path').count(), 2, 'p50 and p99 of the checks answered');
      t.match(await latency.getByTestId('readout').textContent(), /p50 [\d.]+ ms.*p99 [\d.]+ ms/);
      t.equal(await chart(page, 'Change-feed lag (longest each second)').getByText('No store change applied in this window.').count(), 1);
    });

    await t.test('the rules that decided most, by rule and by policy, and the default effect', async (t) => {
      const rules = page.getByRole('table', { name: 'Rules that decided most' }).getByRole('row');
      t.same(await rules.allInnerTexts().then((rows) => rows.map((row) => row.split('\t').map((cell) => cell.trim()))), [
        ['Policy', 'Rule', 'Effect', 'Decisions'],
        ['desk', 'admins', 'allow', '79'],
        ['guard', 'no-interns', 'deny', '15'],
      ]);
      const policies = page.getByRole('table', { name: 'Policies that decided most' }).getByRole('row');
      t.same(await policies.allInnerTexts().then((rows) => rows.map((row) => row.split('\t').map((cell) => cell.trim()))), [
        ['Policy', 'Allowed', 'Denied'],
        ['desk', '79', '0'],
        ['guard', '0', '15'],
      ]);
      await page.getByText('The default effect decided 11 (0 allowed, 11 denied)', { exact: false }).waitFor();
    });

    await t.test('recent denials, newest first, values masked; one opens in the playground filled in', async (t) => {
      const section = page.getByRole('region', { name: 'Recent denials' });
      await section.getByText('Attribute values are hidden', { exact: false }).waitFor();
      const rows = section.getByRole('table').getByRole('row');
      t.equal(await rows.count(), 11, 'a header and the last ten');
      t.match(await rows.nth(1).innerText(), /\{department: •••\}\s+laptop:7 \{kind: •••\}\s+administer\s+Action denied by default effect/);
      t.notMatch(await section.innerText(), /"hr"|"it"|true/, 'no attribute value shows');
      await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
      await screenshot(page, 'live');
      await section.getByRole('button', { name: 'Show all 26' }).click();
      t.equal(await rows.count(), 27);

      const guarded = section.getByRole('row').filter({ hasText: 'Rule no-interns denied the action in policy guard' }).first();
      t.match(await guarded.innerText(), /user:ivy \{department: •••, intern: •••\}/);
      await guarded.getByRole('button', { name: 'Open in playground' }).click();
      await heading(page, 'Playground').waitFor();
      t.equal(await field(page, 'Principal URI').inputValue(), 'user:ivy');
      t.equal(await field(page, 'Principal attributes (JSON object)').inputValue(), '{"department":null,"intern":null}');
      t.equal(await field(page, 'Resource URI').inputValue(), 'laptop:7');
      t.equal(await field(page, 'Resource attributes (JSON object)').inputValue(), '{"kind":null}');
      t.equal(await field(page, 'Action').inputValue(), 'administer');
      await page.getByText('fill in principal department, principal intern, resource kind', { exact: false }).waitFor();
      t.equal(await page.locator('.decision').count(), 0, 'not run: its values are missing');
      await screenshot(page, 'live-replay-masked');
    });

    t.same(foreignRequests, [], 'the Live screen asked nothing of any other host');
  });

  t.test('with --recent-denials-values, one click replays a denial and shows its decision and why', async (t) => {
    const server = await serverWithPolicies({ recentDenialsValues: true });
    t.teardown(() => server.close());
    await server.call('POST', '/check', { ...BY_GUARD, action_attributes: { soft: true }, context: { ip: '10.1.2.3' } });
    await server.call('POST', '/check', ALLOWED);
    const { page, context } = await openDashboard(chromium, server.url);
    t.teardown(() => context.close());
    await page.goto(`${server.url}/dashboard/#/live`);
    const section = page.getByRole('region', { name: 'Recent denials' });
    const row = section.getByRole('row').filter({ hasText: 'no-interns' });
    await row.waitFor();
    t.match(await row.innerText(), /user:ivy \{"department":"it","intern":true\}/, 'values shown');
    t.match(await row.innerText(), /administer \{"soft":true\}; context \{"ip":"10\.1\.2\.3"\}/, "the action's attributes and the context shown");
    await row.getByRole('button', { name: 'Open in playground' }).click();
    await page.locator('.decision').getByText('Rule no-interns denied the action in policy guard').waitFor();
    t.equal(await page.locator('.decision .badge').textContent(), 'Denied');
    t.equal(await field(page, 'Principal attributes (JSON object)').inputValue(), '{"department":"it","intern":true}');
    t.equal(await field(page, 'Action attributes (JSON)').inputValue(), '{"soft":true}', "the action's attributes replayed");
    t.equal(await field(page, 'Context (JSON)').inputValue(), '{"ip":"10.1.2.3"}', 'the context replayed');
    const why = page.getByRole('region', { name: 'Why' });
    t.equal(
      await why.locator('.why').textContent(),
      'Rule no-interns is the first rule of policy guard to match, and it denies: a deny wins over any allow.',
      'the explanation of the replayed check',
    );
    await screenshot(page, 'live-replay');
  });

  t.test('after a restart the view holds the new process\'s figures only, not the sum of both', async (t) => {
    const dataDir = scratchDir(t);
    const first = await startServer({ dataDir });
    await createLivePolicies(first);
    for (let count = 0; count < 3; count++) await first.call('POST', '/check', ALLOWED);
    await nextSecond(first);
    const { page, context } = await openDashboard(chromium, first.url);
    t.teardown(() => context.close());
    await page.goto(`${first.url}/dashboard/#/live`);
    await tile(page, 'Allowed').filter({ hasText: /^3 \(100%\)$/ }).waitFor();

    await first.close();
    const second = await startServer({ dataDir, port: Number(new URL(first.url).port) });
    t.teardown(() => second.close());
    await second.call('POST', '/check', BY_GUARD);
    await nextSecond(second);
    await tile(page, 'Denied').filter({ hasText: /^1 / }).waitFor();
    t.equal(await tile(page, 'Denied').textContent(), '1 (100%)', "the second process's denial");
    t.equal(await tile(page, 'Allowed').textContent(), '0 (0%)', "the first process's decisions are gone");
  });

  t.test('an empty window says so, with no percentile', async (t) => {
    const server = await startServer();
    t.teardown(() => server.close());
    // A second closed with nothing in it: a rate of 0 was measured (before it, the tile says –).
    await nextSecond(server);
    const { page, context } = await openDashboard(chromium, server.url);
    t.teardown(() => context.close());
    await page.goto(`${server.url}/dashboard/#/live`);
    await page.getByText(/^No decisions since this process started at \d\d:\d\d:\d\d/).waitFor();
    t.equal(await tile(page, 'Allowed').textContent(), '0');
    t.equal(await tile(page, 'Decisions/s (last 10 s)').textContent(), '0');
    const latency = chart(page, 'Check latency (POST /check)');
    await latency.getByText('No check answered in this window: no percentile to show.').waitFor();
    t.equal(await latency.locator('svg').count(), 0, 'nothing drawn');
    t.match(await latency.getByTestId('readout').textContent(), /p50 –.*p99 –/);
    await page.getByRole('region', { name: 'Top rules since', exact: false }).getByText(/^No decisions since/).waitFor();
    await page.getByText('No denial since this process started.').waitFor();
    await screenshot(page, 'live-empty');
  });

  t.test('dark mode follows the system setting, and the view fits 1280×800 without sideways scrolling', async (t) => {
    const server = await serverWithPolicies();
    t.teardown(() => server.close());
    await server.call('POST', '/check', ALLOWED);
    await server.call('POST', '/check', BY_GUARD);
    await nextSecond(server);
    const { page, context } = await openDashboard(chromium, server.url, 'dark');
    t.teardown(() => context.close());
    await page.goto(`${server.url}/dashboard/#/live`);
    await tile(page, 'Denied').filter({ hasText: /^1 \(50%\)$/ }).waitFor();
    const colours = await page.evaluate(() => ({
      page: getComputedStyle(document.documentElement).backgroundColor,
      text: getComputedStyle(document.documentElement).color,
    }));
    t.same(colours, { page: 'rgb(17, 21, 28)', text: 'rgb(230, 232, 238)' }, 'the dark palette');
    const widths = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, viewport: innerWidth }));
    t.ok(widths.page <= widths.viewport, `no sideways scrolling (${widths.page} of ${widths.viewport} px)`);
    const chartBox = (await chart(page, 'Decisions').boundingBox())!;
    t.ok(chartBox.width >= 340 && chartBox.y < 800, 'charts are readable in the first screen');
    await screenshot(page, 'live-dark');
  });
}
