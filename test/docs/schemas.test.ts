import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { codeBlocks, curlSteps, readDocument, section } from '../helpers/markdown.js';
import { scratchDir, startServer, type TestServer } from '../helpers/server.js';

/**
 * docs/schemas.md's example replayed from the document: the schemas it shows written to a file, a
 * server started with them under `reject`, each curl command sent as written and its answer exactly
 * the JSON shown, with the status the story gives it (refused, taken, refused, refused, decided, refused).
 */

const DOCUMENT = readDocument('docs/schemas.md');
const EXAMPLE = section(DOCUMENT, 'An example');
const BASE = `http://${DEFAULT_CONFIG.host}:${DEFAULT_CONFIG.port}`;

/**
 * Sends each curl command of `example` to `server` as written, in order: each answer has its status
 * in `statuses` and, where the document shows it, exactly the JSON shown. Resolves with the answers' texts.
 */
async function replay(t: Test, server: TestServer, example: string, statuses: number[], story: string): Promise<string[]> {
  const steps = curlSteps(example);
  t.equal(steps.length, statuses.length, story);
  const answers: string[] = [];
  for (const [index, { curl, exact }] of steps.entries()) {
    const label = `step ${index + 1}: ${curl.method} ${curl.url.slice(BASE.length)}`;
    t.ok(curl.url.startsWith(BASE), `${label}: aimed at the default address`);
    const response = await request(server.url + curl.url.slice(BASE.length), { method: curl.method as 'POST', headers: curl.headers, body: curl.body });
    const text = await response.body.text();
    t.equal(response.statusCode, statuses[index], `${label}: status`);
    if (exact !== undefined) t.equal(text, exact, `${label}: the answer the document shows, byte for byte`);
    answers.push(text);
  }
  return answers;
}

t.test('the example, as the document shows it', async (t) => {
  const schemas = codeBlocks(EXAMPLE).find((block) => block.lang === 'json')!.text;
  t.match(EXAMPLE, 'verdict start --schemas schemas.json --schema-enforcement reject');
  const schemasFile = join(scratchDir(t), 'schemas.json');
  writeFileSync(schemasFile, schemas);
  const server = await startServer({ schemasFile, schemaEnforcement: 'reject' });
  t.teardown(server.close);
  await replay(t, server, EXAMPLE, [422, 200, 400, 400, 200, 422], 'a refused policy, the corrected one, two refused checks, a decided one, a refused registration');
});

t.test('the admin API example, as the document shows it', async (t) => {
  const example = section(DOCUMENT, 'Managed through the admin API');
  t.match(example, 'verdict start --schema-enforcement reject');
  const server = await startServer({ schemaEnforcement: 'reject' });
  t.teardown(server.close);
  const answers = await replay(t, server, example, [200, 200, 400, 200], 'a stored policy, the schemas written with its re-check, a refused check, the history');
  t.equal(curlSteps(example).filter((step) => step.exact !== undefined).length, 2, 'the schema write and the refused check are shown exactly');
  t.match(JSON.parse(answers[3]!), { records: [{ operation: 'schemas.replace', target: 'schemas', version: 1, before: null }], next_cursor: null }, 'the history has the record the document describes');
});

t.test('the document names every flag it relies on as configuration.md does', async (t) => {
  const configuration = readDocument('docs/configuration.md');
  for (const flag of ['--schemas', '--schema-enforcement']) {
    t.match(DOCUMENT, flag);
    t.match(configuration, `| \`${flag}\` |`);
  }
  t.match(configuration, '(schemas.md)');
});
