import t from 'tap';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { followDockerfile, mapPaths, parseDockerfile, workdirOf } from '../helpers/dockerfile.js';
import { ask, freePort, waitFor } from '../helpers/child.js';
import { COMPILE_CACHE_WRITABLE } from '../../src/process/compile-cache.js';

/**
 * The image that deploy/Dockerfile builds, without Docker (none runs here): its stages are carried out
 * in a scratch directory by test/helpers/dockerfile.ts — exactly the files its COPY lines copy, its RUN
 * lines run — and the server is started from what the last stage holds, as its ENTRYPOINT and CMD
 * say. A missing COPY, a build step that needs a file the image lacks, or a runtime stage without what
 * the server reads at run time fails here.
 *
 * Stand-ins, because this machine reaches no network but the npm registry: `npm ci` prefers the npm
 * cache, and better-sqlite3's install, which downloads a prebuilt binary in a real build, gets the one
 * this checkout already has (node_modules/better-sqlite3) through prebuild-install's local-prebuilds
 * setting. tini is not run (it only forwards signals); the server listens on loopback, not 0.0.0.0.
 */

t.setTimeout(600_000);

/** The key the operator gives the container (ADMIN_API_KEY). */
const KEY = 'a-key-the-operator-made';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Packs this checkout's better-sqlite3 binary as the prebuilt archive prebuild-install looks for; returns its directory. */
function localPrebuilds(scratch: string): string {
  const dir = join(scratch, 'prebuilds');
  mkdirSync(dir);
  const module = join(ROOT, 'node_modules', 'better-sqlite3');
  const { version } = JSON.parse(readFileSync(join(module, 'package.json'), 'utf8')) as { version: string };
  const archive = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  execFileSync('tar', ['czf', join(dir, archive), '-C', module, 'build/Release/better_sqlite3.node']);
  return dir;
}

/** The environment of a fresh container: no variable of the developer's or of the test runner's. */
function containerEnv(prebuilds: string): NodeJS.ProcessEnv {
  return {
    PATH: `${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
    HOME: process.env.HOME,
    npm_config_prefer_offline: 'true',
    npm_config_update_notifier: 'false',
    npm_config_better_sqlite3_local_prebuilds: prebuilds,
  };
}

t.test('the image follows deploy/Dockerfile: it builds, holds production dependencies only, and serves', async (t) => {
  const scratch = mkdtempSync(join(tmpdir(), 'verdict-image-'));
  t.teardown(() => rmSync(scratch, { recursive: true, force: true }));
  const env = containerEnv(localPrebuilds(scratch));
  const dockerfile = parseDockerfile(readFileSync(join(ROOT, 'deploy', 'Dockerfile'), 'utf8'));
  const build = await followDockerfile(dockerfile, ROOT, join(scratch, 'stages'), env);
  for (const { command, why } of build.skipped) t.comment(`left out: ${command} (${why})`);

  t.notMatch(build.ran.map(({ output }) => output).join('\n'), /EBADENGINE/, 'no package warns that it does not support this Node');
  const image = build.stages.at(-1)!;
  const app = workdirOf(image);
  for (const development of ['typescript', 'tap', 'playwright-core', 'kubernetes-models']) {
    t.notOk(existsSync(join(app, 'node_modules', development)), `the image holds no development dependency (${development})`);
  }
  t.notOk(existsSync(join(app, 'dist', 'test')), 'nor the tests');
  const compileCache = mapPaths(image, image.env).NODE_COMPILE_CACHE!;
  if (COMPILE_CACHE_WRITABLE) {
    t.ok(readdirSync(compileCache, { recursive: true }).length > 100, 'the compile cache of a start is in the image');
  } else {
    t.comment(`SKIPPED: the image's compile cache: Node ${process.versions.node} writes none (Node 22.10 and later do; the image's Node does)`);
  }
  t.equal(statSync(compileCache).mode & 0o222, 0, 'the compile cache is read-only');

  const [init, separator, program, ...programArgs] = image.entrypoint;
  t.same([init, separator, program], ['/usr/bin/tini', '--', 'node'], 'tini starts node');
  // A fresh `docker run` with no key: refused, saying how to give it one, before it listens anywhere.
  const unkeyed = spawnSync(process.execPath, [...programArgs, ...image.cmd], {
    cwd: app,
    env: { ...env, ...mapPaths(image, image.env), PORT: String(await freePort()) },
    encoding: 'utf8',
    timeout: 120_000,
  });
  t.equal(unkeyed.status, 2, `without ADMIN_API_KEY the image does not start (${unkeyed.stderr.trim()})`);
  t.match(unkeyed.stderr, /ADMIN_API_KEY/, 'it says to set the key');

  const port = await freePort();
  const serverEnv = { ...env, ...mapPaths(image, image.env), HOST: '127.0.0.1', PORT: String(port), ADMIN_API_KEY: KEY };
  const server = spawn(process.execPath, [...programArgs, ...image.cmd], { cwd: app, env: serverEnv, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  server.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => server.on('exit', (code) => resolve(code)));
  t.teardown(() => {
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
  });

  const url = `http://127.0.0.1:${port}`;
  const ready = await waitFor(url, '/ready', 200, 120_000).catch((error: Error) => {
    throw new Error(`${error.message}; the server said: ${stderr}`);
  });
  t.equal(ready.body.status, 'ready', 'GET /ready: 200');
  t.ok(existsSync(join(image.root, 'data', 'verdict.db')), 'the embedded store is in the /data volume');
  t.equal(statSync(join(image.root, 'data')).mode & 0o777, 0o700, 'the /data volume is its owner\'s only');
  t.equal(statSync(join(image.root, 'data', 'verdict.db')).mode & 0o777, 0o600, 'and so is the database');
  t.equal((await ask(url, 'GET', '/admin/policies')).status, 401, 'admin needs the key');
  t.equal((await ask(url, 'GET', '/admin/policies', undefined, { 'way-api-key': KEY })).status, 200, 'the key opens it');

  const page = await ask(url, 'GET', '/dashboard/');
  t.equal(page.status, 200, 'GET /dashboard/: 200');
  const scripts = [...String(page.body).matchAll(/(?:src|href)="([^"]+\.(?:js|css))"/g)].map((match) => match[1]!);
  t.ok(scripts.length >= 2, `the dashboard page loads its script and stylesheet (${scripts.join(', ')})`);
  for (const asset of scripts) {
    t.equal((await ask(url, 'GET', new URL(asset, `${url}/dashboard/`).pathname)).status, 200, `GET ${asset}: 200`);
  }

  const docs = await ask(url, 'GET', '/docs');
  t.equal(docs.status, 200, 'GET /docs: 200');
  t.match(String(docs.body), /swagger/i, 'the interactive documentation');
  const openapi = await ask(url, 'GET', '/docs/json');
  t.ok(openapi.body?.paths?.['/check'], 'its OpenAPI document describes /check');

  const [checkProgram, ...checkArgs] = image.healthcheck;
  t.equal(checkProgram, 'node');
  const healthcheck = await new Promise<number | null>((resolve) =>
    spawn(process.execPath, checkArgs, { cwd: app, env: serverEnv, stdio: 'ignore' }).on('exit', (code) => resolve(code)),
  );
  t.equal(healthcheck, 0, `HEALTHCHECK (${image.healthcheck.join(' ')}) passes`);

  server.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM: a clean exit');
});
