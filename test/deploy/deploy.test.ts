import t from 'tap';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { Deployment } from 'kubernetes-models/apps/v1';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { parse as parseYaml } from 'yaml';
import { checkAdminExposure, ConfigError, DEFAULT_CONFIG, loadConfig, type Config } from '../../src/config/config.js';
import { STORE_PROBE_TIMEOUT_MS } from '../../src/services/readiness-conditions.js';
import { PolicySetReader } from '../../src/policy-files/policy-set.js';
import { ask, freePort, runVerdict, waitFor } from '../helpers/child.js';
import { imageVariables, parseDockerfile } from '../helpers/dockerfile.js';

const DEPLOY = fileURLToPath(new URL('../../../deploy/', import.meta.url));
/** The stateless sidecar first, as the documentation leads with it. */
const EXAMPLES = ['sidecar', 'sidecar-mongodb', 'central', 'mesh-istio'];
/** Istio's own kinds: not in the Kubernetes schema; test/deploy/mesh.test.ts holds them to each other. */
const ISTIO_API = /^(networking|security)\.istio\.io\//;
const MODELS: Record<string, new (data: any) => { validate(): void }> = { Deployment, Service, Secret, ConfigMap, NetworkPolicy, PodDisruptionBudget };

type Manifest = Record<string, any>;

function manifests(example: string): Manifest[] {
  const dir = join(DEPLOY, 'kubernetes', example);
  const kustomization = parseAllDocuments(readFileSync(join(dir, 'kustomization.yaml'), 'utf8'))[0]!.toJS();
  t.same(readdirSync(dir).sort(), ['kustomization.yaml', ...kustomization.resources].sort(), `${example}: kustomization lists every file`);
  return kustomization.resources.flatMap((file: string) =>
    parseAllDocuments(readFileSync(join(dir, file), 'utf8')).map((document) => {
      if (document.errors.length > 0) throw new Error(`${file}: ${document.errors[0]!.message}`);
      return document.toJS() as Manifest;
    }),
  );
}

/** The configuration the container's start arguments and literal variables give Verdict (secrets filled in). */
function containerConfig(container: Manifest) {
  const env = Object.fromEntries(
    (container.env as Manifest[]).map((variable) => [variable.name, variable.value ?? `from-secret-${variable.name}`]),
  );
  t.equal(container.args[0], 'start');
  return loadConfig(container.args.slice(1), env);
}

const PROBES = { startupProbe: '/health', readinessProbe: '/ready', livenessProbe: '/health' } as const;
const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** The port a probe targets, by number, and whether Verdict's API or its metrics port listens there. */
function probedPort(container: Manifest, config: Config, probe: Manifest): 'api' | 'metrics' | undefined {
  const port = (container.ports as Manifest[]).find((candidate) => candidate.name === probe.httpGet.port)?.containerPort;
  if (port === config.port) return 'api';
  if (port !== undefined && port === config.metricsPort) return 'metrics';
  return undefined;
}

function checkVerdictContainer(container: Manifest, label: string) {
  const config = containerConfig(container);
  t.ok(container.securityContext.readOnlyRootFilesystem, `${label}: read-only root filesystem`);
  t.equal(container.securityContext.allowPrivilegeEscalation, false);
  t.ok(container.resources.requests.memory && container.resources.limits.memory, `${label}: memory requested and limited`);
  const heapCap = /--max-old-space-size=(\d+)/.exec(String(container.env.find((variable: Manifest) => variable.name === 'NODE_OPTIONS')?.value))?.[1];
  t.ok(heapCap !== undefined && Number(heapCap) * 1024 * 1024 < bytes(container.resources.limits.memory), `${label}: the V8 heap is capped below the memory limit`);
  for (const [probe, path] of Object.entries(PROBES)) {
    const spec = container[probe];
    t.ok(spec?.httpGet, `${label}: ${probe} is an HTTP GET (an exec probe starts a Node process each time)`);
    t.equal(spec.httpGet.path, path, `${label}: ${probe} GETs ${path}`);
    const target = probedPort(container, config, spec);
    t.ok(target, `${label}: ${probe} targets a port Verdict listens on`);
    const host = target === 'metrics' ? (config.metricsHost ?? config.host) : config.host;
    t.notOk(LOOPBACK.has(host), `${label}: ${probe}'s port listens beyond loopback, where the kubelet connects`);
    t.ok(spec.timeoutSeconds >= 2, `${label}: ${probe} waits ${spec.timeoutSeconds} s, not the kubelet's default 1 s`);
  }
  t.ok(container.readinessProbe.timeoutSeconds * 1000 > STORE_PROBE_TIMEOUT_MS, `${label}: readiness waits longer than /ready waits for the store`);
  return config;
}

/** Kubernetes quantities as bytes (Mi and Gi only: what these manifests use). */
function bytes(quantity: string): number {
  const [, amount, unit] = /^(\d+)(Mi|Gi)$/.exec(quantity)!;
  return Number(amount) * (unit === 'Gi' ? 1024 ** 3 : 1024 ** 2);
}

t.test('every manifest passes the Kubernetes schema', async (t) => {
  for (const example of EXAMPLES) {
    for (const manifest of manifests(example)) {
      if (ISTIO_API.test(manifest.apiVersion)) continue;
      const Model = MODELS[manifest.kind];
      t.ok(Model, `${example}: a known kind ${manifest.kind}`);
      t.doesNotThrow(() => new Model!(manifest).validate(), `${example}: ${manifest.kind} ${manifest.metadata.name} is valid`);
    }
  }
});

t.test('sidecar-mongodb: Verdict starts before the app on loopback and a shared socket, non-root, every pod on one MongoDB', async (t) => {
  const all = manifests('sidecar-mongodb');
  const deployment = all.find((manifest) => manifest.kind === 'Deployment')!;
  const pod = deployment.spec.template.spec;
  t.equal(pod.securityContext.runAsNonRoot, true);
  const verdict = (pod.initContainers as Manifest[]).find((container) => container.name === 'verdict')!;
  t.equal(verdict.restartPolicy, 'Always', 'a native sidecar');
  const config = checkVerdictContainer(verdict, 'sidecar-mongodb');
  t.equal(config.host, '127.0.0.1', 'the API on loopback only');
  const socketDir = config.socket.slice(0, config.socket.lastIndexOf('/'));
  for (const container of [verdict, ...pod.containers]) {
    t.ok(
      (container.volumeMounts as Manifest[]).some((mount) => mount.name === 'verdict-socket' && mount.mountPath === socketDir),
      `${container.name} mounts the socket directory`,
    );
  }
  t.equal(config.store, 'mongodb', 'policies and entities in MongoDB, shared by every pod, not in the pod');
  const uri = (verdict.env as Manifest[]).find((variable) => variable.name === 'MONGODB_URI')!;
  t.notOk(uri.valueFrom.secretKeyRef.optional, 'MONGODB_URI is required: without it a pod would start on a store of its own');
  t.notOk((pod.volumes as Manifest[]).some((volume) => volume.emptyDir !== undefined && volume.name !== 'verdict-socket'), 'no per-pod volume holds data');
  t.ok(config.adminAuthRequired, 'an admin write changes every pod: the admin key is required');
  t.ok(pod.terminationGracePeriodSeconds * 1000 > config.shutdownGraceMs, 'Kubernetes waits longer than the grace period');
  t.equal(config.storeMaintenance, 'off', 'the sidecars only decide: no index build, no backfill from any of them');
  const maintainer = all.filter((manifest) => manifest.kind === 'Deployment').find((manifest) => manifest.metadata.name === 'verdict-maintainer')!;
  t.equal(maintainer.spec.replicas, 1, 'one maintainer beside them');
  const maintaining = containerConfig(maintainer.spec.template.spec.containers[0]);
  t.same([maintaining.store, maintaining.storeMaintenance, maintaining.host], ['mongodb', 'on', '127.0.0.1'], 'on the same MongoDB, maintaining it, serving no API beyond its probes');
});
t.test('central: a Deployment on MongoDB behind a Service', async (t) => {
  const all = manifests('central');
  const deployment = all.find((manifest) => manifest.kind === 'Deployment')!;
  const service = all.find((manifest) => manifest.kind === 'Service')!;
  const pod = deployment.spec.template.spec;
  const verdict = pod.containers[0];
  const config = checkVerdictContainer(verdict, 'central');
  t.equal(config.store, 'mongodb', 'MONGODB_URI chooses the MongoDB store');
  const budget = all.find((manifest) => manifest.kind === 'PodDisruptionBudget');
  t.same(budget?.spec.selector.matchLabels, deployment.spec.selector.matchLabels, 'a disruption budget covers the replicas');
  t.ok(budget!.spec.maxUnavailable < deployment.spec.replicas, 'and keeps some answering through a drain');
  t.same(service.spec.selector, deployment.spec.selector.matchLabels, 'the Service selects the pods');
  const ports = Object.fromEntries((verdict.ports as Manifest[]).map((port) => [port.name, port.containerPort]));
  t.same(ports, { http: config.port, metrics: config.metricsPort });
  for (const port of service.spec.ports) t.ok(port.targetPort in ports, `Service port ${port.name} targets a container port`);
  t.ok(pod.terminationGracePeriodSeconds * 1000 > config.shutdownGraceMs);
});

t.test("every probe answers 200 from a server started with its container's settings", async (t) => {
  for (const example of ['sidecar-mongodb', 'central']) {
    const pod = manifests(example).find((manifest) => manifest.kind === 'Deployment')!.spec.template.spec;
    const container = [...(pod.initContainers ?? []), ...pod.containers].find((candidate: Manifest) => candidate.name === 'verdict');
    const dir = mkdtempSync(join(tmpdir(), 'verdict-deploy-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const literal = Object.fromEntries((container.env as Manifest[]).filter((variable) => variable.value !== undefined).map((variable) => [variable.name, variable.value]));
    const [port, metricsPort] = [await freePort(), await freePort()];
    // Here: loopback, free ports, a scratch directory, and the embedded store (no MongoDB on this machine).
    const env = {
      ...literal,
      HOST: '127.0.0.1',
      PORT: String(port),
      METRICS_HOST: '127.0.0.1',
      METRICS_PORT: literal.METRICS_PORT === undefined ? '' : String(metricsPort),
      SOCKET: literal.SOCKET === undefined ? '' : join(dir, 'verdict.sock'),
      DATA_DIR: join(dir, 'data'),
      MONGODB_URI: '',
      ADMIN_API_KEY: 'deploy-test-key',
      LOG_LEVEL: 'warn',
    };
    const server = runVerdict(t, container.args, env);
    const config = containerConfig(container);
    const local = { api: `http://127.0.0.1:${port}`, metrics: `http://127.0.0.1:${metricsPort}` };
    await waitFor(local.api, '/ready', 200, server);
    for (const probe of Object.keys(PROBES)) {
      const spec = container[probe];
      const target = probedPort(container, config, spec)!;
      t.equal((await ask(local[target], 'GET', spec.httpGet.path)).status, 200, `${example}: ${probe} GET ${spec.httpGet.path} on the ${target} port answers 200`);
    }
    server.process.kill('SIGTERM');
    t.equal((await server.exited).code, 0, `${example}: stops cleanly`);
  }
});

t.test('sidecar: stateless, serving the files of a ConfigMap, mounted whole, each a valid policy', async (t) => {
  const all = manifests('sidecar');
  const configMap = all.find((manifest) => manifest.kind === 'ConfigMap')!;
  const pod = all.find((manifest) => manifest.kind === 'Deployment')!.spec.template.spec;
  const verdict = (pod.initContainers as Manifest[]).find((container) => container.name === 'verdict')!;
  const config = checkVerdictContainer(verdict, 'sidecar');
  t.equal(verdict.restartPolicy, 'Always', 'a native sidecar');
  t.equal(config.host, '127.0.0.1', 'the API on loopback only');
  t.equal(config.store, 'embedded', 'no database: the registry, if used, is the pod\'s own');
  const mount = (verdict.volumeMounts as Manifest[]).find((candidate) => candidate.mountPath === config.policiesDir);
  t.ok(mount, 'POLICIES_DIR is a mounted volume');
  t.equal(mount!.subPath, undefined, 'mounted whole: a subPath mount is never updated');
  const volume = (pod.volumes as Manifest[]).find((candidate) => candidate.name === mount!.name)!;
  t.equal(volume.configMap.name, configMap.metadata.name, 'the volume is the ConfigMap defined here');
  const files = Object.keys(configMap.data).sort();
  t.ok(files.every((file) => /\.(json|ya?ml)$/.test(file)), 'every key is a policy file name');
  const read = new PolicySetReader(DEFAULT_CONFIG).read(files.map((file) => parseYaml(configMap.data[file])), (index) => [files[index]!]);
  t.same('issues' in read ? read.issues : [], [], 'every file holds a valid policy');
});

t.test('Dockerfile: multi-stage, production dependencies, non-root, tini as PID 1, healthcheck without curl', async (t) => {
  const dockerfile = readFileSync(join(DEPLOY, 'Dockerfile'), 'utf8');
  t.equal(dockerfile.match(/^FROM /gm)?.length, 2, 'a build stage and a run stage');
  t.match(dockerfile, /npm ci --omit=dev/, 'production dependencies only');
  t.match(dockerfile, /^USER 10001:10001$/m);
  t.match(dockerfile, /^ENTRYPOINT \["\/usr\/bin\/tini", "--", "node", "dist\/src\/cli.js"\]$/m);
  t.match(dockerfile, /^HEALTHCHECK .*CMD \["node", "dist\/src\/cli.js", "healthcheck"\]$/m);
  t.notMatch(dockerfile, /curl|wget/);
});

/** The Verdict container of an example's Deployment (a native sidecar or the pod's container). */
function verdictContainerOf(all: Manifest[]): Manifest {
  const pod = all.find((manifest) => manifest.kind === 'Deployment')!.spec.template.spec;
  return [...(pod.initContainers ?? []), ...pod.containers].find((container: Manifest) => container.name === 'verdict');
}

const literalVariables = (container: Manifest): Record<string, string> =>
  Object.fromEntries((container.env as Manifest[]).filter((variable) => variable.value !== undefined).map((variable) => [variable.name, variable.value]));

/** Whether `start` with these settings is refused (a ConfigError) rather than serving. */
function startRefused(args: string[], env: NodeJS.ProcessEnv): boolean {
  try {
    checkAdminExposure(loadConfig(args, env));
    return false;
  } catch (error) {
    if (error instanceof ConfigError) return true;
    throw error;
  }
}

const OPERATORS_KEY = 'a-key-the-operator-made';

t.test('hardening: no service account token, the metrics port open to Prometheus only, scrape annotations, no shipped secret', async (t) => {
  for (const example of EXAMPLES) {
    const all = manifests(example);
    t.same(all.filter((manifest) => manifest.kind === 'Secret').map((secret) => secret.metadata.name), [], `${example}: no secret ships, not even a placeholder`);
    const deployment = all.find((manifest) => manifest.kind === 'Deployment')!;
    const pod = deployment.spec.template.spec;
    t.equal(pod.automountServiceAccountToken, false, `${example}: no service account token in the pod`);
    const verdict = verdictContainerOf(all);
    const config = containerConfig(verdict);
    const annotations = deployment.spec.template.metadata.annotations;
    t.same([annotations['prometheus.io/scrape'], annotations['prometheus.io/port'], annotations['prometheus.io/path']], ['true', String(config.metricsPort), '/metrics'], `${example}: scrape annotations name the metrics port`);
    const policy = all.find((manifest) => manifest.kind === 'NetworkPolicy');
    t.same(policy?.spec.podSelector.matchLabels, deployment.spec.selector.matchLabels, `${example}: a network policy selects the pods`);
    const rules = policy!.spec.ingress as Manifest[];
    const metricsRules = rules.filter((rule) => (rule.ports as Manifest[]).some((port) => port.port === 'metrics'));
    t.equal(metricsRules.length, 1, `${example}: one rule admits the metrics port`);
    t.same(metricsRules[0]!.from, [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }], `${example}: from the monitoring namespace only`);
    const containerPorts = [...(pod.initContainers ?? []), ...pod.containers].flatMap((container: Manifest) => (container.ports ?? []).map((port: Manifest) => port.name));
    for (const rule of rules) for (const port of rule.ports as Manifest[]) t.ok(containerPorts.includes(port.port), `${example}: the rule's port ${port.port} is a port of the pod`);
  }
});

t.test('no manifest ships a working admin key, and every one requires the key the operator creates', async (t) => {
  for (const example of EXAMPLES) {
    const all = manifests(example);
    const shipped = all.filter((manifest) => manifest.kind === 'Secret');
    for (const secret of shipped) {
      const names = [...Object.keys(secret.data ?? {}), ...Object.keys(secret.stringData ?? {})];
      t.notOk(names.some((name) => /ADMIN|KEY/i.test(name)), `${example}: the secret ${secret.metadata.name} ships no admin key (${names.join(', ')})`);
    }
    const container = verdictContainerOf(all);
    const variables = container.env as Manifest[];
    const key = variables.find((variable) => variable.name === 'ADMIN_API_KEY');
    t.equal(key?.value, undefined, `${example}: ADMIN_API_KEY has no value written here`);
    const reference = key?.valueFrom?.secretKeyRef;
    t.ok(reference, `${example}: ADMIN_API_KEY comes from a secret`);
    t.notOk(reference?.optional, `${example}: a required one: without it the pod does not start`);
    t.notOk(
      shipped.some((secret) => secret.metadata.name === reference?.name),
      `${example}: the secret ${reference?.name} is the operator's to create: no manifest here defines it`,
    );
    t.notOk(variables.some((variable) => variable.name === 'ALLOW_OPEN_ADMIN'), `${example}: never an open admin interface`);
    const args = container.args.slice(1);
    t.ok(startRefused(args, { ...literalVariables(container), ADMIN_API_KEY: '' }), `${example}: a secret holding an empty key stops the start`);
    t.notOk(startRefused(args, { ...literalVariables(container), ADMIN_API_KEY: OPERATORS_KEY }), `${example}: the operator's key lets it start`);
    t.ok(loadConfig(args, { ...literalVariables(container), ADMIN_API_KEY: OPERATORS_KEY }).adminAuthRequired, `${example}: admin authentication on`);
  }
});

t.test('the image ships no admin key and never starts with an open admin interface beyond loopback', async (t) => {
  const instructions = parseDockerfile(readFileSync(join(DEPLOY, 'Dockerfile'), 'utf8'));
  const image = imageVariables(instructions);
  t.notOk(instructions.some((instruction) => /ADMIN_API_KEY|ALLOW_OPEN_ADMIN/.test(instruction.args)), 'no ENV, ARG or command sets a key or opens admin');
  t.ok(startRefused([], image), `a fresh container (${Object.entries(image).map(([name, value]) => `${name}=${value}`).join(' ')}) refuses to start without a key`);
  t.ok(startRefused([], { ...image, ADMIN_API_KEY: '' }), 'and with an empty key');
  const keyed = loadConfig([], { ...image, ADMIN_API_KEY: OPERATORS_KEY });
  t.notOk(startRefused([], { ...image, ADMIN_API_KEY: OPERATORS_KEY }), 'with the operator\'s key it starts');
  t.ok(keyed.adminAuthRequired, 'admin authentication on');
});
