/**
 * `npm run soak`: a bounded steady load on one Verdict process for SOAK_SECONDS (default 90):
 * single checks and bulk checks (the bulks decided in the worker pool) from wrk, plus a steady
 * trickle of admin writes. Prints RSS and live heap (after a full GC) after a warm-up and at the end,
 * and every error (non-2xx answers and socket errors).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { keyedPolicies } from './engine.js';
import { freePort, waitForHealth } from './server.js';
import { loadWithWrk, wrkAvailable } from './wrk.js';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 90);
const WARM_UP_SECONDS = 10;
const POLICIES = 100;
const ENTITIES = 1000;

const server = fileURLToPath(new URL('soak-server.js', import.meta.url));
const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

const check = (index: number) =>
  JSON.stringify({
    principal: index % 2 === 0 ? { uri: `user:${index % ENTITIES}` } : { attributes: { role: 'reader' } },
    resource: { attributes: { id: `doc-${index % POLICIES}`, kind: 'report' } },
    action: index % 5 === 0 ? 'write' : 'read',
  });
const attributeCheck = (index: number) => check(index * 2 + 1);
const bulk = (offset: number) => `[${Array.from({ length: 200 }, (_, i) => attributeCheck(offset + i)).join(',')}]`;

async function send(url: string, method: string, path: string, body: unknown): Promise<number> {
  const response = await request(url + path, { method: method as 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  await response.body.dump();
  return response.statusCode;
}

async function main(): Promise<void> {
  if (!(await wrkAvailable())) {
    console.error("soak: wrk is not installed; install Debian's package: apt-get install wrk");
    process.exit(2);
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'verdict-soak-'));
  const port = await freePort();
  const child = spawn(process.execPath, ['--expose-gc', server, 'start', '--port', String(port), '--data-dir', dataDir, '--log-level', 'warn'], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const memory = () =>
    new Promise<NodeJS.MemoryUsage>((resolve) => {
      child.once('message', (usage) => resolve(usage as NodeJS.MemoryUsage));
      child.send('memory');
    });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForHealth(url);
    let errors = 0;
    const expect200 = (status: number) => {
      if (status !== 200) errors++;
    };
    for (const policy of keyedPolicies(POLICIES)) expect200(await send(url, 'POST', '/admin/policies', policy));
    for (let index = 0; index < ENTITIES; index++) {
      expect200(await send(url, 'POST', '/admin/fetchers/registry/entities', { uri: `user:${index}`, attributes: { role: 'reader' } }));
    }

    // A steady trickle of writes that replace what exists, so that the data does not grow.
    let writing = true;
    let writes = 0;
    const writer = (async () => {
      for (let index = 0; writing; index++) {
        const uri = `user:${index % ENTITIES}`;
        expect200(await send(url, 'PUT', `/admin/fetchers/registry/entities/${encodeURIComponent(uri)}`, { uri, attributes: { role: 'reader', seen: index } }));
        const policy = keyedPolicies(POLICIES)[index % POLICIES]!;
        expect200(await send(url, 'PUT', `/admin/policies/${policy.name}`, { ...policy, description: `revision ${index}` }));
        writes += 2;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const load = (seconds: number) =>
      Promise.all([
        loadWithWrk(`${url}/check`, Array.from({ length: 200 }, (_, i) => check(i)), seconds, 16),
        loadWithWrk(`${url}/check/bulk`, Array.from({ length: 10 }, (_, i) => bulk(i)), seconds, 4),
      ]);

    const [warmSingle, warmBulk] = await load(WARM_UP_SECONDS);
    errors += warmSingle.errors + warmBulk.errors;
    const start = await memory();
    const [single, bulkLoad] = await load(SECONDS);
    const end = await memory();
    writing = false;
    await writer;
    errors += single.errors + bulkLoad.errors;

    console.log(`Verdict soak: ${SECONDS} s after a ${WARM_UP_SECONDS} s warm-up; ${POLICIES} policies, ${ENTITIES} entities`);
    console.log(`  /check:      ${single.requestsPerSecond.toFixed(0)} req/s, p99 ${single.p99Millis.toFixed(1)} ms (16 connections)`);
    console.log(`  /check/bulk: ${bulkLoad.requestsPerSecond.toFixed(0)} req/s of 200 items, p99 ${bulkLoad.p99Millis.toFixed(1)} ms (4 connections)`);
    console.log(`  admin writes during the run: ${writes}`);
    console.log(`  RSS:  ${megabytes(start.rss)} → ${megabytes(end.rss)}`);
    console.log(`  heap: ${megabytes(start.heapUsed)} → ${megabytes(end.heapUsed)} live (${megabytes(start.heapTotal)} → ${megabytes(end.heapTotal)} total)`);
    console.log(`  errors: ${errors}`);
    if (errors > 0) process.exitCode = 1;
  } finally {
    child.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
