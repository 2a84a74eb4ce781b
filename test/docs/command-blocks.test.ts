import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse, parseAllDocuments } from 'yaml';
import { request } from 'undici';
import { readDocument } from '../helpers/markdown.js';
import { scratchDir, startServer } from '../helpers/server.js';
import { freePort, runVerdict, waitFor, type Child } from '../helpers/child.js';
import { EnvoyGrpc } from '../helpers/envoy-grpc.js';
import { signingKey, TokenIssuer, tokenFor } from '../helpers/token-issuer.js';

// Every command block of docs/ — a shell block with a command other than curl (the curl commands are
// sent by commands.test.ts) — is run as written, here or by the test named in ELSEWHERE, or named in
// NOT_HERE with why this machine cannot run it. A block in none of them fails the last test, as does
// an entry naming no block. Where a command names the reader's own values (an admin key written `...`,
// a server's address, an identity provider), the test puts its own in their place, and says so; nothing else
// is changed. Blocks whose first command is the same (two documents create the same secret) are one entry.

const CHECKOUT = fileURLToPath(new URL('../../../', import.meta.url));
const DOCS = join(CHECKOUT, 'docs');
const run = promisify(execFile);

/** A block's commands: its lines that start a command (not a curl, a comment, or a continuation of one). */
const commandsOf = (text: string): string[] =>
  text
    .split('\n')
    .map((line) => line.trim().replace(/^\$ /, ''))
    .filter((line, index, lines) => /^[A-Za-z_][\w-]*(=|\s)/.test(line) && !line.startsWith('curl ') && !/\\$/.test(lines[index - 1] ?? ''));

/** The fenced blocks of `markdown`, those indented in a list item too: their language and text. */
const fencedBlocks = (markdown: string) => [...markdown.matchAll(/^( *)```(\w*)\n([\s\S]*?)^\1```$/gm)].map((match) => ({ lang: match[2]!, text: match[3]! }));

/** Every command block of docs/ (a sh block, or one showing a prompt `$ `), by its first command: the document and the commands. */
function commandBlocks(): Map<string, { document: string; commands: string[] }> {
  const blocks = new Map<string, { document: string; commands: string[] }>();
  for (const name of readdirSync(DOCS).filter((file) => file.endsWith('.md'))) {
    for (const block of fencedBlocks(readDocument(`docs/${name}`))) {
      const commands = commandsOf(block.text);
      if (commands.length > 0 && (block.lang === 'sh' || block.text.trimStart().startsWith('$ '))) blocks.set(commands[0]!, { document: name, commands });
    }
  }
  return blocks;
}

const BLOCKS = commandBlocks();

/** The command of `document` that starts with `start`, as written. */
function command(document: string, start: string): string {
  const found = [...BLOCKS.values()].filter((block) => block.document === document).flatMap((block) => block.commands).find((each) => each.startsWith(start));
  if (found === undefined) throw new Error(`docs/${document} has no command starting with ${start}`);
  return found;
}

/** `verdict <args>` as the words the CLI receives (these commands quote nothing). */
const verdictArgs = (line: string) => line.replace(/\s+#.*$/, '').split(/\s+/).slice(1);

/** Blocks run as written by another test, and which. */
const ELSEWHERE: Record<string, string> = {
  'verdict impact --before main/policies --after policies --replay logs/pod-a.ndjson --replay logs/pod-b.ndjson --fail-on deny-to-allow': 'test/cli/impact.test.ts',
  'VERDICT=~/verdict                                          # your checkout of Verdict': 'test/docs/migrating-from-eunomia.test.ts',
};

/** Blocks this machine cannot run, and why. */
const NOT_HERE: Record<string, string> = {
  'npm ci --omit=dev     # installs, then builds dist/ (the prepare script)':
    'a production install from the registry (minutes, and better-sqlite3 built where no prebuilt binary downloads); the image build runs it (deploy/Dockerfile, held by test/deploy/dockerfile.test.ts)',
  'key=$(openssl rand -base64 32)      # or: docker run --rm ghcr.io/verdict-authz/verdict:0.3.0 key --name ops': 'docker, and the published image: neither is here',
  'kubectl create secret generic verdict-admin --from-literal=ADMIN_API_KEY="$(openssl rand -base64 32)"': 'kubectl and a cluster: neither is here (the manifests are held by test/deploy/deploy.test.ts)',
  "digest=$(docker buildx imagetools inspect ghcr.io/verdict-authz/verdict:0.3.0 --format '{{json .Manifest.Digest}}' | tr -d '\"')": 'docker, cosign and the published image: none is here',
  'docker run -d --name jaeger -p 16686:16686 -p 4318:4318 jaegertracing/all-in-one:1.62': 'docker and the Jaeger image (test/tracing/ sends the same spans to a collector of its own)',
  'pip install ./clients/python            # or: python3 -m build --no-isolation --wheel clients/python':
    'pip builds in isolation, fetching hatchling from PyPI, which this machine cannot reach; the alternative after "or:" is run by test/deploy/python-client.test.ts',
};

/**
 * The policy, mapping and key-set files of the plain Envoy example, laid out as docs/mesh.md's command
 * names them, and a token issuer: the reader's identity provider, whose key set's URL stands in for the example's.
 */
async function meshFolder(t: Test): Promise<{ folder: string; token: (subject: string) => Promise<string> }> {
  const key = await signingKey('idp-1', 'RS256');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const folder = scratchDir(t);
  copyFileSync(join(CHECKOUT, 'deploy', 'envoy', 'mapping.yaml'), join(folder, 'mapping.yaml'));
  const tokens = readFileSync(join(CHECKOUT, 'deploy', 'envoy', 'tokens.yaml'), 'utf8');
  const keySet = parse(tokens).key_sets[0];
  writeFileSync(join(folder, 'tokens.yaml'), tokens.replace(keySet.jwks_url, issuer.jwksUrl));
  const configMaps = parseAllDocuments(readFileSync(join(CHECKOUT, 'deploy', 'kubernetes', 'mesh-istio', 'configmap.yaml'), 'utf8')).map((document) => document.toJS());
  const policies = configMaps.find((map) => map.metadata.name === 'verdict-policies').data as Record<string, string>;
  mkdirSync(join(folder, 'policies'));
  for (const [name, text] of Object.entries(policies)) writeFileSync(join(folder, 'policies', name), text);
  return { folder, token: (subject) => tokenFor(key, subject, { issuer: keySet.issuer, audience: keySet.audience }) };
}

/** Starts `line` (a `verdict start` command) in `folder`, on a free port given by PORT (the command names none); resolves once it is ready. */
async function startAsWritten(t: Test, line: string, folder: string): Promise<{ url: string; child: Child }> {
  const port = await freePort();
  // STORE: the default the command relies on, which the test helper wants named.
  const child = runVerdict(t, verdictArgs(line), { PORT: String(port), STORE: 'embedded' }, folder);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(url, '/ready', 200, child);
  return { url, child };
}

/** What the example's Envoy adds to every request it authorizes (`use_remote_address`): the address it saw, which the mapping reads. */
const ENVOY_APPENDED = { 'x-forwarded-for': '198.51.100.7' };

const RUN_HERE: Record<string, (t: Test) => Promise<void>> = {
  'verdict start --tokens tokens.yaml --ext-authz mapping.yaml --policies policies/': async (t) => {
    const { folder, token } = await meshFolder(t);
    const { url } = await startAsWritten(t, command('mesh.md', 'verdict start --tokens tokens.yaml --ext-authz mapping.yaml --policies'), folder);
    const owner = await request(`${url}/ext-authz/users/alice/documents/42`, { headers: { authorization: `Bearer ${await token('alice')}`, ...ENVOY_APPENDED } });
    t.equal(owner.statusCode, 200, `the owner reads her document: ${await owner.body.text()}`);
    const other = await request(`${url}/ext-authz/users/alice/documents/42`, { headers: { authorization: `Bearer ${await token('bob')}`, ...ENVOY_APPENDED } });
    t.equal(other.statusCode, 403, `another user does not: ${await other.body.text()}`);
    const refused = await request(`${url}/ext-authz/users/alice/documents/42`, { headers: { authorization: 'Bearer not-a-token', ...ENVOY_APPENDED } });
    t.equal(refused.statusCode, 401, `a token that does not verify: ${await refused.body.text()}`);
    t.match(refused.headers['www-authenticate'], /invalid_token/);
    const unmapped = await request(`${url}/ext-authz/documents/42`, { headers: ENVOY_APPENDED });
    t.equal(unmapped.statusCode, 403, `a path the mapping does not map: ${await unmapped.body.text()}`);
  },
  'verdict start --tokens tokens.yaml --ext-authz mapping.yaml --ext-authz-grpc 9191 --policies policies/': async (t) => {
    const written = command('mesh.md', 'verdict start --tokens tokens.yaml --ext-authz mapping.yaml --ext-authz-grpc');
    // 9191 is the Envoy configuration's; the test's own free port stands in for it.
    const grpcPort = await freePort();
    const { folder, token } = await meshFolder(t);
    await startAsWritten(t, written.replace('--ext-authz-grpc 9191', `--ext-authz-grpc ${grpcPort}`), folder);
    const envoy = new EnvoyGrpc(`127.0.0.1:${grpcPort}`);
    t.teardown(() => envoy.close());
    t.equal(await envoy.healthStatus(), 'SERVING');
    t.match(await envoy.check({ method: 'GET', path: '/users/alice/documents/42', headers: { authorization: `Bearer ${await token('alice')}`, ...ENVOY_APPENDED } }), { httpStatus: 200 }, 'the owner reads her document');
    t.match(await envoy.check({ method: 'GET', path: '/users/alice/documents/42', headers: { authorization: `Bearer ${await token('bob')}`, ...ENVOY_APPENDED } }), { httpStatus: 403 }, 'another user does not');
    t.match(await envoy.check({ method: 'GET', path: '/users/alice/documents/42', headers: { authorization: 'Bearer not-a-token', ...ENVOY_APPENDED } }), { httpStatus: 401 }, 'a token that does not verify');
    t.match(await envoy.check({ method: 'GET', path: '/documents/42', headers: ENVOY_APPENDED }), { httpStatus: 403 }, 'a path the mapping does not map');
  },
  'ADMIN_API_KEY=... node dist/src/cli.js import entities users.jsonl --host 127.0.0.1 --port 8421': async (t) => {
    const key = 'the-operators-key-for-the-import';
    const server = await startServer({ adminApiKey: key });
    t.teardown(server.close);
    const folder = scratchDir(t);
    symlinkSync(join(CHECKOUT, 'dist'), join(folder, 'dist'));
    writeFileSync(join(folder, 'users.jsonl'), ['alice', 'bob'].map((name) => JSON.stringify({ uri: `user:${name}`, type: 'principal', attributes: { name } })).join('\n') + '\n');
    // The reader's key for `...`, the test server's port for 8421.
    const line = command('operations.md', 'ADMIN_API_KEY=').replace('ADMIN_API_KEY=...', `ADMIN_API_KEY=${key}`).replace('--port 8421', `--port ${new URL(server.url).port}`);
    const { stdout } = await run('bash', ['-c', line], { cwd: folder, env: { PATH: process.env.PATH } });
    t.match(stdout, /imported 2 entities from users\.jsonl/);
    t.equal((await server.call('GET', '/admin/fetchers/registry/entities/$count', undefined, { authorization: `Bearer ${key}` })).body, 2, 'both registered');
  },
  'ADMIN_API_KEY=$VERDICT_READ_KEY verdict impact policies/access.yaml --url https://verdict.internal --fail-on deny-to-allow': async (t) => {
    const key = 'the-read-key-of-the-impact-gate';
    const server = await startServer({ adminApiKey: key });
    t.teardown(server.close);
    const folder = scratchDir(t);
    mkdirSync(join(folder, 'policies'));
    const grants = (role: string) => ({ name: 'access', rules: [{ name: 'readers', effect: 'allow', principal_conditions: [{ path: 'attributes.role', operator: '==', value: role }], actions: ['read'] }] });
    t.equal((await server.call('POST', '/admin/policies', grants('reader'), { authorization: `Bearer ${key}` })).status, 200);
    for (const role of ['reader', 'guest']) await server.call('POST', '/check', { principal: { attributes: { role } }, resource: { uri: 'doc:1' }, action: 'read' });
    writeFileSync(join(folder, 'policies', 'access.yaml'), JSON.stringify(grants('guest')));
    // The test server's address for https://verdict.internal.
    const line = command('impact.md', 'ADMIN_API_KEY=$VERDICT_READ_KEY verdict impact').replace('https://verdict.internal', server.url);
    const outcome = await run('bash', ['-c', `verdict() { node ${JSON.stringify(join(CHECKOUT, 'dist', 'src', 'cli.js'))} "$@"; }; ${line}`], { cwd: folder, env: { PATH: process.env.PATH, VERDICT_READ_KEY: key } }).then(
      ({ stdout }) => ({ code: 0, stdout }),
      (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
    );
    t.equal(outcome.code, 1, `a change from deny to allow fails the gate: ${outcome.stdout}`);
    t.match(outcome.stdout, /deny → allow/i);
  },
  'verdict key --name auditor --role read': async (t) => {
    const shown = [...BLOCKS.values()].find((block) => block.document === 'audit.md')!;
    const { stdout } = await run(process.execPath, [join(CHECKOUT, 'dist', 'src', 'cli.js'), ...verdictArgs(shown.commands[0]!)]);
    const printed = stdout.trimEnd().split('\n');
    const documented = fencedBlocks(readDocument('docs/audit.md')).find((block) => block.text.includes('$ verdict key'))!.text.trim().split('\n').slice(1).map((line) => line.trim());
    t.equal(printed.length, documented.length, 'as many lines as the document shows');
    t.equal(printed[0], documented[0], 'the same first comment');
    t.equal(printed[2], documented[2], 'the same second comment');
    t.match(printed[1], /^[A-Za-z0-9_-]{43}$/, 'a key of 256 bits, as the document shows one');
    t.match(printed[3], /^auditor read [0-9a-f]{64}$/, 'the line for the file');
  },
};

for (const [first, test] of Object.entries(RUN_HERE)) t.test(`run as written: ${first}`, test);

t.test('every command block of docs/ is run as written, here or elsewhere, or named with why it cannot run here', async (t) => {
  const accounted = [...Object.keys(RUN_HERE), ...Object.keys(ELSEWHERE), ...Object.keys(NOT_HERE)];
  t.same([...BLOCKS.keys()].filter((first) => !accounted.includes(first)), [], 'no block left out');
  t.same(accounted.filter((first) => !BLOCKS.has(first)), [], 'no entry for a block no document has');
});
