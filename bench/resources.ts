/**
 * `npm run resources -- <sidecar|central>`: the memory and CPU one Verdict process uses with the flags
 * and variables of a Kubernetes example (deploy/kubernetes/<example>/deployment.yaml, NODE_OPTIONS and
 * ENTITY_CACHE_SIZE included), to set that manifest's requests and limits from. The registry is filled
 * to the entity cache's size and the process restarted, so the cache starts full, as a pod's does;
 * then it measures idle, a steady RESOURCES_RATE checks/s (default 500), and as many checks as 16
 * connections get answered. MongoDB where MONGODB_URI is set, else the embedded store (the figures
 * then leave out the MongoDB driver's own few MB). Also the CPU an exec probe (`verdict healthcheck`)
 * costs against an HTTP probe. With a CPU limit (the manifest's `resources.limits.cpu`, or RESOURCES_CPU_LIMIT,
 * e.g. `100m`, to try one the manifest does not set), the server runs in a cgroup with that CPU quota, as
 * the kubelet would run it; where no cgroup can be made (not root, no writable cgroup mount) it says so and
 * measures without. Linux only: it reads /proc.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { parseAllDocuments } from 'yaml';
import { keyedPolicies } from './engine.js';
import { freePort, waitForHealth } from './server.js';
import { podGroup } from './cgroups.js';
import { cpuSeconds } from './process-stats.js';

const EXAMPLE = process.argv[2] ?? 'sidecar';
const RATE = Number(process.env.RESOURCES_RATE ?? 500);
const PHASE_SECONDS = Number(process.env.RESOURCES_SECONDS ?? 20);
const POLICIES = 100;
const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const MANIFEST = fileURLToPath(new URL(`../../deploy/kubernetes/${EXAMPLE}/deployment.yaml`, import.meta.url));
const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));

type Manifest = Record<string, any>;

/** The Verdict container's start arguments, literal variables (those from secrets are left out) and CPU limit. */
function verdictContainer(): { args: string[]; env: Record<string, string>; cpuLimit: string | undefined } {
  const [deployment] = parseAllDocuments(readFileSync(MANIFEST, 'utf8')).map((document) => document.toJS() as Manifest);
  const pod = deployment!.spec.template.spec;
  const container = [...(pod.initContainers ?? []), ...pod.containers].find((candidate: Manifest) => candidate.name === 'verdict');
  const env = Object.fromEntries(
    (container.env as Manifest[]).filter((variable) => variable.value !== undefined).map((variable) => [variable.name, String(variable.value)]),
  );
  return { args: container.args, env, cpuLimit: container.resources?.limits?.cpu as string | undefined };
}

/** A Kubernetes CPU quantity (`100m`, `1`, `1.5`) in cores. */
function cores(quantity: string): number {
  const value = quantity.endsWith('m') ? Number(quantity.slice(0, -1)) / 1000 : Number(quantity);
  if (!(value > 0)) throw new Error(`not a CPU quantity: ${quantity}`);
  return value;
}

/** CPU seconds this process's finished children have used. */
function childrenCpuSeconds(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND;
}

function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kilobytes = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)![1]) * 1024;
  return { rss: kilobytes('VmRSS'), peak: kilobytes('VmHWM') };
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
const millicores = (cores: number) => `${(cores * 1000).toFixed(0)}m`;

interface Phase {
  cores: number;
  rss: number;
  answered: number;
}

/** Runs `load` while sampling the server's RSS; returns the CPU it used per second and the highest RSS seen. */
async function measure(pid: number, load: (until: number) => Promise<number>): Promise<Phase> {
  const startCpu = cpuSeconds(pid);
  const started = performance.now();
  let rss = memory(pid).rss;
  const sampler = setInterval(() => (rss = Math.max(rss, memory(pid).rss)), 250);
  const answered = await load(started + PHASE_SECONDS * 1000);
  clearInterval(sampler);
  const seconds = (performance.now() - started) / 1000;
  return { cores: (cpuSeconds(pid) - startCpu) / seconds, rss: Math.max(rss, memory(pid).rss), answered: answered / seconds };
}

function entity(index: number) {
  return {
    uri: `user:${index}`,
    type: 'principal',
    attributes: { role: 'reader', department: `dept-${index % 40}`, region: ['eu', 'us', 'apac'][index % 3], level: index % 7, groups: [`g-${index % 11}`, `g-${index % 13}`] },
  };
}

function check(index: number, entities: number): string {
  return JSON.stringify({ principal: { uri: `user:${(index * 7919) % entities}` }, resource: { attributes: { id: `doc-${index % POLICIES}` } }, action: 'read' });
}

/** The bench's policies written into `directory`, a file each, as a policy folder holds them; returns the directory. */
function policyFiles(directory: string): string {
  mkdirSync(directory);
  keyedPolicies(POLICIES).forEach((policy, index) => writeFileSync(join(directory, `policy-${String(index).padStart(4, '0')}.json`), JSON.stringify(policy)));
  return directory;
}

async function main(): Promise<void> {
  const { args, env: manifestEnv, cpuLimit: manifestCpuLimit } = verdictContainer();
  const cpuLimit = process.env.RESOURCES_CPU_LIMIT ?? manifestCpuLimit;
  const group = cpuLimit === undefined ? undefined : podGroup({ cpu: cores(cpuLimit) }, `verdict-resources-${process.pid}`);
  const limited = typeof group === 'object' ? group : undefined;
  const cpuLimitLine =
    cpuLimit === undefined
      ? 'no CPU limit (the manifest sets none; RESOURCES_CPU_LIMIT tries one)'
      : limited === undefined
        ? `CPU limit ${cpuLimit} NOT applied: no cgroup could be made here (${group as string})`
        : `CPU limit ${cpuLimit}, applied as a cgroup CPU quota`;
  console.error(`resources: ${cpuLimitLine}`);
  const entities = Number(manifestEnv.ENTITY_CACHE_SIZE ?? 100_000);
  const dir = mkdtempSync(join(tmpdir(), 'verdict-resources-'));
  const [port, metricsPort] = [await freePort(), await freePort()];
  const env = {
    ...process.env,
    ...manifestEnv,
    // Here, on loopback and in a scratch directory; the store is this machine's (MONGODB_URI or embedded).
    HOST: '127.0.0.1',
    PORT: String(port),
    METRICS_HOST: '127.0.0.1',
    METRICS_PORT: manifestEnv.METRICS_PORT === undefined ? '' : String(metricsPort),
    SOCKET: manifestEnv.SOCKET === undefined ? '' : join(dir, 'verdict.sock'),
    DATA_DIR: join(dir, 'data'),
    // A manifest that mounts its policies as files (the sidecar's ConfigMap) gets the bench's as files here.
    ...(manifestEnv.POLICIES_DIR !== undefined && { POLICIES_DIR: policyFiles(join(dir, 'policies')) }),
    ADMIN_API_KEY: 'resources-bench-key',
    LOG_LEVEL: 'warn',
  };
  const url = `http://127.0.0.1:${port}`;
  const headers = { 'content-type': 'application/json', 'way-api-key': env.ADMIN_API_KEY };
  const start = async (): Promise<{ child: ChildProcess; readyMillis: number }> => {
    const began = performance.now();
    const command = [process.execPath, CLI, ...args];
    const [file, ...rest] = limited === undefined ? command : limited.wrap(command);
    const child = spawn(file!, rest, { env, stdio: ['ignore', 'ignore', 'inherit'] });
    await waitForHealth(url);
    return { child, readyMillis: performance.now() - began };
  };
  const stop = (child: ChildProcess) => new Promise((resolve) => child.once('exit', resolve).kill('SIGTERM'));
  // A pool per server process: connections kept alive to a stopped one would fail.
  let pool = new Pool(url, { connections: 16 });
  const post = async (path: string, body: string) => {
    const response = await pool.request({ path, method: 'POST', body, headers });
    await response.body.dump();
    if (response.statusCode !== 200) throw new Error(`POST ${path}: ${response.statusCode}`);
  };
  const began = performance.now();
  const progress = (step: string) => console.error(`resources: ${step} (${((performance.now() - began) / 1000).toFixed(0)} s)`);

  try {
    let { child } = await start();
    if (manifestEnv.POLICIES_DIR === undefined) for (const policy of keyedPolicies(POLICIES)) await post('/admin/policies', JSON.stringify(policy));
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let index = next++; index < entities; index = next++) await post('/admin/fetchers/registry/entities', JSON.stringify(entity(index)));
      }),
    );
    progress(`registered ${entities} entities`);
    await stop(child);
    await pool.close();
    pool = new Pool(url, { connections: 16 });
    const restarted = await start();
    child = restarted.child;
    progress('restarted with the entity cache full');
    const pid = child.pid!;
    const ready = await pool.request({ path: '/ready?verbose=true', method: 'GET' });
    const evaluation = ((await ready.body.json()) as { checks: Record<string, string> }).checks.evaluation;

    const idle = await measure(pid, async (until) => {
      await new Promise((resolve) => setTimeout(resolve, until - performance.now()));
      return 0;
    });
    const steady = await measure(pid, async (until) => {
      let sent = 0;
      const inFlight: Promise<void>[] = [];
      const began = performance.now();
      while (performance.now() < until) {
        const due = Math.floor(((performance.now() - began) / 1000) * RATE);
        for (; sent < due; sent++) inFlight.push(post('/check', check(sent, entities)));
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await Promise.all(inFlight);
      return sent;
    });
    const saturated = await measure(pid, async (until) => {
      let answered = 0;
      await Promise.all(
        Array.from({ length: 16 }, async (_, lane) => {
          for (let index = lane; performance.now() < until; index += 16, answered++) await post('/check', check(index, entities));
        }),
      );
      return answered;
    });
    const peak = memory(pid).peak;
    progress('measured idle, steady and saturated');

    const probes = 10;
    const probeArgs = ['healthcheck', '--port', String(port)];
    const before = childrenCpuSeconds();
    for (let index = 0; index < probes; index++) spawnSync(process.execPath, [CLI, ...probeArgs], { env, stdio: 'ignore' });
    const execProbe = (childrenCpuSeconds() - before) / probes;
    const httpBefore = cpuSeconds(pid);
    for (let index = 0; index < 1000; index++) {
      const response = await pool.request({ path: '/ready', method: 'GET' });
      await response.body.dump();
    }
    const httpProbe = (cpuSeconds(pid) - httpBefore) / 1000;

    const store = process.env.MONGODB_URI ? 'MongoDB' : 'the embedded store';
    console.log(`Verdict resources: deploy/kubernetes/${EXAMPLE} (${args.join(' ')}; ${Object.entries(manifestEnv).map(([name, value]) => `${name}=${value}`).join(' ')})`);
    console.log(`  ${POLICIES} policies, ${entities} entities (the entity cache full), ${store}; ready ${(restarted.readyMillis / 1000).toFixed(1)} s after start`);
    console.log(`  ${cpuLimitLine}; bulk checks: ${evaluation}`);
    console.log(`  idle:                 ${mib(idle.rss)} RSS, ${millicores(idle.cores)} CPU`);
    console.log(`  ${RATE} checks/s:       ${mib(steady.rss)} RSS, ${millicores(steady.cores)} CPU`);
    console.log(`  saturated (16 conn.): ${mib(saturated.rss)} RSS, ${millicores(saturated.cores)} CPU, ${saturated.answered.toFixed(0)} checks/s`);
    console.log(`  peak RSS ${mib(peak)}`);
    console.log(`  probes: exec (verdict healthcheck) ${(execProbe * 1000).toFixed(0)} CPU-ms each; HTTP GET /ready ${(httpProbe * 1000).toFixed(2)} CPU-ms each`);
    await stop(child);
  } finally {
    await pool.close();
    rmSync(dir, { recursive: true, force: true });
    limited?.remove();
  }
}

await main();
