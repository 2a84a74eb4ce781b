import t from 'tap';
import { startServer } from '../helpers/server.js';
import { chromiumMissing, field, heading, launchChromium, openDashboard } from '../helpers/browser.js';

/**
 * The owner example of docs/evaluation.md done from the dashboard in a real headless Chromium: a
 * resource condition compared with another attribute in the policy editor, then checks with action
 * attributes and a context in the playground.
 */

const missing = chromiumMissing();
if (missing !== undefined) {
  t.plan(0, `dashboard end-to-end tests skipped: ${missing}`);
} else {
  t.test('a relation from the policy editor; action attributes and context from the playground', async (t) => {
    const chromium = await launchChromium();
    t.teardown(() => chromium.close());
    const server = await startServer();
    t.teardown(() => server.close());
    const { page, context } = await openDashboard(chromium, server.url);
    t.teardown(() => context.close());

    await heading(page, 'Policies').waitFor();
    await page.getByRole('link', { name: 'New policy' }).click();
    await heading(page, 'New policy').waitFor();
    await field(page, 'Policy name').fill('Documents');
    await field(page, 'Rule name').fill('owner deletes softly');
    await field(page, 'Actions').fill('delete');
    const rule = page.getByRole('group', { name: 'Rule 1' });
    t.equal(await rule.getByLabel('Path', { exact: true }).count(), 0, 'a new rule has no blank condition');
    const resource = rule.getByRole('group', { name: 'Resource conditions' });
    await resource.getByRole('button', { name: 'Add resource condition' }).click();
    await resource.getByLabel('Path', { exact: true }).fill('attributes.ownerID');
    await resource.getByLabel('Compare with', { exact: true }).selectOption('another attribute');
    await resource.getByLabel('Another attribute', { exact: true }).fill('principal.attributes.email');
    const action = rule.getByRole('group', { name: 'Action conditions' });
    await action.getByRole('button', { name: 'Add action condition' }).click();
    await action.getByLabel('Path', { exact: true }).fill('attributes.soft');
    await action.getByLabel('Value (JSON)', { exact: true }).fill('true');
    const contextGroup = rule.getByRole('group', { name: 'Context conditions' });
    await contextGroup.getByRole('button', { name: 'Add context condition' }).click();
    await contextGroup.getByLabel('Path', { exact: true }).fill('attributes.ip');
    await contextGroup.getByLabel('Operator', { exact: true }).selectOption('startswith');
    await contextGroup.getByLabel('Value (JSON)', { exact: true }).fill('"10."');
    await page.getByRole('button', { name: 'Create policy' }).click();
    await heading(page, 'Policy documents').waitFor();
    const stored = await server.call('GET', '/admin/policies/documents');
    t.strictSame(stored.body.rules[0], {
      name: 'owner-deletes-softly',
      description: null,
      effect: 'allow',
      principal_conditions: [],
      resource_conditions: [{ path: 'attributes.ownerID', operator: '==', value_from: 'principal.attributes.email' }],
      action_conditions: [{ path: 'attributes.soft', operator: '==', value: true }],
      context_conditions: [{ path: 'attributes.ip', operator: 'startswith', value: '10.' }],
      actions: ['delete'],
    });

    await page.getByRole('link', { name: 'Playground' }).click();
    // Consecutive checks are decided differently, so that waiting for the expected answer never reads the one before.
    const check = async (actionAttributes: string, contextText: string, expected: RegExp) => {
      await field(page, 'Principal attributes (JSON object)').fill('{"email": "alice@example.com"}');
      await field(page, 'Resource attributes (JSON object)').fill('{"ownerID": "alice@example.com"}');
      await field(page, 'Action').fill('delete');
      await field(page, 'Action attributes (JSON)').fill(actionAttributes);
      await field(page, 'Context (JSON)').fill(contextText);
      await page.getByRole('button', { name: 'Run check' }).click();
      await page.locator('.decision', { hasText: expected }).waitFor({ timeout: 10_000 });
      return (await page.locator('.decision').textContent()) ?? '';
    };
    t.match(await check('{"soft": true}', '{"ip": "10.1.2.3"}', /Allowed/), /Allowed.*Rule owner-deletes-softly allowed/);
    t.match(await check('{"soft": false}', '{"ip": "10.1.2.3"}', /Denied/), /Denied.*denied by default/, 'a hard delete');
    await field(page, 'Resource attributes (JSON object)').fill('{"ownerID": "bob@example.com"}');
    await page.getByRole('button', { name: 'Run check' }).click();
    await page.getByText('resource attributes.ownerID == principal.attributes.email ("alice@example.com") does not hold: it is "bob@example.com"').waitFor({ timeout: 10_000 });
    t.pass('the trace shows a failed relation with its reference and what it resolved to');
    t.match(await check('{"soft": true}', '{"ip": "10.1.2.3"}', /Allowed/), /Allowed/);
    t.match(await check('{"soft": true}', '', /Denied/), /Denied/, 'no context: the context condition does not hold');
    await field(page, 'Context (JSON)').fill('[1]');
    await page.getByRole('button', { name: 'Run check' }).click();
    t.match(await page.getByText('Attributes are a JSON object').first().textContent(), /JSON object/, 'a context that is not an object is marked on its field');
  });

  t.test('the playground tries a check at a fixed time, and its trace says which alternative of a group held', async (t) => {
    const chromium = await launchChromium();
    t.teardown(() => chromium.close());
    const server = await startServer();
    t.teardown(() => server.close());
    const weekdays = { zone: 'Europe/Berlin', days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '09:00', to: '18:00' };
    const policy = {
      name: 'office',
      rules: [
        {
          name: 'staff in office hours',
          effect: 'allow',
          principal_conditions: [{ any_of: [[{ path: 'attributes.role', operator: '==', value: 'admin' }], [{ path: 'attributes.role', operator: '==', value: 'staff' }]] }],
          context_conditions: [{ path: 'time', operator: 'during', value: weekdays }],
          actions: ['read'],
        },
      ],
    };
    t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
    const { page, context } = await openDashboard(chromium, server.url);
    t.teardown(() => context.close());
    await page.getByRole('link', { name: 'Playground' }).click();
    const tryAt = async (time: string, expected: RegExp) => {
      await field(page, 'Principal attributes (JSON object)').fill('{"role": "staff"}');
      await field(page, 'Resource attributes (JSON object)').fill('{"kind": "memo"}');
      await field(page, 'Action').fill('read');
      await field(page, 'Decision time').fill(time);
      await page.getByRole('button', { name: 'Run check' }).click();
      await page.locator('.decision', { hasText: expected }).waitFor({ timeout: 10_000 });
    };
    await tryAt('2026-11-27T08:30:00Z', /Allowed/);
    await page.getByText('matched (principal any_of: alternative 2)').waitFor({ timeout: 10_000 });
    t.equal(await page.locator('dd', { hasText: '2026-11-27T08:30:00.000Z' }).count(), 1, 'the trace gives the time decided at');
    await tryAt('2026-11-28T08:30:00Z', /Denied/);
    t.pass('a Saturday, tried from the playground, is denied');
    await field(page, 'Decision time').fill('saturday');
    await page.getByRole('button', { name: 'Run check' }).click();
    await page.getByText("'saturday' is not an RFC 3339 date-time with its offset").waitFor({ timeout: 10_000 });
    t.pass('a time that is not one is marked on its field');
  });
}
