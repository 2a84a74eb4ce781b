import t, { type Test } from 'tap';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { DEFAULT_CONFIG, loadConfig, type Config } from '../../src/config/config.js';
import { codeBlocks, curlCommands, readDocument } from '../helpers/markdown.js';
import { scratchDir, startServer } from '../helpers/server.js';

// Every curl command in docs/, sent as written, in the document's order, to the server the document
// says it runs on (the defaults, until a sentence says "Started with `verdict start …`"): a reader who
// pastes them one after another gets an answer, and a refusal only where the document shows that very
// refusal. (The README's are replayed, answers and all, by readme.test.ts.)

const DEFAULT_ADDRESS = `http://${DEFAULT_CONFIG.host}:${DEFAULT_CONFIG.port}`;
const STARTED_WITH = /Started with `verdict start([^`]*)`/g;
const documents = readdirSync(new URL('../../../docs/', import.meta.url)).filter((name) => name.endsWith('.md'));

interface Run {
  /** The flags of `verdict start` the document names for these commands. */
  flags: string[];
  markdown: string;
}

/** The document cut where it starts a server anew. */
function runsOf(markdown: string): Run[] {
  const starts = [...markdown.matchAll(STARTED_WITH)];
  const cuts = [0, ...starts.map((match) => match.index!), markdown.length];
  return cuts.slice(0, -1).map((from, index) => ({
    flags: index === 0 ? [] : starts[index - 1]![1]!.trim().split(/\s+/),
    markdown: markdown.slice(from, cuts[index + 1]),
  }));
}

/**
 * The settings `flags` give, as overrides of the test server's. A file a flag names (`schemas.json`)
 * is the first ```json block of the `##` section the document starts the server in, written to a scratch folder.
 */
function settingsOf(t: Test, flags: string[], section: string): Partial<Config> {
  const folder = scratchDir(t);
  const files = flags.map((flag) => {
    if (!flag.endsWith('.json')) return flag;
    const file = join(folder, flag);
    writeFileSync(file, codeBlocks(section).find((block) => block.lang === 'json')!.text);
    return file;
  });
  const config = loadConfig(files, {});
  return Object.fromEntries(Object.entries(config).filter(([key, value]) => DEFAULT_CONFIG[key as keyof Config] !== value));
}

const sectionAround = (markdown: string, at: number): string => markdown.slice(markdown.lastIndexOf('\n## ', at), at);

for (const name of documents) {
  const markdown = readDocument(`docs/${name}`);
  const commands = curlCommands(markdown).filter((command) => command.url.startsWith(DEFAULT_ADDRESS));
  if (commands.length === 0) continue;
  const shown = codeBlocks(markdown).filter((block) => block.lang === 'json').map((block) => block.text.trim());
  t.test(`docs/${name}: its ${commands.length} curl commands, pasted in order`, async (t) => {
    let sent = 0;
    for (const run of runsOf(markdown)) {
      const server = await startServer(settingsOf(t, run.flags, sectionAround(markdown, markdown.indexOf(run.markdown) + 1)));
      t.teardown(server.close);
      for (const command of curlCommands(run.markdown).filter((each) => each.url.startsWith(DEFAULT_ADDRESS))) {
        const response = await request(server.url + command.url.slice(DEFAULT_ADDRESS.length), {
          method: command.method as 'POST',
          headers: command.headers,
          body: command.body,
        });
        const text = await response.body.text();
        const label = `${command.method} ${command.url} (${response.statusCode})`;
        t.ok(response.statusCode < 400 || shown.includes(text), `${label}: answered, or refused as the document shows: ${response.statusCode < 400 ? 'yes' : text}`);
        sent++;
      }
    }
    t.equal(sent, commands.length, 'every command sent');
  });
}

t.test('no example asks the caller for the time of day: a rule on hours reads the decision time the server supplies', async (t) => {
  const bodies = ['README.md', ...documents.map((name) => `docs/${name}`)].flatMap((path) =>
    curlCommands(readDocument(path)).flatMap((command) => (command.body === undefined ? [] : [{ path, body: command.body }])),
  );
  t.ok(bodies.length > 50, `${bodies.length} bodies read`);
  const askingForTime = bodies.filter(({ body }) => /"(hour|weekday|day_of_week)"\s*:/.test(body) || /"path":\s*"attributes\.(hour|weekday)"/.test(body));
  t.same(askingForTime.map(({ path }) => path), []);
});
