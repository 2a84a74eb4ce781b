import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { scratchDir, startServer } from '../helpers/server.js';
import { chromiumMissing, heading, launchChromium, openDashboard, screenshot } from '../helpers/browser.js';

/** The dashboard's Schemas screen in a real headless Chromium: none, then the document written through the admin API, then one from a file. */

const missing = chromiumMissing();
if (missing !== undefined) {
  t.plan(0, `schemas dashboard end-to-end tests skipped: ${missing}`);
} else {
  await run();
}

const LEVELS = { principal: { types: { user: { type: 'object', properties: { level: { type: 'integer' } }, required: ['level'] } } } };

async function run() {
  let chromium: Browser;
  t.before(async () => {
    chromium = await launchChromium();
  });
  t.teardown(() => chromium.close());

  t.test('the schema document in force, its version and where it comes from', async (t) => {
    const server = await startServer();
    t.teardown(() => server.close());
    const { page, context } = await openDashboard(chromium, server.url);
    t.teardown(() => context.close());
    await page.getByRole('link', { name: 'Schemas', exact: true }).click();
    await heading(page, 'Attribute schemas').waitFor();
    await page.getByText('No attribute schema document is in force: PUT /admin/schemas writes one.').waitFor();

    t.equal((await server.call('PUT', '/admin/schemas', LEVELS)).status, 200);
    await page.reload();
    await page.getByText('Version 1, managed through the admin API (PUT /admin/schemas).').waitFor();
    t.same(JSON.parse((await page.getByLabel('The schema document').textContent()) ?? ''), LEVELS, 'the document as stored');
    await screenshot(page, 'schemas');
  });

  t.test('a document from a file says which file', async (t) => {
    const schemasFile = join(scratchDir(t), 'schemas.json');
    writeFileSync(schemasFile, JSON.stringify(LEVELS));
    const server = await startServer({ schemasFile });
    t.teardown(() => server.close());
    const { page, context } = await openDashboard(chromium, server.url);
    t.teardown(() => context.close());
    await page.getByRole('link', { name: 'Schemas', exact: true }).click();
    await page.getByText(`From the file ${schemasFile}.`).waitFor();
    t.same(JSON.parse((await page.getByLabel('The schema document').textContent()) ?? ''), LEVELS);
  });
}
