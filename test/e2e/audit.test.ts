import t from 'tap';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { startServer, temporaryDataDir, type TestServer } from '../helpers/server.js';
import { chromiumMissing, heading, launchChromium, openDashboard, screenshot } from '../helpers/browser.js';
import { keyDigest } from '../../src/admin-keys.js';

/**
 * The "done when", driven in a real Chromium: from the dashboard alone an operator finds who
 * changed a policy, sees the diff, and restores the previous version, after which a check answers
 * as it did before the change. A read-only key sees the same screens and is offered no write.
 */

const missing = chromiumMissing();
if (missing !== undefined) {
  t.plan(0, `audit dashboard end-to-end tests skipped: ${missing}`);
} else {
  await run();
}

const KEYS = { ops: 'ops-key-0123456789', mallory: 'mallory-key-0123456789', auditor: 'auditor-key-0123456789' };
const OPS_ONLY = {
  name: 'docs',
  description: 'Only ops read the docs',
  rules: [{ name: 'ops', effect: 'allow', principal_conditions: [{ path: 'attributes.team', operator: '==', value: 'ops' }], resource_conditions: [], actions: ['read'] }],
};
const DEV_CHECK = { principal: { attributes: { team: 'dev' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' };

async function signIn(page: Page, key: string) {
  await heading(page, 'Admin key').waitFor();
  await page.getByLabel('Admin API key', { exact: true }).fill(key);
  await page.getByRole('button', { name: 'Continue' }).click();
  await heading(page, 'Policies').waitFor();
}

async function run() {
  let chromium: Browser;
  let server: TestServer;
  t.before(async () => {
    chromium = await launchChromium();
    const directory = temporaryDataDir();
    const keysFile = join(directory, 'keys');
    writeFileSync(
      keysFile,
      [['ops', 'admin'], ['mallory', 'admin'], ['auditor', 'read']].map(([name, role]) => `${name} ${role} ${keyDigest(KEYS[name as keyof typeof KEYS]).toString('hex')}`).join('\n'),
    );
    server = await startServer({ adminAuthRequired: true, adminKeysFile: keysFile });
    t.teardown(async () => {
      await server.close();
      await chromium.close();
      rmSync(directory, { recursive: true, force: true });
    });
    const as = (key: string) => ({ 'WAY-API-KEY': key });
    await server.call('POST', '/admin/policies', OPS_ONLY, as(KEYS.ops));
    await server.call('PUT', '/admin/policies/docs', { ...OPS_ONLY, description: 'Everyone reads the docs', rules: [{ ...OPS_ONLY.rules[0], name: 'everyone', principal_conditions: [] }] }, as(KEYS.mallory));
    await server.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:eve', attributes: { team: 'dev' } }, as(KEYS.ops));
  });

  t.test('an operator finds who changed a policy, sees the diff and restores the version before', async (t) => {
    t.equal((await server.call('POST', '/check', DEV_CHECK)).body.allowed, true, 'the bad change lets dev in');
    const { page, context, foreignRequests } = await openDashboard(chromium, server.url);
    t.teardown(() => context.close());
    await signIn(page, KEYS.ops);

    await page.getByRole('link', { name: 'Audit', exact: true }).click();
    await heading(page, 'Audit').waitFor();
    await page.getByLabel('Target', { exact: true }).fill('policy:*');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const change = page.getByRole('row').filter({ hasText: 'policy.replace' });
    await change.waitFor();
    t.equal(await page.getByRole('row').count(), 3, 'a header, the creation and the change');
    t.match(await change.textContent(), /mallory/, 'the change names the key that made it');
    await page.getByLabel('Actor', { exact: true }).fill('ops');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByRole('row').filter({ hasText: 'policy.replace' }).waitFor({ state: 'detached' });
    // The table is empty while the filtered page loads: wait for the row that stays.
    await page.getByRole('row').filter({ hasText: 'policy.create' }).waitFor();
    t.equal(await page.getByRole('row').count(), 2, "filtered by actor: ops's creation only");
    await page.getByLabel('Actor', { exact: true }).fill('');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await change.waitFor();
    await screenshot(page, 'audit');

    await change.getByRole('link', { name: 'policy:docs' }).click();
    await heading(page, 'History of docs').waitFor();
    const diff = page.getByRole('table', { name: /Version 1 against version 2/ });
    await diff.waitFor();
    t.match(await diff.locator('td.diff-removed').allTextContents(), [/Only ops read the docs/], 'the old description, removed, on the left');
    t.ok((await diff.locator('td.diff-added').allTextContents()).some((text) => text.includes('everyone')), 'the new rule, added, on the right');
    await screenshot(page, 'policy-history');

    await page.getByRole('button', { name: 'Restore version 1' }).click();
    await page.getByRole('group', { name: 'Confirm restore' }).getByText('Make version 1 the current docs?').waitFor();
    await page.getByRole('button', { name: 'Yes, restore' }).click();
    await page.getByRole('status').getByText('Version 1 is the current policy again').waitFor();
    const newest = page.getByRole('row').nth(1);
    t.match(await newest.textContent(), /3.*ops.*policy\.restore of version 1/, 'the restore is a version of its own, by ops');

    t.equal((await server.call('POST', '/check', DEV_CHECK)).body.allowed, false, 'the check answers as before the change');
    await page.getByRole('link', { name: 'Playground' }).click();
    await page.getByLabel('Principal attributes (JSON object)', { exact: true }).fill('{"team": "dev"}');
    await page.getByLabel('Resource attributes (JSON object)', { exact: true }).fill('{"kind": "doc"}');
    await page.getByLabel('Action', { exact: true }).fill('read');
    await page.getByRole('button', { name: 'Run check' }).click();
    await page.getByText('Action denied by default effect').waitFor();
    t.pass('and the playground shows it');
    t.same(foreignRequests, []);
  });

  t.test('a read key sees everything and is offered no write', async (t) => {
    const { page, context } = await openDashboard(chromium, server.url);
    t.teardown(() => context.close());
    await signIn(page, KEYS.auditor);
    await page.getByRole('link', { name: 'docs' }).waitFor();
    t.equal(await page.getByRole('link', { name: 'New policy' }).count(), 0, 'no new policy');
    await page.getByRole('link', { name: 'docs' }).click();
    await heading(page, 'Policy docs').waitFor();
    t.equal(await page.getByRole('button', { name: /Save|Delete/ }).count(), 0, 'no save or delete');
    await page.getByRole('link', { name: 'History' }).click();
    await heading(page, 'History of docs').waitFor();
    await page.getByRole('table', { name: /against/ }).waitFor();
    t.equal(await page.getByRole('button', { name: /Restore/ }).count(), 0, 'no restore');
    await page.getByRole('link', { name: 'Registry' }).click();
    await page.getByRole('link', { name: 'user:eve' }).click();
    await heading(page, 'Entity user:eve').waitFor();
    t.equal(await page.getByRole('button', { name: /Save|Delete|Register/ }).count(), 0, 'no entity writes');
    for (const [link, title] of [['#/policies/new', 'New policy'], ['#/policies/simple', 'Simple policy'], ['#/registry/new', 'Register entity']] as const) {
      await page.goto(`${server.url}/dashboard/${link}`);
      await heading(page, title).waitFor();
      t.equal(await page.getByRole('button', { name: /Create|Register|Save/ }).count(), 0, `${title}, reached by its address: nothing to submit`);
    }
    await page.getByRole('link', { name: 'Audit', exact: true }).click();
    await page.getByRole('row').filter({ hasText: 'policy.restore' }).waitFor();
    await screenshot(page, 'audit-read-key');
  });
}
