import type { Test } from 'tap';
import { readFileSync } from 'node:fs';
import { request } from 'undici';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { TestServer } from './server.js';

/**
 * Reads the repository's Markdown documentation and replays its curl examples against a real
 * server, so that the documents and the server cannot drift apart.
 */

/** A document by its path from the repository root (tests run compiled, from <outDir>/test/). */
export function readDocument(path: string): string {
  return readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');
}

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const PLACEHOLDER = '…';

export interface Block {
  kind: 'code';
  lang: string;
  text: string;
}
interface Prose {
  kind: 'text';
  text: string;
}
type Segment = Block | Prose;

export interface CurlCommand {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
}

export interface Step {
  curl: CurlCommand;
  /** Exact JSON text from a ```json block. */
  exact?: string;
  /** Inline JSON with "…" for values that vary (timestamps). */
  template?: string;
}

/** The `## title` section of a document, up to the next `## ` heading. */
export function section(markdown: string, title: string): string {
  const start = markdown.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`document has no "## ${title}" section`);
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

/** The fenced code blocks of `markdown`, in order. */
export function codeBlocks(markdown: string): Block[] {
  return segments(markdown).filter((segment): segment is Block => segment.kind === 'code');
}

const joinContinuations = (shell: string): string => shell.replace(/\\\n/g, ' ');

/** The curl commands of these documents: `curl -s [-X M] URL [-H 'h: v']... [-d 'body']`. */
function parseCurl(shell: string): CurlCommand {
  const line = joinContinuations(shell).trim();
  if (!line.startsWith('curl ')) throw new Error(`not a curl command: ${line}`);
  const body = /\s-d\s+'([^']*)'/.exec(line)?.[1];
  const method = /\s-X\s+([A-Z]+)/.exec(line)?.[1] ?? (body === undefined ? 'GET' : 'POST');
  const url = /\s'?(https?:\/\/[^\s']+)'?/.exec(line)?.[1];
  if (url === undefined) throw new Error(`no URL in: ${line}`);
  const headers: Record<string, string> = {};
  for (const match of line.matchAll(/\s-H\s+'([^':]+):\s*([^']*)'/g)) headers[match[1]!.toLowerCase()] = match[2]!;
  return { method, url, headers, body };
}

/**
 * Every curl command of `markdown`'s ```sh blocks, in order, as written: a command may span lines
 * (continuations, or a quoted body over several lines) and a block may hold several.
 */
export function curlCommands(markdown: string): CurlCommand[] {
  const commands: CurlCommand[] = [];
  for (const block of codeBlocks(markdown).filter((each) => each.lang === 'sh')) {
    const shell = joinContinuations(block.text);
    for (const match of shell.matchAll(/^curl [^'\n]*(?:'[^']*'[^'\n]*)*/gm)) commands.push(parseCurl(match[0]));
  }
  return commands;
}

/** Each ```sh curl block with the answer shown after it: a ```json block, or inline JSON in the next sentence. */
export function curlSteps(markdown: string): Step[] {
  const parts = segments(markdown);
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

/**
 * Sends each step, as the document writes it, to `server` (the document's URLs name the default
 * address) and checks the answer: 200 with exactly the JSON shown, or the inline template. Returns
 * each step's parsed answer.
 */
export async function replay(t: Test, server: TestServer, steps: readonly Step[]): Promise<unknown[]> {
  const base = `http://${DEFAULT_CONFIG.host}:${DEFAULT_CONFIG.port}`;
  const answers: unknown[] = [];
  for (const [index, step] of steps.entries()) {
    const { curl } = step;
    const label = `step ${index + 1}: ${curl.method} ${curl.url.slice(base.length)}`;
    t.ok(curl.url.startsWith(base), `${label}: aimed at the default address`);
    t.equal(curl.headers['content-type'], 'application/json', `${label}: sends JSON`);
    t.ok(curl.body !== undefined, `${label}: has a body`);
    t.doesNotThrow(() => JSON.parse(curl.body!), `${label}: the document's body is valid JSON`);
    const response = await request(server.url + curl.url.slice(base.length), {
      method: curl.method as 'POST',
      headers: curl.headers,
      body: curl.body,
    });
    const text = await response.body.text();
    t.equal(response.statusCode, 200, `${label}: 200`);
    t.match(String(response.headers['content-type']), /^application\/json/, `${label}: JSON answer`);
    const actual = JSON.parse(text);
    answers.push(actual);
    if (step.exact !== undefined) {
      t.strictSame(actual, JSON.parse(step.exact), `${label}: the answer the document shows`);
      t.equal(text, step.exact, `${label}: byte for byte`);
    } else if (step.template !== undefined) {
      matchTemplate(t, actual, JSON.parse(step.template), label);
    }
  }
  return answers;
}

/** The rows of the first Markdown table after `heading` (a line of the document), cells trimmed, header excluded. */
export function tableAfter(markdown: string, heading: string): string[][] {
  const start = markdown.indexOf(`${heading}\n`);
  if (start < 0) throw new Error(`document has no "${heading}"`);
  const lines = markdown.slice(start).split('\n');
  const first = lines.findIndex((line) => line.startsWith('|'));
  const rows: string[][] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    // GFM escapes a pipe inside a cell as \|.
    rows.push(line.trim().slice(1, -1).split(/(?<!\\)\|/).map((cell) => cell.trim().replaceAll('\\|', '|')));
  }
  return rows;
}

/** The text of every `code span` in a table cell or sentence. */
export const codeSpans = (text: string): string[] => [...text.matchAll(/`([^`]+)`/g)].map((match) => match[1]!);
