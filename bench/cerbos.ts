// Cerbos beside Verdict in the sidecar benchmark (MEMORY_BENCH_CERBOS): the binary its npm package
// ships (`@cerbos/cerbos-linux-x64`, fetched from the npm registry into bench's cache when named
// `fetch`), holding policies that decide what Verdict's keyed policies decide: policy i lets the role
// `reader` read the document `doc-i`, one resource policy per document kind.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { arch, tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { freePort, type RunningServer } from './server.js';
import { benchDirectory } from './seed.js';

const CERBOS_VERSION = '0.51.0';
/** Cerbos refuses a check of more resources than this unless told (its default is 50). */
export const CERBOS_MAX_RESOURCES = 100;

/** The Cerbos binary to run: a path, or `fetch` for its npm package's, unpacked once into the temporary directory. */
export function cerbosBinary(named: string): string {
  if (named !== 'fetch') return named;
  const cache = join(tmpdir(), `verdict-bench-cerbos-${CERBOS_VERSION}`);
  const binary = join(cache, 'package', `cerbos-linux-${arch() === 'arm64' ? 'arm64' : 'x64'}`);
  if (existsSync(binary)) return binary;
  mkdirSync(cache, { recursive: true });
  const packed = execFileSync('npm', ['pack', '--silent', `@cerbos/cerbos-linux-${arch() === 'arm64' ? 'arm64' : 'x64'}@${CERBOS_VERSION}`], { cwd: cache, encoding: 'utf8' }).trim();
  execFileSync('tar', ['xzf', packed], { cwd: cache });
  return binary;
}

/** A directory of `count` resource policies: `doc-i` readable by `reader`. */
export function cerbosPolicies(count: number): string {
  const directory = benchDirectory();
  for (let index = 0; index < count; index++) {
    const policy = { apiVersion: 'api.cerbos.dev/v1', resourcePolicy: { version: 'default', resource: `doc-${index}`, rules: [{ actions: ['read'], effect: 'EFFECT_ALLOW', roles: ['reader'] }] } };
    writeFileSync(join(directory, `doc-${index}.json`), JSON.stringify(policy));
  }
  return directory;
}

/** The body of a Cerbos check of `documents` (by index), each read by a principal of `role`. */
export function cerbosCheck(documents: number[], role = 'reader'): string {
  return JSON.stringify({
    requestId: 'bench',
    principal: { id: 'bench', roles: [role] },
    resources: documents.map((index) => ({ actions: ['read'], resource: { kind: `doc-${index}`, id: `doc-${index}` } })),
  });
}

/** Starts Cerbos on `policies`; resolves once its health endpoint answers, with the milliseconds from spawn. */
export async function startCerbos(binary: string, policies: string): Promise<RunningServer & { startMillis: number }> {
  const [httpPort, grpcPort] = [await freePort(), await freePort()];
  const started = performance.now();
  const child = spawn(
    binary,
    [
      'server',
      '--set=storage.driver=disk',
      `--set=storage.disk.directory=${policies}`,
      `--set=server.httpListenAddr=127.0.0.1:${httpPort}`,
      `--set=server.grpcListenAddr=127.0.0.1:${grpcPort}`,
      `--set=server.requestLimits.maxResourcesPerRequest=${CERBOS_MAX_RESOURCES}`,
      '--log-level=error',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const url = `http://127.0.0.1:${httpPort}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`cerbos exited with ${child.exitCode} before it was ready`);
    try {
      const answer = await request(`${url}/_cerbos/health`);
      await answer.body.dump();
      if (answer.statusCode === 200) break;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const startMillis = performance.now() - started;
  const probe = await request(`${url}/api/check/resources`, { method: 'POST', body: cerbosCheck([1]), headers: { 'content-type': 'application/json' } });
  const decided = await probe.body.text();
  if (!decided.includes('EFFECT_ALLOW')) throw new Error(`cerbos did not allow the bench's check: ${decided}`);
  return { url, child, startMillis };
}
