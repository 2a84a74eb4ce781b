// This build against other builds of Verdict, by server CPU per request (npm run bench:builds): what a
// change costs or saves, measured in the same run: server CPU per request, and requests answered a second. BUILDS_BENCH_BASES names the other builds' CLIs,
// comma-separated (e.g. `../base/dist/src/cli.js` for a commit built in another worktree).
//
// Each build serves the same 100 policies; the scenarios are a /check by attributes, a bulk of 100
// such checks, a bulk of 100 checks that every policy denies (what the live view keeps some of), and,
// for the builds that have it, Envoy's external authorization with a bearer token.
// In each of BUILDS_BENCH_ROUNDS rounds every build is measured once per scenario, the order turned
// round each round (whichever goes second tends to measure faster); the figures are the medians of
// each round's ratio to this build. BUILDS_BENCH_ARGS sets the flags every build starts with
// (default `--evaluation auto`), BUILDS_BENCH_ONLY the scenarios (by a part of their name). The load comes from this process (undici, CONNECTIONS callers).
// BUILDS_BENCH_SHADOW=1 writes a shadow policy too (in place of `owners`, the same rule under another name), so that every check is
// also decided by the shadows, which agree (a disagreement costs two explanations on the front, wherever the check was decided).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadavg } from 'node:os';
import { Pool, request } from 'undici';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { benchDirectory } from './seed.js';
import { keyedPolicies } from './engine.js';
import { startVerdict, stop, type RunningServer } from './server.js';
import { cpuSeconds } from './process-stats.js';

const ROUNDS = Number(process.env.BUILDS_BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BUILDS_BENCH_SECONDS ?? 4);
const BASES = (process.env.BUILDS_BENCH_BASES ?? '').split(',').map((path) => path.trim()).filter(Boolean);
/** Flags every build starts with (e.g. `--evaluation inline`, to leave the worker pool out). */
const ARGS = (process.env.BUILDS_BENCH_ARGS ?? '--evaluation auto').split(' ').filter(Boolean);
/** Only the scenarios whose name holds this text. */
const ONLY = process.env.BUILDS_BENCH_ONLY;
const SHADOW = process.env.BUILDS_BENCH_SHADOW === '1';
const CONNECTIONS = 64;
const POLICIES = 100;
const ISSUER = 'https://idp.bench';
const AUDIENCE = 'documents-app';

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const check = (index: number, role = 'reader') => ({ principal: { attributes: { role } }, resource: { attributes: { id: `doc-${(index * 7919) % POLICIES}` } }, action: 'read' });
const json = { 'content-type': 'application/json' };

interface Build {
  name: string;
  server: RunningServer;
  /** Whether it was started with external authorization (an older build may not have it). */
  extAuthz: boolean;
  dataDir: string;
}

/** One request of a scenario: resolves once answered 200, else rejects. */
type Send = (pool: Pool, index: number) => Promise<void>;

const answered = (path: string) => async (answer: Awaited<ReturnType<Pool['request']>>) => {
  const text = await answer.body.text();
  if (answer.statusCode !== 200) throw new Error(`${path} answered ${answer.statusCode}: ${text.slice(0, 200)}`);
};

/** Server CPU per request, in µs, and requests answered per second, with CONNECTIONS callers sending for `seconds`. */
async function measured(server: RunningServer, send: Send, seconds = SECONDS): Promise<{ cpu: number; rate: number }> {
  const pool = new Pool(server.url, { connections: CONNECTIONS });
  const before = cpuSeconds(server.child.pid!);
  const started = performance.now();
  const until = started + seconds * 1000;
  let sent = 0;
  const caller = async () => {
    while (performance.now() < until) await send(pool, sent++);
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, caller));
  const cpu = ((cpuSeconds(server.child.pid!) - before) * 1e6) / Math.max(1, sent);
  const rate = (sent * 1000) / (performance.now() - started);
  await pool.close();
  return { cpu, rate };
}

async function admin(url: string, path: string, body: unknown): Promise<void> {
  const answer = await request(`${url}${path}`, { method: 'POST', body: JSON.stringify(body), headers: json });
  await answered(path)(answer);
}

/** A build started on an empty store, with external authorization when it accepts the flags, then given the policies over HTTP. */
async function started(name: string, cli: string | undefined, extAuthzArgs: string[]): Promise<Build> {
  const dir = benchDirectory();
  let build: Build;
  try {
    build = { name, server: await startVerdict(dir, [...ARGS, ...extAuthzArgs], { cli }), extAuthz: true, dataDir: dir };
  } catch {
    build = { name, server: await startVerdict(dir, ARGS, { cli }), extAuthz: false, dataDir: dir };
  }
  for (const policy of keyedPolicies(POLICIES)) await admin(build.server.url, '/admin/policies', policy);
  await admin(build.server.url, '/admin/policies', {
    name: 'owners',
    rules: [{ name: 'owner-reads', effect: 'allow', principal_conditions: [{ path: 'attributes.claims.sub', operator: '==', value: 'alice' }], actions: ['read'] }],
  });
  if (SHADOW) {
    await admin(build.server.url, '/admin/policies', {
      name: 'owners-next',
      shadow: 'owners',
      rules: [{ name: 'alice-reads', effect: 'allow', principal_conditions: [{ path: 'attributes.claims.sub', operator: '==', value: 'alice' }], actions: ['read'] }],
    });
  }
  return build;
}

async function main(): Promise<void> {
  if (BASES.length === 0) throw new Error('BUILDS_BENCH_BASES: name at least one other build\'s dist/src/cli.js, comma-separated');
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'ES256' };
  const jwks = createServer((_request, response) => response.writeHead(200, json).end(JSON.stringify({ keys: [jwk] })));
  await new Promise<void>((done) => jwks.listen(0, '127.0.0.1', done));
  const settings = benchDirectory();
  writeFileSync(join(settings, 'tokens.json'), JSON.stringify({ key_sets: [{ name: 'idp', issuer: ISSUER, audience: AUDIENCE, jwks_url: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks` }] }));
  writeFileSync(join(settings, 'mapping.json'), JSON.stringify({ principal: { uri: 'user:{sub}' }, routes: [{ path: '/documents/{id}', resource_type: 'document' }] }));
  const extAuthzArgs = ['--tokens', join(settings, 'tokens.json'), '--ext-authz', join(settings, 'mapping.json')];
  const now = Math.floor(Date.now() / 1000);
  const token = await new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid: 'bench' }).setSubject('alice').setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt(now).setExpirationTime(now + 3600).sign(privateKey);
  const bulk = JSON.stringify(Array.from({ length: 100 }, (_, index) => check(index)));
  const deniedBulk = JSON.stringify(Array.from({ length: 100 }, (_, index) => check(index, 'guest')));
  const scenarios: { name: string; send: Send; needsExtAuthz?: boolean }[] = [
    { name: '/check', send: (pool, index) => pool.request({ method: 'POST', path: '/check', headers: json, body: JSON.stringify(check(index)) }).then(answered('/check')) },
    { name: 'bulk-100 (per bulk)', send: (pool) => pool.request({ method: 'POST', path: '/check/bulk', headers: json, body: bulk }).then(answered('/check/bulk')) },
    { name: 'denied bulk-100 (per bulk)', send: (pool) => pool.request({ method: 'POST', path: '/check/bulk', headers: json, body: deniedBulk }).then(answered('/check/bulk')) },
    {
      name: 'ext-authz (token)',
      needsExtAuthz: true,
      send: (pool, index) => pool.request({ method: 'GET', path: `/ext-authz/documents/${index % 100}`, headers: { authorization: `Bearer ${token}` } }).then(answered('/ext-authz')),
    },
  ];
  const builds: Build[] = [];
  try {
    builds.push(await started('this build', undefined, extAuthzArgs));
    for (const base of BASES) builds.push(await started(base, resolve(base), extAuthzArgs));
    console.log(`Builds benchmark: ${ROUNDS} rounds × ${SECONDS} s, ${CONNECTIONS} connections, ${POLICIES} policies${SHADOW ? ' and a shadow' : ''}; load average ${loadavg()[0]!.toFixed(1)} on entry`);
    for (const scenario of scenarios) {
      const compared = builds.filter((build) => build.extAuthz || scenario.needsExtAuthz !== true);
      if (compared[0] !== builds[0] || (ONLY !== undefined && !scenario.name.includes(ONLY))) continue;
      for (const { server } of compared) await measured(server, scenario.send, 2); // the JIT's warm-up, unmeasured
      const figures = compared.map(() => ({ cpu: [] as number[], cpuRatios: [] as number[], rateRatios: [] as number[] }));
      for (let round = 0; round < ROUNDS; round++) {
        const order = compared.map((_, index) => index);
        if (round % 2 === 1) order.reverse();
        const runs: { cpu: number; rate: number }[] = [];
        for (const index of order) runs[index] = await measured(compared[index]!.server, scenario.send);
        figures.forEach((figure, index) => {
          figure.cpu.push(runs[index]!.cpu);
          figure.cpuRatios.push(runs[index]!.cpu / runs[0]!.cpu);
          figure.rateRatios.push(runs[index]!.rate / runs[0]!.rate);
        });
      }
      console.log(`${scenario.name}: this build ${median(figures[0]!.cpu).toFixed(1)} µs of server CPU a request`);
      for (const [index, build] of compared.entries()) {
        if (index === 0) continue;
        const { cpu, cpuRatios, rateRatios } = figures[index]!;
        const rounds = (values: number[]) => values.map((value) => value.toFixed(2)).join(' ');
        console.log(`  ${build.name}: ${median(cpu).toFixed(1)} µs, CPU ${median(cpuRatios).toFixed(2)} × this build's (rounds ${rounds(cpuRatios)}), requests a second ${median(rateRatios).toFixed(2)} × (rounds ${rounds(rateRatios)})`);
      }
    }
  } finally {
    for (const { server, dataDir } of builds) {
      await stop(server);
      rmSync(dataDir, { recursive: true, force: true });
    }
    jwks.close();
    rmSync(settings, { recursive: true, force: true });
  }
}

await main();
