import t from 'tap';
import fc from 'fast-check';
import { startServer, type TestServer, succeeded } from '../helpers/server.js';
import { planCase } from '../helpers/plan-cases.js';
import type { Config } from '../../src/config/config.js';

const SEARCH = '/access/v1/search/resource';
const REGISTER_MANY = '/admin/fetchers/registry/entities/$bulk';


interface SearchPage {
  page: { next_token: string; count: number; total?: number };
  results: { type: string; id: string }[];
}

/** Every page of a search, following next_token until it is '' (at most `most` pages). */
async function everyPage(server: TestServer, body: object, most: number): Promise<SearchPage[]> {
  const pages: SearchPage[] = [];
  let token: string | undefined;
  do {
    const page = (await succeeded(server, 'POST', SEARCH, { ...body, ...(token === undefined ? {} : { page: { ...(body as { page?: object }).page, token } }) })) as SearchPage;
    pages.push(page);
    token = page.page.next_token;
  } while (token !== '' && pages.length < most);
  return pages;
}

const RUNS = 30;
const LIMIT = 3;
const COPIES = 3;

/** Replaces the server's policies with `policies`. */
async function replacePolicies(server: TestServer, policies: readonly object[]): Promise<void> {
  for (const policy of (await succeeded(server, 'GET', '/admin/policies')) as { name: string }[]) await succeeded(server, 'DELETE', `/admin/policies/${policy.name}`);
  for (const policy of policies) await succeeded(server, 'POST', '/admin/policies', policy);
}

/**
 * Random policies (resource, action and context conditions, value_from), registries of documents
 * with their neighbours of other types, subjects, resource properties (which may contradict the
 * registry), action properties and contexts: the resources a search finds, through every page, are
 * exactly those /check/bulk allows among the registered ones of the type. One server makes its plans
 * in its worker pool and decides without a bound; the other plans inline and decides at most 4
 * candidates per request, so that pages end early.
 */
const servers: [string, Partial<Config>][] = [
  ['plans made in the pool, no bound reached', { evaluation: 'pool' }],
  ['plans made inline, 4 candidates per request', { evaluation: 'inline', searchMaxCandidates: 4 }],
];

for (const [name, overrides] of servers) {
  t.test(`resource search against brute force over /check/bulk (${RUNS} cases, ${name}): every page exact`, async (t) => {
    const server = await startServer(overrides);
    t.teardown(server.close);
    let found = 0;
    let pagesFollowed = 0;
    let severalPages = 0;
    let endedEarly = 0;
    let registered: string[] = [];
    for (const [index, example] of fc.sample(planCase, { numRuns: RUNS, seed: 2027 }).entries()) {
      await replacePolicies(server, example.policies);
      for (const uri of registered) await succeeded(server, 'DELETE', `/admin/fetchers/registry/entities/${encodeURIComponent(uri)}`);
      // Each drawn document registered a few times (doc:1 and doc:2 among them, which uri conditions name).
      const documents = example.resources.flatMap((document, position) =>
        Array.from({ length: COPIES }, (_, copy) => ({ uri: copy === 0 ? `doc:${position}` : `doc:${position}-${copy}`, attributes: document.attributes })),
      );
      documents.sort((a, b) => (a.uri < b.uri ? -1 : 1));
      // Neighbours whose uri shares a beginning with the type's prefix but is not under it.
      const neighbours = ['docs:0', 'do:c', 'doc', 'doc;0'].map((uri) => ({ uri, attributes: example.resources[0]!.attributes }));
      const entities = [...documents, ...neighbours].map(({ uri, attributes }) => ({ uri, type: 'resource', attributes: Object.keys(attributes).length === 0 ? { none: 1 } : attributes }));
      await succeeded(server, 'POST', REGISTER_MANY, entities);
      registered = entities.map((entity) => entity.uri);

      const [type, id] = (example.principal.uri ?? 'user:carol').split(':') as [string, string];
      const checks = documents.map(({ uri }) => ({
        principal: { uri: `${type}:${id}`, attributes: example.principal.attributes },
        resource: { uri, attributes: example.known },
        action: { name: example.action, attributes: example.actionAttributes },
        context: example.context,
      }));
      const decided = (await succeeded(server, 'POST', '/check/bulk', checks)) as { allowed: boolean }[];
      const expected = documents.filter((_, position) => decided[position]!.allowed).map(({ uri }) => ({ type: 'doc', id: uri.slice('doc:'.length) }));

      const body = {
        subject: { type, id, properties: example.principal.attributes },
        action: { name: example.action, properties: example.actionAttributes },
        resource: { type: 'doc', properties: example.known },
        context: example.context,
        page: { limit: LIMIT },
      };
      const pages = await everyPage(server, body, 100);
      pagesFollowed += pages.length;
      if (pages.length > 1) severalPages++;
      endedEarly += pages.filter((page) => page.page.next_token !== '' && page.results.length < LIMIT).length;
      const results = pages.flatMap((page) => page.results);
      if (JSON.stringify(results) !== JSON.stringify(expected)) {
        t.fail(`case ${index}: ${JSON.stringify(results)} where /check allows ${JSON.stringify(expected)} (${JSON.stringify(example)})`);
      }
      t.equal(pages.at(-1)!.page.next_token, '', `case ${index}: the last page says so`);
      t.ok(pages.every((page) => page.results.length <= LIMIT && page.page.count === page.results.length), `case ${index}: no page holds more than the limit, each counts its own`);
      if (overrides.searchMaxCandidates === undefined) {
        t.equal(pages.length, Math.max(1, Math.ceil(expected.length / LIMIT)), `case ${index}: as many pages as the limit makes`);
        t.equal(pages[0]!.page.total, pages.length === 1 ? expected.length : undefined, `case ${index}: a total only when one page holds every result`);
      }
      found += expected.length;
    }
    t.ok(found > RUNS, `${found} resources found`);
    if (overrides.searchMaxCandidates !== undefined) t.ok(endedEarly > 0, `${endedEarly} pages ended early, at the bound`);
    t.ok(severalPages >= RUNS / 10, `${severalPages} searches of several pages (${pagesFollowed} pages in all)`);
  });
}

/**
 * `allows` allow rules, each on its own attribute with a long value (so that no two merge into one
 * `in`), then a deny rule that they exempt from: a resource one of them allows is allowed even where
 * the deny rule holds, which a plan states only with the exemption, too long for the smallest plan size.
 */
const exemptingPolicy = (allows: number) => ({
  name: 'exemptions',
  rules: [
    ...Array.from({ length: allows }, (_, index) => ({
      name: `allow-${index}`,
      effect: 'allow',
      resource_conditions: [{ path: `attributes.a${index}`, operator: '==', value: `exempted-by-rule-${index}-${'x'.repeat(24)}` }],
      actions: ['read'],
    })),
    { name: 'deny-flagged', effect: 'deny', resource_conditions: [{ path: 'attributes.flagged', operator: '==', value: true }], actions: ['read'] },
    { name: 'allow-public', effect: 'allow', resource_conditions: [{ path: 'attributes.public', operator: '==', value: true }], actions: ['read'] },
  ],
});

for (const [allows, plannedAs] of [
  [8, 'a coarse plan (exact: false)'],
  [20, 'no plan (too large to state even coarsely)'],
] as const) {
  t.test(`where the subject's plan would be ${plannedAs}, each candidate is checked: the results are still exact`, async (t) => {
    const server = await startServer({ maxPlanSize: 1024 });
    t.teardown(server.close);
    await succeeded(server, 'POST', '/admin/policies', exemptingPolicy(allows));
    const exempted = `exempted-by-rule-0-${'x'.repeat(24)}`;
    await succeeded(server, 'POST', REGISTER_MANY, [
      { uri: 'doc:exempted-and-flagged', type: 'resource', attributes: { a0: exempted, flagged: true } },
      { uri: 'doc:flagged', type: 'resource', attributes: { public: true, flagged: true } },
      { uri: 'doc:public', type: 'resource', attributes: { public: true } },
      { uri: 'doc:private', type: 'resource', attributes: { public: false } },
    ]);
    const planned = await server.call('POST', '/plan', { principal: { uri: 'user:ada' }, action: 'read' });
    if (allows === 8) t.strictSame([planned.status, planned.body.exact], [200, false], 'the plan is coarse');
    else t.equal(planned.status, 400, 'no plan is made');
    const search = await succeeded(server, 'POST', SEARCH, { subject: { type: 'user', id: 'ada' }, action: { name: 'read' }, resource: { type: 'doc' } });
    t.strictSame(search.results, [{ type: 'doc', id: 'exempted-and-flagged' }, { type: 'doc', id: 'public' }], 'the exempted resource is found, the flagged one is not');
  });
}

t.test('a large registry: each search request decides at most --search-max-candidates entities, its page ending early with a token to go on from, and checks are answered while it runs', async (t) => {
  const server = await startServer({ bulkRegisterMaxEntities: 5000 });
  t.teardown(server.close);
  const bound = server.config.searchMaxCandidates;
  const size = 2 * bound + bound / 2;
  const uriOf = (index: number) => `user:${String(index).padStart(6, '0')}`;
  // The three chosen ones are at the far end of the uri order: every candidate before them must be decided.
  const chosen = [size - 3, size - 2, size - 1].map(uriOf);
  for (let from = 0; from < size; from += 5000) {
    const batch = Array.from({ length: Math.min(5000, size - from) }, (_, offset) => uriOf(from + offset));
    await succeeded(server, 'POST', REGISTER_MANY, batch.map((uri) => ({ uri, type: 'principal', attributes: { chosen: chosen.includes(uri) } })));
  }
  const isChosen = [{ path: 'attributes.chosen', operator: '==', value: true }];
  await succeeded(server, 'POST', '/admin/policies', {
    name: 'chosen',
    rules: [
      { name: 'chosen may act', effect: 'allow', principal_conditions: isChosen, actions: ['act'] },
      { name: 'chosen may be read', effect: 'allow', resource_conditions: isChosen, actions: ['read'] },
    ],
  });
  const expected = chosen.map((uri) => ({ type: 'user', id: uri.slice('user:'.length) }));

  for (const [path, body] of [
    ['/access/v1/search/subject', { subject: { type: 'user' }, action: { name: 'act' }, resource: { type: 'doc', id: '1' } }],
    ['/access/v1/search/resource', { subject: { type: 'user', id: 'ada' }, action: { name: 'read' }, resource: { type: 'user' } }],
  ] as const) {
    const pages: SearchPage[] = [];
    let token: string | undefined;
    do {
      pages.push((await succeeded(server, 'POST', path, { ...body, ...(token === undefined ? {} : { page: { token } }) })) as SearchPage);
      token = pages.at(-1)!.page.next_token;
    } while (token !== '' && pages.length < 10);
    t.strictSame(
      pages.map((page) => page.page),
      [{ next_token: pages[0]!.page.next_token, count: 0 }, { next_token: pages[1]!.page.next_token, count: 0 }, { next_token: '', count: 3 }],
      `${path}: two pages end at the bound with no result and a token, the third holds the results`,
    );
    t.ok(pages[0]!.page.next_token !== '' && pages[1]!.page.next_token !== '', `${path}: the pages that end early say there is more`);
    t.strictSame(pages.flatMap((page) => page.results), expected, `${path}: every result, once`);

    // Checks sent one after another while a search decides its 10,000 candidates are answered between its slices.
    let searching = true;
    const search = succeeded(server, 'POST', path, body).finally(() => (searching = false));
    let answeredMeanwhile = 0;
    while (searching) {
      const check = await server.call('POST', '/check', { principal: { uri: uriOf(1) }, resource: { uri: 'doc:1' }, action: 'act' });
      t.equal(check.status, 200);
      if (searching) answeredMeanwhile++;
    }
    await search;
    t.ok(answeredMeanwhile >= 2, `${path}: ${answeredMeanwhile} checks answered while the search ran`);
  }
});
