import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { request } from 'undici';
import { DEFAULT_CONFIG } from '../src/config.js';
import { startServer } from './helpers/server.js';

/**
 * README.md's "First example", replayed from the README itself: every curl command is parsed out of
 * the ```sh blocks and sent to a real server, and the answer must be exactly the ```json block (or,
 * for the registration, the inline JSON with "…" standing for timestamps) that follows it. When the
 * README and the server drift apart, this fails.
 */

// Compiled to <outDir>/test/readme.test.js; the README is at the repository root.
const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const PACKAGE = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> };
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const PLACEHOLDER = '…';

interface Block {
  kind: 'code';
  lang: string;
  text: string;
}
interface Prose {
  kind: 'text';
  text: string;
}
type Segment = Block | Prose;

interface CurlCommand {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
}

interface Step {
  curl: CurlCommand;
  /** Exact JSON text from a ```json block. */
  exact?: string;
  /** Inline JSON with "…" for values that vary (timestamps). */
  template?: string;
}

function section(markdown: string, title: string): string {
  const start = markdown.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`README has no "## ${title}" section`);
  const rest = markdown.slice(start + 1);
  const next = rest.indexOf('\n## ', 1);
  return next < 0 ? rest : rest.slice(0, next);
}

function segments(markdown: string): Segment[] {
  const result: Segment[] = [];
  const fence = /^```(\w*)\n([\s\S]*?)^```$/gm;
  let last = 0;
  for (const match of markdown.matchAll(fence)) {
    result.push({ kind: 'text', text: markdown.slice(last, match.index) });
    result.push({ kind: 'code', lang: match[1]!, text: match[2]! });
    last = match.index! + match[0].length;
  }
  result.push({ kind: 'text', text: markdown.slice(last) });
  return result;
}

/** The curl commands of this README: `curl -s [-X M] URL [-H 'h: v']... [-d 'body']`. */
function parseCurl(shell: string): CurlCommand {
  const line = shell.replace(/\\\n/g, ' ').trim();
  if (!line.startsWith('curl ')) throw new Error(`not a curl command: ${line}`);
  const body = /\s-d\s+'([^']*)'/.exec(line)?.[1];
  const method = /\s-X\s+([A-Z]+)/.exec(line)?.[1] ?? (body === undefined ? 'GET' : 'POST');
  const url = /\s'?(https?:\/\/[^\s']+)'?/.exec(line)?.[1];
  if (url === undefined) throw new Error(`no URL in: ${line}`);
  const headers: Record<string, string> = {};
  for (const match of line.matchAll(/\s-H\s+'([^':]+):\s*([^']*)'/g)) headers[match[1]!.toLowerCase()] = match[2]!;
  return { method, url, headers, body };
}

function steps(example: string): Step[] {
  const parts = segments(example);
  const result: Step[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (part.kind !== 'code' || part.lang !== 'sh' || !part.text.includes('curl ')) continue;
    const step: Step = { curl: parseCurl(part.text) };
    const following = parts[i + 1];
    const afterThat = parts[i + 2];
    if (following?.kind === 'text' && following.text.trim() === '' && afterThat?.kind === 'code' && afterThat.lang === 'json') {
      step.exact = afterThat.text.trim();
    } else if (following?.kind === 'text') {
      const inline = /`(\{[^`]*\})`/.exec(following.text)?.[1];
      if (inline !== undefined) step.template = inline;
    }
    result.push(step);
  }
  return result;
}

/** actual matches template: same keys in the same order, same values, "…" matches any ISO-8601 UTC timestamp. */
function matchTemplate(t: Test, actual: unknown, template: unknown, at: string): void {
  if (template === PLACEHOLDER) {
    t.match(actual, ISO_UTC, `${at} is an ISO-8601 UTC timestamp`);
    return;
  }
  if (Array.isArray(template)) {
    t.ok(Array.isArray(actual) && actual.length === template.length, `${at}: list of ${template.length}`);
    template.forEach((item, index) => matchTemplate(t, (actual as unknown[])?.[index], item, `${at}[${index}]`));
    return;
  }
  if (template !== null && typeof template === 'object') {
    t.same(Object.keys((actual ?? {}) as object), Object.keys(template), `${at}: keys in order`);
    for (const [key, value] of Object.entries(template)) matchTemplate(t, (actual as Record<string, unknown>)?.[key], value, `${at}.${key}`);
    return;
  }
  t.strictSame(actual, template, at);
}

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

t.test("README's First example, replayed exactly", async (t) => {
  const example = section(README, 'First example');
  const replay = steps(example);
  t.equal(replay.length, 6, 'six curl commands');
  t.equal(replay.filter((step) => step.exact !== undefined).length, 5, 'five with a JSON answer block');
  t.equal(replay.filter((step) => step.template !== undefined).length, 1, 'one with an inline answer');

  const server = await startServer();
  t.teardown(server.close);
  const base = `http://${DEFAULT_CONFIG.host}:${DEFAULT_CONFIG.port}`;

  for (const [index, step] of replay.entries()) {
    const { curl } = step;
    const label = `step ${index + 1}: ${curl.method} ${curl.url.slice(base.length)}`;
    t.ok(curl.url.startsWith(base), `${label}: aimed at the default address`);
    t.equal(curl.headers['content-type'], 'application/json', `${label}: sends JSON`);
    t.ok(curl.body !== undefined, `${label}: has a body`);
    t.doesNotThrow(() => JSON.parse(curl.body!), `${label}: the README's body is valid JSON`);
    const response = await request(server.url + curl.url.slice(base.length), {
      method: curl.method as 'POST',
      headers: curl.headers,
      body: curl.body,
    });
    const text = await response.body.text();
    t.equal(response.statusCode, 200, `${label}: 200`);
    t.match(String(response.headers['content-type']), /^application\/json/, `${label}: JSON answer`);
    if (step.exact !== undefined) {
      t.strictSame(JSON.parse(text), JSON.parse(step.exact), `${label}: the answer the README shows`);
      t.equal(text, step.exact, `${label}: byte for byte`);
    } else {
      const template = JSON.parse(step.template!);
      const actual = JSON.parse(text);
      matchTemplate(t, actual, template, label);
      // "with the time of registration in each registered_at and updated_at"
      for (const attribute of actual.attributes ?? []) {
        t.equal(attribute.registered_at, actual.registered_at, `${label}: attribute registered_at is the registration time`);
        t.equal(attribute.updated_at, actual.registered_at, `${label}: attribute updated_at is the registration time`);
      }
    }
  }

  // The closing sentence: supplying a conflicting attribute next to Alice's URI is refused.
  const sentence = /adding\s+`([^`]+)`\s+next\s+to\s+Alice's\s+URI\s+is\s+refused\s+with\s+(\d{3})\s+`([^`]+)`/.exec(example);
  t.ok(sentence, 'the README states the conflict rule');
  if (sentence === null) return;
  const [, fragment, status, detail] = sentence;
  const aliceCheck = replay.find((step) => step.curl.url.endsWith('/check') && JSON.parse(step.curl.body!).principal?.uri === 'user:alice');
  t.ok(aliceCheck, 'a check names Alice by URI');
  const request_ = JSON.parse(aliceCheck!.curl.body!);
  request_.principal = { ...request_.principal, ...JSON.parse(`{${fragment}}`) };
  const refused = await server.call('POST', '/check', request_);
  t.equal(refused.status, Number(status), `refused with ${status}`);
  t.strictSame(refused.body, { detail }, 'with the message the README quotes');
});

t.test('the configuration reference lists every flag and variable of start', async (t) => {
  const { START_OPTIONS } = await import('../src/config.js');
  for (const [name, option] of Object.entries(START_OPTIONS)) {
    t.ok(README.includes(`| \`--${name}\` | \`${option.env}\` |`), `--${name} and ${option.env} have a row`);
  }
});
