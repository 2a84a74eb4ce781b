import t from 'tap';
import { execFile, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { request } from 'undici';
import { codeBlocks, curlSteps, readDocument, replay, section } from '../helpers/markdown.js';
import { scratchDir, startServer } from '../helpers/server.js';

// The Node client as people get it: built from its own folder, packed by npm, installed into an app
// that has nothing else, and run there against a real Verdict: the README's example and an Express
// guard. The install reads npm's cache first (`npm ci` filled it), the registry only for what is missing.

const run = promisify(execFile);
const CHECKOUT = process.cwd();
const CLIENT_FOLDER = join(CHECKOUT, 'clients/node');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const EXPRESS_VERSION = (JSON.parse(readFileSync(join(CHECKOUT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies.express!;

t.setTimeout(300_000);

t.test('the packed client holds only its own modules, installs with undici alone, and runs the README example and an Express guard', async (t) => {
  await run(process.execPath, [join(CHECKOUT, 'node_modules/typescript/bin/tsc'), '-p', join(CLIENT_FOLDER, 'tsconfig.json')]);
  const packs = scratchDir(t);
  const [packed] = JSON.parse((await run(NPM, ['pack', '--json', '--pack-destination', packs], { cwd: CLIENT_FOLDER })).stdout) as { filename: string; files: { path: string }[] }[];
  const files = packed!.files.map((file) => file.path).sort();
  t.same(files.filter((path) => !/^dist\/[a-z-]+\.(js|d\.ts)$/.test(path)), ['LICENSE', 'NOTICE', 'package.json'], 'nothing but its own modules, its licence and its manifest');
  t.ok(files.includes('dist/index.js') && files.includes('dist/wire.d.ts'), `its modules and types: ${files.length} files`);

  const app = scratchDir(t);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'scratch-app', private: true, type: 'module' }));
  await run(NPM, ['install', '--prefer-offline', '--no-audit', '--no-fund', '--no-package-lock', join(packs, packed!.filename), `express@${EXPRESS_VERSION}`], { cwd: app, timeout: 240_000 });
  const installed = JSON.parse(readFileSync(join(app, 'node_modules/@verdict-authz/client/package.json'), 'utf8')) as { dependencies: Record<string, string> };
  t.same(Object.keys(installed.dependencies), ['undici'], 'its one runtime dependency');

  const server = await startServer();
  t.teardown(server.close);
  await replay(t, server, curlSteps(section(readDocument('README.md'), 'First example')));
  const [example] = codeBlocks(section(readDocument('README.md'), 'From a Node app')).filter((block) => block.lang === 'js');
  writeFileSync(join(app, 'example.mjs'), example!.text.replaceAll('http://127.0.0.1:8421', server.url));
  const printed = (await run(process.execPath, ['example.mjs'], { cwd: app, timeout: 30_000 })).stdout;
  t.equal(printed.trim(), /\/\/ (.*)$/m.exec(example!.text)![1], "the README's example, as written, from the installed package");

  writeFileSync(
    join(app, 'guarded.mjs'),
    `import express from 'express';
import { expressGuard, VerdictClient } from '@verdict-authz/client';
const verdict = new VerdictClient({ url: process.argv[2] });
const app = express();
app.get('/laptops/:id', expressGuard(verdict, (request) => ({
  principal: { uri: \`user:\${request.headers['x-user']}\` },
  resource: { attributes: { kind: 'laptop' } },
  action: 'administer',
})), (request, response) => response.json({ id: request.params.id }));
const listening = app.listen(0, '127.0.0.1', () => console.log(listening.address().port));
`,
  );
  const guarded = spawn(process.execPath, ['guarded.mjs', server.url], { cwd: app, stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => void guarded.kill());
  const port = await new Promise<string>((resolve) => guarded.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())));
  const get = async (user: string) => {
    const response = await request(`http://127.0.0.1:${port}/laptops/7`, { headers: { 'x-user': user } });
    return { status: response.statusCode, body: await response.body.json() };
  };
  t.match(await get('alice'), { status: 200, body: { id: '7' } }, 'an IT admin gets through');
  t.match(await get('bob'), { status: 403, body: { detail: 'Forbidden' } }, 'anyone else is refused');
});
