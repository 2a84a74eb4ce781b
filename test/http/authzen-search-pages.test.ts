import t, { type Test } from 'tap';
import { startServer, succeeded, type TestServer } from '../helpers/server.js';

// Every AuthZEN search, followed page by page at every small page size: the pages joined are the
// whole answer (what one page of the largest size holds), in order, none twice, and each page
// advances. A page size that could never advance is refused.

interface SearchPage {
  page: { next_token: string; count: number };
  results: Record<string, string>[];
}

const ACTIONS = ['approve', 'archive', 'comment', 'delete', 'edit', 'export', 'print', 'read', 'share'];

const SEARCHES: [string, object][] = [
  ['/access/v1/search/subject', { subject: { type: 'user' }, action: { name: 'read' }, resource: { type: 'doc', id: '1' } }],
  ['/access/v1/search/resource', { subject: { type: 'user', id: '1' }, action: { name: 'read' }, resource: { type: 'doc' } }],
  ['/access/v1/search/action', { subject: { type: 'user', id: '1' }, resource: { type: 'doc', id: '1' } }],
];

async function searchServer(t: Test): Promise<TestServer> {
  const server = await startServer();
  t.teardown(server.close);
  // Users of an odd number may do everything but share on documents of an odd number.
  await succeeded(server, 'POST', '/admin/policies', {
    name: 'odd',
    rules: [
      { name: 'odd', effect: 'allow', actions: ACTIONS.filter((action) => action !== 'share'), principal_conditions: [{ path: 'attributes.odd', operator: '==', value: true }], resource_conditions: [{ path: 'attributes.odd', operator: '==', value: true }] },
      { name: 'share', effect: 'allow', actions: ['share'], principal_conditions: [{ path: 'attributes.odd', operator: '==', value: false }], resource_conditions: [] },
    ],
  });
  const entities = ['user', 'doc'].flatMap((type) => Array.from({ length: 11 }, (_, index) => ({ uri: `${type}:${index}`, type: 'resource', attributes: { odd: index % 2 === 1 } })));
  await succeeded(server, 'POST', '/admin/fetchers/registry/entities/$bulk', entities);
  return server;
}

t.test('every search, followed page by page at each page size, gives the whole answer once, in order', async (t) => {
  const server = await searchServer(t);
  for (const [path, body] of SEARCHES) {
    const whole = (await succeeded(server, 'POST', path, body)) as SearchPage;
    t.equal(whole.page.next_token, '', `${path}: the whole answer fits one page`);
    t.ok(whole.results.length >= 5, `${path}: ${whole.results.length} results`);
    for (let limit = 1; limit <= 4; limit++) {
      const joined: Record<string, string>[] = [];
      const tokens = new Set<string>();
      let token: string | undefined;
      for (let pages = 0; pages <= whole.results.length; pages++) {
        const page = (await succeeded(server, 'POST', path, { ...body, page: { limit, ...(token === undefined ? {} : { token }) } })) as SearchPage;
        t.ok(page.results.length <= limit && page.page.count === page.results.length, `${path}, limit ${limit}: the page holds at most the limit and counts its own`);
        joined.push(...page.results);
        token = page.page.next_token;
        if (token === '') break;
        t.notOk(tokens.has(token), `${path}, limit ${limit}: each token is new`);
        tokens.add(token);
      }
      t.same(joined, whole.results, `${path}, limit ${limit}: the pages joined are the whole answer, none twice`);
      t.equal(token, '', `${path}, limit ${limit}: the last page says so`);
    }
  }
});

t.test('a page limit of 0 would never advance: 400 naming it, on every search', async (t) => {
  const server = await searchServer(t);
  for (const [path, body] of SEARCHES) {
    const refused = await server.call('POST', path, { ...body, page: { limit: 0 } });
    t.equal(refused.status, 400, path);
    t.match(refused.body.detail, /page\.limit/, `${path}: the detail names page.limit`);
  }
});
