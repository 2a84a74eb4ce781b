import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { request } from 'undici';
import { buildApp } from '../../src/app.js';
import type { Metrics } from '../../src/live/metrics.js';
import { DEFAULT_CONFIG, type Config } from '../../src/config/config.js';
import type { Substitutes } from '../../src/services/compose.js';

export interface JsonResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

export interface TestServer {
  url: string;
  dataDir: string;
  config: Config;
  /**
   * Sends `body` as JSON (when given) and parses the JSON answer. A write says it is JSON also with no
   * body, as clients must while admin authentication is off (see src/http/open-admin.ts).
   */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<JsonResponse>;
  /** Sends `text` as it is, for malformed bodies and odd content types. */
  send(method: string, path: string, text: string, headers?: Record<string, string>): Promise<JsonResponse>;
  /** The server's metrics, still readable after close (for figures that only closing settles). */
  metrics: Metrics;
  /** Where Envoy's gRPC external authorization listens (`--ext-authz-grpc`), once started. */
  extAuthzGrpc(): string | undefined;
  close(): Promise<void>;
}

export function temporaryDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'verdict-test-'));
}

/** A fresh directory, removed at the end of the test. */
export function scratchDir(t: Test): string {
  const dir = temporaryDataDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A real Verdict listening on a free loopback port (or on `port`, to restart one where it was), on
 * its own embedded store. `dataDir` reuses a directory (to test restarts); otherwise a fresh one is
 * made and removed on close. `substitutes`: an open store to serve from instead (see helpers/intercepted-store.ts),
 * a file for the pool's threads to run (see helpers/faulty-worker.ts).
 */
export async function startServer(overrides: Partial<Config> = {}, substitutes: Substitutes = {}): Promise<TestServer> {
  const ownsDataDir = overrides.dataDir === undefined;
  // A smaller entity cache than the default: its slots are allocated up front, and 100,000 of them cost
  // each server about 20 ms of CPU time, more than the rest of its start. No test registers as many.
  const config: Config = { ...DEFAULT_CONFIG, logLevel: 'silent', port: 0, workers: 1, entityCacheSize: 1000, dataDir: temporaryDataDir(), ...overrides };
  const app = await buildApp(config, substitutes);
  await app.listen({ host: '127.0.0.1', port: config.port });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('server has no TCP address');
  const url = `http://127.0.0.1:${address.port}`;

  const send = async (method: string, path: string, text: string | undefined, headers: Record<string, string> = {}) => {
    const response = await request(url + path, { method: method as 'GET', body: text, headers });
    const raw = await response.body.text();
    let body: unknown = raw;
    try {
      body = raw === '' ? undefined : JSON.parse(raw);
    } catch {
      // not JSON: the raw text is the body
    }
    return { status: response.statusCode, headers: response.headers, body };
  };

  return {
    url,
    dataDir: config.dataDir,
    config,
    call: (method, path, body, headers = {}) =>
      body === undefined && (method === 'GET' || method === 'HEAD')
        ? send(method, path, undefined, headers)
        : send(method, path, body === undefined ? undefined : JSON.stringify(body), { 'content-type': 'application/json', ...headers }),
    send: (method, path, text, headers = {}) => send(method, path, text, headers),
    metrics: app.metrics,
    extAuthzGrpc: () => app.extAuthzGrpc?.address,
    close: async () => {
      await app.close();
      if (ownsDataDir) rmSync(config.dataDir, { recursive: true, force: true });
    },
  };
}

/** The body of a call the test expects to succeed (200 or 201); throws with the status and body otherwise. */
export async function succeeded(server: TestServer, method: string, path: string, body?: unknown): Promise<JsonResponse['body']> {
  const response = await server.call(method, path, body);
  if (response.status !== 200 && response.status !== 201) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

/**
 * Resolves once the clock reads later than `timestamp` (one the server, in this process, wrote), so
 * that anything written next carries a later time: a wait on the clock itself, not a guess at it.
 */
export async function clockPast(timestamp: string): Promise<void> {
  const written = Date.parse(timestamp);
  if (Number.isNaN(written)) throw new Error(`not a timestamp: ${timestamp}`);
  while (Date.now() <= written) await new Promise((resolve) => setTimeout(resolve, 1));
}

/** Resolves once `server` says it is ready (`/ready` 200): a key set fetched from a URL, say, which the start does not wait for. */
export async function ready(server: TestServer, timeoutMs = 10_000): Promise<void> {
  for (const started = Date.now(); Date.now() - started < timeoutMs; await new Promise((resolve) => setTimeout(resolve, 10))) {
    if ((await server.call('GET', '/ready')).status === 200) return;
  }
  throw new Error(`not ready within ${timeoutMs} ms: ${JSON.stringify((await server.call('GET', '/ready')).body)}`);
}
