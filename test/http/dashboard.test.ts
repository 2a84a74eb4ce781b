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

t.test('the dashboard and /docs forbid framing, type sniffing and whatever is not their own', async (t) => {
  const server = await startServer();
  t.teardown(() => server.close());
  const page = await server.call('GET', '/dashboard/');
  const script = /src="(assets\/[^"]+\.js)"/.exec(page.body)![1];
  const docs = await server.call('GET', '/docs');
  const docsScript = /src="([^"]+swagger-ui-bundle\.js)"/.exec(docs.body)?.[1];
  t.ok(docsScript, '/docs loads the swagger-ui bundle');
  for (const path of ['/dashboard/', `/dashboard/${script}`, '/docs', new URL(docsScript!, `${server.url}/docs/`).pathname, '/docs/json']) {
    const answer = await server.call('GET', path);
    t.equal(answer.status, 200, path);
    const policy = String(answer.headers['content-security-policy']);
    const directives = new Map(policy.split(';').map((directive) => directive.trim().split(/\s+/)).map(([name, ...values]) => [name, values]));
    t.same(directives.get('default-src'), ["'self'"], `${path}: only its own resources by default`);
    t.same(directives.get('script-src'), ["'self'"], `${path}: scripts from the server only, none inline`);
    t.same(directives.get('frame-ancestors'), ["'none'"], `${path}: never framed`);
    t.same(directives.get('object-src'), ["'none'"], `${path}: no plugins`);
    t.equal(answer.headers['x-frame-options'], 'DENY', `${path}: never framed, for browsers without CSP`);
    t.equal(answer.headers['x-content-type-options'], 'nosniff', `${path}: served as the type it says`);
  }
  const check = await server.call('POST', '/check', { principal: { attributes: { a: 1 } }, resource: { attributes: { b: 1 } } });
  t.equal(check.headers['content-security-policy'], undefined, 'the API answers as before');
});
