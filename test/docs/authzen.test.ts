import t from 'tap';
import { request } from 'undici';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { curlSteps, readDocument, replay, section } from '../helpers/markdown.js';
import { startServer } from '../helpers/server.js';

/**
 * docs/authzen.md's example replayed from the document: each curl command sent to a real server, its
 * answer exactly the JSON shown (or the inline answer, "…" standing for timestamps). The metadata
 * document, fetched with GET, is compared with the addresses rewritten to the test server's.
 */

const DOCUMENT = readDocument('docs/authzen.md');
const DEFAULT_ADDRESS = `http://${DEFAULT_CONFIG.host}:${DEFAULT_CONFIG.port}`;

t.test('the example, as the document shows it', async (t) => {
  const steps = curlSteps(section(DOCUMENT, 'An example'));
  const posts = steps.filter((step) => step.curl.method === 'POST');
  const [metadata, ...others] = steps.filter((step) => step.curl.method === 'GET');
  t.equal(posts.length, 10, 'a policy, two registrations, three decisions, a resource search, an explained one, a policy on the action and context and their decisions');
  t.equal(others.length, 0);
  const server = await startServer();
  t.teardown(server.close);
  const answers = await replay(t, server, posts);
  const explained = JSON.stringify(answers[posts.findIndex((step) => step.curl.url.includes('explain=true'))]);
  const shown = /The answer starts `([^`…]*)…`/.exec(section(DOCUMENT, 'An example'))?.[1];
  t.ok(shown !== undefined && explained.startsWith(shown), `the explained answer starts as shown: ${explained.slice(0, 120)}`);

  t.equal(metadata!.curl.url, `${DEFAULT_ADDRESS}/.well-known/authzen-configuration`);
  const response = await request(server.url + metadata!.curl.url.slice(DEFAULT_ADDRESS.length));
  t.equal(response.statusCode, 200);
  t.equal(await response.body.text(), metadata!.exact!.replaceAll(DEFAULT_ADDRESS, server.url), 'byte for byte, at the address fetched from');
});

t.test('the README points to the AuthZEN document and names its endpoints', async (t) => {
  const readme = readDocument('README.md');
  t.match(readme, '(docs/authzen.md)');
  for (const path of ['/access/v1/evaluation', '/access/v1/evaluations', '/access/v1/search/subject', '/access/v1/search/resource', '/access/v1/search/action', '/.well-known/authzen-configuration']) {
    t.match(readme, path);
  }
});
