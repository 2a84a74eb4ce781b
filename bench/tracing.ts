// What tracing costs a decision (npm run bench:tracing): server CPU per /check and per bulk-100 with
// tracing off, on at a 1% ratio, and on at 100%, each exporting to a collector in this process that
// answers at once. ROUNDS rounds in turn (the machine is shared and noisy); the figures are medians of
// each round's ratio to tracing off. The load comes from this process (undici, CONNECTIONS connections).
// The requests carry no `traceparent`: each starts its trace, sampled at the ratio (a caller's unsampled
// parent would be followed, and no request sampled at any ratio).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { Pool } from 'undici';
import { benchDirectory, copyOf, seed } from './seed.js';
import { startVerdict, stop, type RunningServer } from './server.js';
import { cpuSeconds } from './process-stats.js';

const ROUNDS = Number(process.env.TRACING_BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.TRACING_BENCH_SECONDS ?? 3);
const CONNECTIONS = 64;
const POLICIES = 100;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const check = (index: number) => ({ principal: { attributes: { role: 'reader' } }, resource: { attributes: { id: `doc-${(index * 7919) % POLICIES}` } }, action: 'read' });

/** Server CPU per request, in µs, with CONNECTIONS callers posting `body` to `path` for SECONDS. */
async function cpuPerRequest(server: RunningServer, path: string, body: string): Promise<number> {
  const pool = new Pool(server.url, { connections: CONNECTIONS });
  const before = cpuSeconds(server.child.pid!);
  const until = performance.now() + SECONDS * 1000;
  let sent = 0;
  const caller = async () => {
    while (performance.now() < until) {
      const response = await pool.request({ method: 'POST', path, body, headers: { 'content-type': 'application/json' } });
      await response.body.dump();
      if (response.statusCode !== 200) throw new Error(`${path} answered ${response.statusCode}`);
      sent++;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, caller));
  const micros = ((cpuSeconds(server.child.pid!) - before) * 1e6) / sent;
  await pool.close();
  return micros;
}

async function main(): Promise<void> {
  const collector = createServer((request, response) => request.resume().on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}')));
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  const seeded = benchDirectory();
  await seed(seeded, { to: POLICIES });
  const variants: { name: string; args: string[] }[] = [
    { name: 'tracing off', args: [] },
    { name: 'tracing at 1%', args: ['--otlp-endpoint', endpoint, '--trace-sample-ratio', '0.01'] },
    { name: 'tracing at 100%', args: ['--otlp-endpoint', endpoint, '--trace-sample-ratio', '1'] },
  ];
  const scenarios: [string, string, string][] = [
    ['/check', '/check', JSON.stringify(check(1))],
    ['bulk-100 (per bulk)', '/check/bulk', JSON.stringify(Array.from({ length: 100 }, (_, index) => check(index)))],
  ];
  const servers: { dir: string; server: RunningServer }[] = [];
  try {
    for (const variant of variants) {
      const dir = copyOf(seeded);
      servers.push({ dir, server: await startVerdict(dir, ['--evaluation', 'inline', ...variant.args]) });
    }
    console.log(`Tracing benchmark: ${ROUNDS} rounds × ${SECONDS} s, ${CONNECTIONS} connections, ${POLICIES} policies; load average ${loadavg()[0]!.toFixed(1)} on entry`);
    for (const [label, path, body] of scenarios) {
      for (const { server } of servers) await cpuPerRequest(server, path, body); // warm-up, unmeasured
      const ratios = variants.map(() => [] as number[]);
      const micros = variants.map(() => [] as number[]);
      for (let round = 0; round < ROUNDS; round++) {
        const order = variants.map((_, index) => index);
        if (round % 2 === 1) order.reverse();
        const measured: number[] = [];
        for (const index of order) measured[index] = await cpuPerRequest(servers[index]!.server, path, body);
        variants.forEach((_, index) => {
          ratios[index]!.push(measured[index]! / measured[0]!);
          micros[index]!.push(measured[index]!);
        });
      }
      console.log(
        `${label}: ${variants.map((variant, index) => `${variant.name} ${median(micros[index]!).toFixed(1)} µs${index === 0 ? '' : ` (${median(ratios[index]!).toFixed(2)} ×)`}`).join('; ')}`,
      );
    }
  } finally {
    for (const { dir, server } of servers) {
      await stop(server);
      rmSync(dir, { recursive: true, force: true });
    }
    rmSync(seeded, { recursive: true, force: true });
    collector.close();
  }
}

await main();
