// Envoy's external authorization against a plain /check of the same decision, on one Verdict, in one
// run (npm run bench:mesh): server CPU per request of
//
// - POST /check naming the principal by uri with its attributes sent (the baseline);
// - POST /check naming the principal by a bearer token (verified once, then remembered);
// - GET /ext-authz/documents/<id> with the token in `Authorization`, as Envoy sends it: the route
//   matched against the mapping's path templates, the token's claims read from the cache;
// - the same as a gRPC CheckRequest (`--ext-authz-grpc`), as Envoy's grpc_service sends it.
//
// The load comes from this process (undici for HTTP, @grpc/grpc-js for gRPC; CONNECTIONS callers
// each sending in turn), and only the server's CPU is counted.
//
// Then the floor under both flavours: servers that only answer (bench/bare-transports.ts) over Node's
// HTTP/1.1, over Node's HTTP/2 framed as gRPC by hand, and over @grpc/grpc-js, each against bare HTTP/1.1.
//
// Each scenario is measured right after the baseline, in alternating order, MESH_BENCH_ROUNDS times
// (the machine is shared and noisy); the figures are the medians of those paired ratios.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import { Pool, request } from 'undici';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { benchDirectory } from './seed.js';
import { startVerdict, stop, type RunningServer } from './server.js';
import { cpuSeconds } from './process-stats.js';
import * as grpc from '@grpc/grpc-js';
import { EnvoyGrpc } from '../test/helpers/envoy-grpc.js';
import { BARE_METHOD, BARE_TRANSPORTS, type BareTransport } from './bare-transports.js';

const ROUNDS = Number(process.env.MESH_BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.MESH_BENCH_SECONDS ?? 5);
const CONNECTIONS = 64;
const GRPC_PORT = Number(process.env.MESH_BENCH_GRPC_PORT ?? 19191);
const DOCUMENTS = 100;
const ISSUER = 'https://idp.bench';
const AUDIENCE = 'documents-app';

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function admin(url: string, path: string, body: unknown): Promise<void> {
  const response = await request(`${url}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`${path} answered ${response.statusCode}: ${text}`);
}

/** One request of a scenario, the `index`th: resolves once answered, rejects unless it was allowed. */
type Send = (index: number) => Promise<void>;

/** Each pair's figures: the median of the rounds' ratios of `name`'s CPU per request to `baseline`'s. */
async function paired(compared: [string, string][], scenarios: Record<string, { server: Pick<RunningServer, 'child'>; send: Send }>): Promise<void> {
  for (const { server, send } of Object.values(scenarios)) await cpuPerRequest(server, send, 2); // the JIT's warm-up, unmeasured
  for (const [name, baseline] of compared) {
    const ratios: number[] = [];
    const micros: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? [name, baseline] : [baseline, name];
      const measured: Record<string, number> = {};
      for (const scenario of order) measured[scenario] = await cpuPerRequest(scenarios[scenario]!.server, scenarios[scenario]!.send);
      ratios.push(measured[name]! / measured[baseline]!);
      micros.push(measured[name]!);
    }
    console.log(`${name} vs ${baseline}: ${median(ratios).toFixed(2)}× server CPU per request (median of ${ROUNDS}: ${ratios.map((value) => value.toFixed(2)).join(' ')}; ${median(micros).toFixed(0)} µs)`);
  }
}

/** A bare server of `transport` in a child process, and how to send it one request. */
async function bareServer(transport: BareTransport): Promise<{ server: Pick<RunningServer, 'child'>; send: Send; close: () => Promise<void> }> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./bare-transports.js', import.meta.url)), transport], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve) => child.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())));
  const body = Buffer.alloc(200, 2);
  const stopped = async () => {
    child.kill();
  };
  if (transport === 'http1') {
    const pool = new Pool(`http://127.0.0.1:${port}`, { connections: CONNECTIONS });
    const send: Send = () => pool.request({ method: 'POST', path: '/check', headers: { 'content-type': 'application/json' }, body }).then((answer) => answer.body.dump());
    return { server: { child }, send, close: async () => (await pool.close(), await stopped()) };
  }
  const Bare = grpc.makeGenericClientConstructor({ Check: BARE_METHOD }, 'Bare');
  const client = new Bare(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & { Check: (message: Buffer, done: (error: grpc.ServiceError | null) => void) => void };
  const send: Send = () => new Promise((resolve, reject) => client.Check(body, (error) => (error === null ? resolve() : reject(error))));
  return { server: { child }, send, close: async () => (client.close(), await stopped()) };
}

/** The floor under both flavours: what answering costs each transport when nothing is decided. */
async function transportFloor(): Promise<void> {
  const bare = await Promise.all(BARE_TRANSPORTS.map(bareServer));
  try {
    const scenarios = Object.fromEntries(BARE_TRANSPORTS.map((transport, index) => [`bare ${transport}`, bare[index]!]));
    console.log('The floor: servers that only answer, with no decision (bench/bare-transports.ts)');
    await paired([['bare http2', 'bare http1'], ['bare grpc-js', 'bare http1']], scenarios);
  } finally {
    await Promise.all(bare.map(({ close }) => close()));
  }
}

/** Server CPU per request, in µs, with CONNECTIONS callers sending `send`'s requests for `seconds`. */
async function cpuPerRequest(server: Pick<RunningServer, 'child'>, send: Send, seconds = SECONDS): Promise<number> {
  const before = cpuSeconds(server.child.pid!);
  const until = performance.now() + seconds * 1000;
  let sent = 0;
  const caller = async () => {
    while (performance.now() < until) await send(sent++);
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, caller));
  return ((cpuSeconds(server.child.pid!) - before) * 1e6) / Math.max(1, sent);
}

async function main(): Promise<void> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'ES256' };
  const jwks = createServer((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })));
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  const dir = benchDirectory();
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_url: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks` }] }));
  writeFileSync(join(dir, 'mapping.json'), JSON.stringify({ principal: { uri: 'user:{sub}' }, routes: [{ path: '/documents/{id}', resource_type: 'document' }] }));
  const server = await startVerdict(join(dir, 'data'), ['--tokens', join(dir, 'tokens.json'), '--ext-authz', join(dir, 'mapping.json'), '--ext-authz-grpc', String(GRPC_PORT)]);
  const pool = new Pool(server.url, { connections: CONNECTIONS });
  const envoy = new EnvoyGrpc(`127.0.0.1:${GRPC_PORT}`);
  try {
    await admin(server.url, '/admin/policies', {
      name: 'owners',
      rules: [
        { name: 'owner-reads', effect: 'allow', principal_conditions: [{ path: 'attributes.claims.sub', operator: '==', value_from: 'resource.attributes.owner' }], actions: ['read'] },
        // The baseline's: the same test on an attribute the caller sends (a written `claims` is refused while tokens are verified).
        { name: 'named-owner-reads', effect: 'allow', principal_conditions: [{ path: 'attributes.user', operator: '==', value_from: 'resource.attributes.owner' }], actions: ['read'] },
      ],
    });
    for (let id = 0; id < DOCUMENTS; id++) await admin(server.url, '/admin/fetchers/registry/entities', { uri: `document:${id}`, type: 'resource', attributes: { owner: 'alice' } });
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ groups: ['staff'] }).setProtectedHeader({ alg: 'ES256', kid: 'bench' }).setSubject('alice').setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt(now).setExpirationTime(now + 3600).sign(privateKey);
    const json = { 'content-type': 'application/json' };
    const allowedOver = (answer: { statusCode: number; body: { text(): Promise<string> } }, expectJson: boolean) =>
      answer.body.text().then((text) => {
        if (answer.statusCode !== 200 || (expectJson && !text.includes('"allowed":true'))) throw new Error(`not allowed: ${answer.statusCode} ${text}`);
      });
    const checkOf = (principal: unknown): Send => (index) =>
      pool.request({ method: 'POST', path: '/check', headers: json, body: JSON.stringify({ principal, resource: { uri: `document:${index % DOCUMENTS}` }, action: 'read' }) }).then((answer) => allowedOver(answer, true));
    const scenarios: Record<string, Send> = {
      'check, attributes sent': checkOf({ uri: 'user:alice', attributes: { user: 'alice', groups: ['staff'] } }),
      'check, bearer token': checkOf({ token }),
      'ext-authz, token and path template': (index) =>
        pool
          .request({ method: 'GET', path: `/ext-authz/documents/${index % DOCUMENTS}`, headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': '10.1.2.3' } })
          .then((answer) => allowedOver(answer, false)),
      'ext-authz over gRPC': (index) =>
        envoy.check({ method: 'GET', path: `/documents/${index % DOCUMENTS}`, headers: { authorization: `Bearer ${token}` }, sourceAddress: '10.1.2.3' }).then((answer) => {
          if (answer.code !== 0) throw new Error(`not allowed: ${JSON.stringify(answer)}`);
        }),
    };
    const [baselineName, ...others] = Object.keys(scenarios) as [string, ...string[]];
    // Each against the plain /check; and the gRPC flavour against the HTTP one (goal: at most its cost).
    const compared: [string, string][] = [...others.map((name): [string, string] => [name, baselineName]), ['ext-authz over gRPC', 'ext-authz, token and path template']];
    console.log(`Mesh benchmark: ${ROUNDS} paired rounds × ${SECONDS}s, ${CONNECTIONS} connections; load average ${loadavg()[0]!.toFixed(1)} on entry`);
    await paired(compared, Object.fromEntries(Object.entries(scenarios).map(([name, send]) => [name, { server, send }])));
  } finally {
    envoy.close();
    await pool.close();
    await stop(server);
    jwks.close();
    rmSync(dir, { recursive: true, force: true });
  }
  await transportFloor();
}

await main();
