// Envoy's external authorization against a plain /check of the same decision, on one Verdict, in one
// run (npm run bench:mesh): server CPU per request of
//
// - POST /check naming the principal by uri and its claims as attributes (the baseline);
// - POST /check naming the principal by a bearer token (verified once, then remembered);
// - GET /ext-authz/documents/<id> with the token in `Authorization`, as Envoy sends it: the route
//   matched against the mapping's path templates, the token's claims read from the cache.
//
// Each scenario is measured right after the baseline, in alternating order, MESH_BENCH_ROUNDS times
// (the machine is shared and noisy); the figures are the medians of those paired ratios.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { request } from 'undici';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { benchDirectory } from './seed.js';
import { startVerdict, stop, type RunningServer } from './server.js';
import { cpuSeconds } from './process-stats.js';
import { loadRequestsWithWrk, wrkAvailable, type WrkRequest } from './wrk.js';

const ROUNDS = Number(process.env.MESH_BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.MESH_BENCH_SECONDS ?? 5);
const CONNECTIONS = 64;
const DOCUMENTS = 100;
const ISSUER = 'https://idp.bench';
const AUDIENCE = 'documents-app';

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function admin(url: string, path: string, body: unknown): Promise<void> {
  const response = await request(`${url}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`${path} answered ${response.statusCode}: ${text}`);
}

async function cpuPerRequest(server: RunningServer, requests: WrkRequest[]): Promise<number> {
  const before = cpuSeconds(server.child.pid!);
  const load = await loadRequestsWithWrk(server.url, requests, SECONDS, CONNECTIONS);
  if (load.errors > 0) throw new Error(`${load.errors} requests failed or were not allowed`);
  return ((cpuSeconds(server.child.pid!) - before) * 1e6) / Math.max(1, load.requests);
}

async function main(): Promise<void> {
  if (!(await wrkAvailable())) {
    console.error("bench: wrk is not installed; install Debian's package: apt-get install wrk");
    process.exit(2);
  }
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'ES256' };
  const jwks = createServer((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })));
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  const dir = benchDirectory();
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_url: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks` }] }));
  writeFileSync(join(dir, 'mapping.json'), JSON.stringify({ principal: { uri: 'user:{sub}' }, routes: [{ path: '/documents/{id}', resource_type: 'document' }] }));
  const server = await startVerdict(join(dir, 'data'), ['--tokens', join(dir, 'tokens.json'), '--ext-authz', join(dir, 'mapping.json')]);
  try {
    await admin(server.url, '/admin/policies', {
      name: 'owners',
      rules: [{ name: 'owner-reads', effect: 'allow', principal_conditions: [{ path: 'attributes.claims.sub', operator: '==', value_from: 'resource.attributes.owner' }], actions: ['read'] }],
    });
    for (let id = 0; id < DOCUMENTS; id++) await admin(server.url, '/admin/fetchers/registry/entities', { uri: `document:${id}`, type: 'resource', attributes: { owner: 'alice' } });
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ groups: ['staff'] }).setProtectedHeader({ alg: 'ES256', kid: 'bench' }).setSubject('alice').setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt(now).setExpirationTime(now + 3600).sign(privateKey);
    const claims = { groups: ['staff'], sub: 'alice', iss: ISSUER, aud: AUDIENCE, iat: now, exp: now + 3600 };
    const json = { 'Content-Type': 'application/json' };
    const ids = Array.from({ length: DOCUMENTS }, (_, id) => id);
    const scenarios: Record<string, WrkRequest[]> = {
      'check, claims as attributes': ids.map((id) => ({ method: 'POST', path: '/check', headers: json, body: JSON.stringify({ principal: { uri: 'user:alice', attributes: { claims } }, resource: { uri: `document:${id}` }, action: 'read' }) })),
      'check, bearer token': ids.map((id) => ({ method: 'POST', path: '/check', headers: json, body: JSON.stringify({ principal: { token }, resource: { uri: `document:${id}` }, action: 'read' }) })),
      'ext-authz, token and path template': ids.map((id) => ({ method: 'GET', path: `/ext-authz/documents/${id}`, headers: { Authorization: `Bearer ${token}`, 'X-Forwarded-For': '10.1.2.3' } })),
    };
    const [baselineName, ...compared] = Object.keys(scenarios) as [string, ...string[]];
    console.log(`Mesh benchmark: ${ROUNDS} paired rounds × ${SECONDS}s, ${CONNECTIONS} connections; load average ${loadavg()[0]!.toFixed(1)} on entry`);
    // Unmeasured: the JIT compiles each path first (and the token is verified once).
    for (const requests of Object.values(scenarios)) await loadRequestsWithWrk(server.url, requests, 2, CONNECTIONS);
    for (const name of compared) {
      const ratios: number[] = [];
      const micros: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? [name, baselineName] : [baselineName, name];
        const measured: Record<string, number> = {};
        for (const scenario of order) measured[scenario] = await cpuPerRequest(server, scenarios[scenario]!);
        ratios.push(measured[name]! / measured[baselineName]!);
        micros.push(measured[name]!);
      }
      console.log(`${name} vs ${baselineName}: ${median(ratios).toFixed(2)}× server CPU per request (median of ${ROUNDS}: ${ratios.map((value) => value.toFixed(2)).join(' ')}; ${median(micros).toFixed(0)} µs)`);
    }
  } finally {
    await stop(server);
    jwks.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
