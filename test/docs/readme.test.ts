import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'undici';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { codeSpans, curlSteps, readDocument, replay, section } from '../helpers/markdown.js';
import { Query } from 'mingo';
import { startServer } from '../helpers/server.js';

/**
 * README.md's "First example", replayed from the README itself: every curl command is parsed out of
 * the ```sh blocks and sent to a real server, and the answer must be exactly the ```json block (or,
 * for the registration, the inline JSON with "…" standing for timestamps) that follows it. When the
 * README and the server drift apart, this fails.
 */

const README = readDocument('README.md');
const PACKAGE = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> };

t.test('the README documents the defaults the server has', async (t) => {
  t.match(README, `http://${DEFAULT_CONFIG.host}:${DEFAULT_CONFIG.port}`, 'README names the default address');
  t.match(README, `embedded store in ${DEFAULT_CONFIG.dataDir}`, 'README names the default data directory');
  t.ok(PACKAGE.scripts.start, 'npm start exists');
  t.ok(PACKAGE.scripts.test, 'npm test exists');
  const server = await startServer();
  t.teardown(server.close);
  const docs = await request(`${server.url}/docs`);
  await docs.body.text();
  t.ok([200, 301, 302].includes(docs.statusCode), `/docs is served (${docs.statusCode})`);
});

t.test("README's owner example, replayed exactly", async (t) => {
  const steps = curlSteps(section(README, 'The owner of a document, and other relations'));
  t.equal(steps.length, 2, 'a policy and a check');
  t.ok(steps.every((step) => step.exact !== undefined), 'each with its answer');
  const server = await startServer();
  t.teardown(server.close);
  await replay(t, server, steps);
});

t.test("README's First example, replayed exactly", async (t) => {
  const example = section(README, 'First example');
  const steps = curlSteps(example);
  t.equal(steps.length, 6, 'six curl commands');
  t.equal(steps.filter((step) => step.exact !== undefined).length, 5, 'five with a JSON answer block');
  t.equal(steps.filter((step) => step.template !== undefined).length, 1, 'one with an inline answer');

  const server = await startServer();
  t.teardown(server.close);
  const answers = await replay(t, server, steps);

  // "with the time of registration in each registered_at and updated_at"
  const registration = answers[steps.findIndex((step) => step.template !== undefined)] as {
    registered_at: string;
    attributes: { registered_at: string; updated_at: string }[];
  };
  for (const attribute of registration.attributes) {
    t.equal(attribute.registered_at, registration.registered_at, 'attribute registered_at is the registration time');
    t.equal(attribute.updated_at, registration.registered_at, 'attribute updated_at is the registration time');
  }

  // The closing sentence: supplying a conflicting attribute next to Alice's URI is refused.
  const sentence = /adding\s+`([^`]+)`\s+next\s+to\s+Alice's\s+URI\s+is\s+refused\s+with\s+(\d{3})\s+`([^`]+)`/.exec(example);
  t.ok(sentence, 'the README states the conflict rule');
  if (sentence === null) return;
  const [, fragment, status, detail] = sentence;
  const aliceCheck = steps.find((step) => step.curl.url.endsWith('/check') && JSON.parse(step.curl.body!).principal?.uri === 'user:alice');
  t.ok(aliceCheck, 'a check names Alice by URI');
  const request_ = JSON.parse(aliceCheck!.curl.body!);
  request_.principal = { ...request_.principal, ...JSON.parse(`{${fragment}}`) };
  const refused = await server.call('POST', '/check', request_);
  t.equal(refused.status, Number(status), `refused with ${status}`);
  t.strictSame(refused.body, { detail }, 'with the message the README quotes');
});

t.test("README's plan: after the first example, Alice's laptops by a MongoDB filter", async (t) => {
  const plans = section(README, 'Which resources may Alice administer?');
  const steps = curlSteps(plans);
  t.equal(steps.length, 1, 'one curl command, with its answer');
  const server = await startServer();
  t.teardown(server.close);
  await replay(t, server, curlSteps(section(README, 'First example')));
  const [planned] = (await replay(t, server, steps)) as [{ mongodb: Record<string, unknown> }];

  // "Among {...}, {...} ... it finds `asset:1`": the filter, run by mingo over those assets.
  const sentence = /Among ([\s\S]*?)\s+it\s+finds\s+((?:`[^`]+`(?:,\s*|\s+and\s+)?)+)/.exec(plans);
  t.ok(sentence, 'the README names the assets and what the filter finds');
  if (sentence === null) return;
  const assets = codeSpans(sentence[1]!).map((text) => JSON.parse(text) as { uri: string; attributes: Record<string, unknown> });
  const query = new Query(planned.mongodb, {});
  t.strictSame(assets.filter((asset) => query.test(asset)).map((asset) => asset.uri), codeSpans(sentence[2]!), 'the filter finds what the README says');
  const checks = await server.call('POST', '/check/bulk', assets.map((resource) => ({ principal: { uri: 'user:alice' }, resource, action: 'administer' })));
  t.strictSame(
    assets.filter((_, index) => checks.body[index].allowed).map((asset) => asset.uri),
    codeSpans(sentence[2]!),
    'exactly the assets a check allows her',
  );
});

t.test('the README and docs/ point nowhere outside the repository', async (t) => {
  const documents = ['README.md', ...readdirSync(new URL('../../../docs/', import.meta.url)).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
  for (const path of documents) {
    const text = readDocument(path);
    t.notMatch(text, /decisions\.md|spec\/|DESIGN\.md|\/work\//, `${path} names no file outside the repository`);
    for (const [, target] of text.matchAll(/\]\(([^)#]+)(#[^)]*)?\)/g)) {
      if (/^https?:/.test(target!)) continue;
      const resolved = new URL(target!, new URL(`../../../${path}`, import.meta.url));
      t.doesNotThrow(() => readFileSync(resolved), `${path} links to ${target}, which exists`);
    }
  }
});

t.test("the README's first screen says that npm ci may compile better-sqlite3, and for how long", async (t) => {
  const firstScreen = readDocument('README.md').split('\n').slice(0, 25).join('\n');
  t.match(firstScreen, /`npm ci`[^]*better-sqlite3[^]*compiles it from\s+source[^]*about four minutes/);
});
