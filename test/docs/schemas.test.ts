import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { DEFAULT_CONFIG } from '../../src/config.js';
import { codeBlocks, curlSteps, readDocument, section } from '../helpers/markdown.js';
import { scratchDir, startServer } from '../helpers/server.js';

/**
 * docs/schemas.md's example replayed from the document: the schemas it shows written to a file, a
 * server started with them under `reject`, each curl command sent as written and its answer exactly
 * the JSON shown, with the status the story gives it (refused, taken, refused, refused, decided, refused).
 */

const DOCUMENT = readDocument('docs/schemas.md');
const EXAMPLE = section(DOCUMENT, 'An example');
const BASE = `http://${DEFAULT_CONFIG.host}:${DEFAULT_CONFIG.port}`;

t.test('the example, as the document shows it', async (t) => {
  const schemas = codeBlocks(EXAMPLE).find((block) => block.lang === 'json')!.text;
  t.match(EXAMPLE, 'verdict start --schemas schemas.json --schema-enforcement reject');
  const schemasFile = join(scratchDir(t), 'schemas.json');
  writeFileSync(schemasFile, schemas);
  const server = await startServer({ schemasFile, schemaEnforcement: 'reject' });
  t.teardown(server.close);

  const steps = curlSteps(EXAMPLE);
  const statuses = [422, 200, 400, 400, 200, 422];
  t.equal(steps.length, statuses.length, 'a refused policy, the corrected one, two refused checks, a decided one, a refused registration');
  for (const [index, { curl, exact }] of steps.entries()) {
    const label = `step ${index + 1}: ${curl.method} ${curl.url.slice(BASE.length)}`;
    t.ok(curl.url.startsWith(BASE), `${label}: aimed at the default address`);
    const response = await request(server.url + curl.url.slice(BASE.length), { method: curl.method as 'POST', headers: curl.headers, body: curl.body });
    const text = await response.body.text();
    t.equal(response.statusCode, statuses[index], `${label}: status`);
    if (exact !== undefined) t.equal(text, exact, `${label}: the answer the document shows, byte for byte`);
  }
});

t.test('the admin API example, as the document shows it', async (t) => {
  const example = section(DOCUMENT, 'Managed through the admin API');
  t.match(example, 'verdict start --schema-enforcement reject');
  const server = await startServer({ schemaEnforcement: 'reject' });
  t.teardown(server.close);
  const steps = curlSteps(example);
  const statuses = [200, 200, 400, 200];
  t.equal(steps.length, statuses.length, 'a stored policy, the schemas written with its re-check, a refused check, the history');
  for (const [index, { curl, exact }] of steps.entries()) {
    const label = `step ${index + 1}: ${curl.method} ${curl.url.slice(BASE.length)}`;
    t.ok(curl.url.startsWith(BASE), `${label}: aimed at the default address`);
    const response = await request(server.url + curl.url.slice(BASE.length), { method: curl.method as 'POST', headers: curl.headers, body: curl.body });
    const text = await response.body.text();
    t.equal(response.statusCode, statuses[index], `${label}: status`);
    if (exact !== undefined) t.equal(text, exact, `${label}: the answer the document shows, byte for byte`);
    if (index === 3) t.match(JSON.parse(text), { records: [{ operation: 'schemas.replace', target: 'schemas', version: 1, before: null }], next_cursor: null }, `${label}: the record the document describes`);
  }
  t.equal(steps.filter((step) => step.exact !== undefined).length, 2, 'the schema write and the refused check are shown exactly');
});

t.test('the document names every flag it relies on as configuration.md does', async (t) => {
  const configuration = readDocument('docs/configuration.md');
  for (const flag of ['--schemas', '--schema-enforcement']) {
    t.match(DOCUMENT, flag);
    t.match(configuration, `| \`${flag}\` |`);
  }
  t.match(configuration, '(schemas.md)');
});
