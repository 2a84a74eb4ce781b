import t from 'tap';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { request } from 'undici';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { codeBlocks, curlSteps, readDocument, replay, section, type Block } from '../helpers/markdown.js';
import { runVerdict, startVerdict, type RunningVerdict } from '../helpers/child.js';
import type { TestServer } from '../helpers/server.js';

/**
 * README.md's "Policies as code", followed as a new user would, from an empty directory: every
 * ```sh block is carried out in order (files written, `verdict test` run and its output compared
 * with the ```text block shown, the server started on the directory, curl commands sent and
 * answered exactly as the ```json block after them, the file changed with no restart). A block
 * this test does not know how to follow fails it, so the section and the test cannot drift apart.
 */

const README = readDocument('README.md');
const DEFAULT_ADDRESS = `http://${DEFAULT_CONFIG.host}:${DEFAULT_CONFIG.port}`;

t.test('README: Policies as code, from an empty directory to a decision changed without a restart', async (t) => {
  const blocks = codeBlocks(section(README, 'Policies as code'));
  const root = mkdtempSync(join(tmpdir(), 'verdict-readme-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  let cwd = root;
  let server: RunningVerdict | undefined;
  let fileChanged = false;
  const followed: string[] = [];

  for (let index = 0; index < blocks.length; index++) {
    const block = blocks[index]!;
    const next: Block | undefined = blocks[index + 1];
    t.equal(block.lang, 'sh', `block ${index + 1} is a command (outputs are consumed with their command)`);
    const command = block.text.trim();

    if (command.startsWith('alias verdict=')) {
      t.equal(command, 'alias verdict="node $PWD/dist/src/cli.js"', 'verdict is the built CLI of the repository');
      followed.push('alias');
    } else if (command.startsWith('mkdir ')) {
      const [, dirs, into] = /^mkdir -p (.+?) && cd (\S+)$/.exec(command) ?? [];
      t.ok(dirs !== undefined, `understood: ${command}`);
      for (const dir of dirs!.split(' ')) mkdirSync(resolve(cwd, dir), { recursive: true });
      cwd = resolve(cwd, into!);
      followed.push('mkdir');
    } else if (command.startsWith('cat > ')) {
      const [, file, content] = /^cat > (\S+) <<'EOF'\n([\s\S]*)\nEOF$/.exec(command) ?? [];
      t.ok(file !== undefined, `understood: ${command.split('\n')[0]}`);
      writeFileSync(resolve(cwd, file!), `${content}\n`);
      if (server !== undefined) fileChanged = true;
      followed.push(`write ${file}`);
    } else if (command.startsWith('sed -i ')) {
      const [, pattern, replacement, file] = /^sed -i 's\/(.+?)\/(.*?)\/' (\S+)$/.exec(command) ?? [];
      t.ok(file !== undefined, `understood: ${command}`);
      const path = resolve(cwd, file!);
      const before = readFileSync(path, 'utf8');
      const after = before.split('\n').map((line) => line.replace(new RegExp(pattern!), replacement!)).join('\n');
      t.not(after, before, `${command} changes the file`);
      writeFileSync(path, after);
      fileChanged = true;
      followed.push(`sed ${file}`);
    } else if (command.startsWith('verdict test')) {
      const exit = await runVerdict(t, command.split(/\s+/).slice(1), {}, cwd).exited;
      t.equal(exit.code, 0, exit.stderr);
      t.equal(next?.lang, 'text', 'the output is shown');
      t.equal(exit.stdout, next!.text, 'verdict test prints what the README shows');
      index++;
      followed.push('verdict test');
    } else if (command.startsWith('verdict start')) {
      // The README's user gets the default store; a test must name it (STORE is that default).
      server = await startVerdict(t, command.split(/\s+/).slice(2), { cwd, env: { STORE: DEFAULT_CONFIG.store } });
      followed.push('verdict start');
    } else if (command.startsWith('curl ')) {
      t.ok(server !== undefined, 'the server was started before it is asked');
      const [step] = curlSteps(`\`\`\`sh\n${block.text}\`\`\`\n\n\`\`\`json\n${next?.text ?? ''}\`\`\`\n`);
      if (fileChanged) {
        // "Within a moment": the server applies a file change on its own; ask until it has.
        const deadline = Date.now() + 15_000;
        for (;;) {
          const answer = await request(server!.url + step!.curl.url.slice(DEFAULT_ADDRESS.length), { method: 'POST', headers: step!.curl.headers, body: step!.curl.body });
          const text = await answer.body.text();
          if (text === step!.exact || Date.now() > deadline) break;
          await new Promise((resolve) => setImmediate(resolve));
        }
        fileChanged = false;
      }
      await replay(t, { url: server!.url } as TestServer, [step!]);
      index++;
      followed.push('curl');
    } else {
      t.fail(`the README's block ${index + 1} is not one this test can follow: ${command}`);
    }
  }
  t.same(followed, [
    'alias',
    'mkdir',
    'write policies/it-desk.yaml',
    'write tests/it-desk.test.yaml',
    'verdict test',
    'verdict start',
    'curl',
    'sed policies/it-desk.yaml',
    'curl',
  ], 'every step of the section was followed');
});
