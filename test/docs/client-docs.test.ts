import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { codeBlocks, curlSteps, readDocument, replay, section } from '../helpers/markdown.js';
import { scratchDir, startServer } from '../helpers/server.js';

// The Node client's examples in README.md and docs/client.md, run as written by Node against a real
// Verdict, with the package name pointing at this checkout's client.

const CLIENT = pathToFileURL(join(process.cwd(), 'dist/clients/node/src/index.js')).href;
const run = promisify(execFile);

/** Runs a JavaScript example as a module against `url`; resolves with what it printed. */
async function runExample(t: Test, code: string, url: string): Promise<string> {
  const file = join(scratchDir(t), 'example.mjs');
  writeFileSync(file, code.replaceAll("'@verdict-authz/client'", `'${CLIENT}'`).replaceAll('http://127.0.0.1:8421', url));
  return (await run(process.execPath, [file], { timeout: 30_000 })).stdout;
}

t.test("README's Node app example prints what its comment says, after the First example", async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  await replay(t, server, curlSteps(section(readDocument('README.md'), 'First example')));
  const [example] = codeBlocks(section(readDocument('README.md'), 'From a Node app')).filter((block) => block.lang === 'js');
  t.ok(example !== undefined);
  t.ok(example!.text.trim().split('\n').length <= 11, 'about ten lines');
  const printed = await runExample(t, example!.text, server.url);
  t.equal(printed.trim(), /\/\/ (.*)$/m.exec(example!.text)![1]);
});

t.test("docs/client.md's first example decides, and every option of the client is in its table", async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const document = readDocument('docs/client.md');
  const [example] = codeBlocks(document).filter((block) => block.lang === 'js');
  const printed = await runExample(t, `${example!.text}\nconsole.log(JSON.stringify({ allowed, reason }));\nawait verdict.close();\n`, server.url);
  t.same(JSON.parse(printed), { allowed: false, reason: 'Action denied by default because there are no policies' });
  const body = (file: string, name: string) => /export interface \w+Options[^{]*\{([\s\S]*?)\n\}/.exec(readDocument(file).slice(readDocument(file).indexOf(`export interface ${name}`)))![1]!;
  const source = body('clients/node/src/client.ts', 'ClientOptions') + body('clients/node/src/transport.ts', 'TransportOptions');
  const options = [...source.matchAll(/^  ([a-zA-Z]+)\??: /gm)].map((match) => match[1]!);
  t.ok(options.length >= 10, `${options.length} options`);
  const table = section(document, 'Options');
  for (const option of new Set(options)) t.match(table, `| \`${option}\` |`, `${option} is documented`);
});
