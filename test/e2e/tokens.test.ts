import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ready, scratchDir, startServer } from '../helpers/server.js';
import { chromiumMissing, field, heading, launchChromium, openDashboard } from '../helpers/browser.js';
import { AUDIENCE, ISSUER, signingKey, TokenIssuer, tokenFor } from '../helpers/token-issuer.js';

/** The playground with a principal given by a bearer token, in a real headless Chromium, against a server verifying tokens with a key set served by the test. */

const missing = chromiumMissing();
if (missing !== undefined) {
  t.plan(0, `dashboard end-to-end tests skipped: ${missing}`);
} else {
  t.test("the playground decides a check whose principal is a token: the owner's allowed, with its claims in the trace; an expired one is refused, saying why", async (t) => {
    const key = await signingKey('k1');
    const issuer = await TokenIssuer.start([key]);
    t.teardown(() => issuer.close());
    const dir = scratchDir(t);
    writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_url: issuer.jwksUrl }] }));
    const server = await startServer({ tokens: join(dir, 'tokens.json') });
    t.teardown(() => server.close());
    await ready(server);
    const rule = { name: 'owner-reads', effect: 'allow', principal_conditions: [{ path: 'attributes.claims.sub', operator: '==', value_from: 'resource.attributes.owner' }], actions: ['read'] };
    t.equal((await server.call('POST', '/admin/policies', { name: 'owners', rules: [rule] })).status, 200);
    const chromium = await launchChromium();
    t.teardown(() => chromium.close());
    const { page, context } = await openDashboard(chromium, server.url);
    t.teardown(() => context.close());
    await page.getByRole('link', { name: 'Playground' }).click();
    await heading(page, 'Playground').waitFor();
    await field(page, 'Principal token (JWT)').fill(await tokenFor(key, 'alice'));
    await field(page, 'Resource attributes (JSON object)').fill('{"owner": "alice"}');
    await field(page, 'Action').fill('read');
    await page.getByRole('button', { name: 'Run check' }).click();
    await page.locator('.decision', { hasText: 'Allowed' }).waitFor({ timeout: 10_000 });
    t.match(await page.locator('form[aria-labelledby="single-check"]').innerText(), /"sub":\s*"alice"/, 'the trace shows the claims decided on');
    await field(page, 'Principal token (JWT)').fill(await tokenFor(key, 'alice', { expiresIn: -120 }));
    await page.getByRole('button', { name: 'Run check' }).click();
    await page.getByText('the token has expired', { exact: false }).waitFor({ timeout: 10_000 });
    t.pass('a refused token is said why');
  });
}
