import t from 'tap';
import { startServer } from '../helpers/server.js';

t.test('the dashboard is served at /dashboard/ from the build output', async (t) => {
  const server = await startServer();
  t.teardown(() => server.close());

  const bare = await server.call('GET', '/dashboard');
  t.equal(bare.status, 301);
  t.equal(bare.headers.location, '/dashboard/');

  const page = await server.call('GET', '/dashboard/');
  t.equal(page.status, 200);
  t.match(page.headers['content-type'], /^text\/html/);
  const script = /src="(assets\/[^"]+\.js)"/.exec(page.body)?.[1];
  t.ok(script, 'the page loads its script from /dashboard/assets/');
  const asset = await server.call('GET', `/dashboard/${script}`);
  t.equal(asset.status, 200);
  t.match(asset.headers['content-type'], /javascript/);

  t.same(await server.call('GET', '/dashboard/missing.js').then((r) => [r.status, r.body]), [404, { detail: 'Not Found' }]);
  t.equal((await server.call('POST', '/dashboard/')).status, 405, 'the dashboard only reads');
});

t.test('with authentication on, the page itself is public: the key guards the admin API it calls', async (t) => {
  const server = await startServer({ adminAuthRequired: true, adminApiKey: 'k' });
  t.teardown(() => server.close());
  t.equal((await server.call('GET', '/dashboard/')).status, 200);
  t.equal((await server.call('GET', '/admin/policies')).status, 401);
});
