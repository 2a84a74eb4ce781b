import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Secret, Service } from 'kubernetes-models/v1';
import { loadConfig } from '../src/config.js';

const DEPLOY = fileURLToPath(new URL('../../deploy/', import.meta.url));
const MODELS: Record<string, new (data: any) => { validate(): void }> = { Deployment, Service, Secret };
const ROUTES = ['/health', '/ready', '/metrics'];

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

function checkVerdictContainer(container: Manifest, label: string) {
  const config = containerConfig(container);
  t.ok(container.securityContext.readOnlyRootFilesystem, `${label}: read-only root filesystem`);
  t.equal(container.securityContext.allowPrivilegeEscalation, false);
  t.ok(container.resources.requests.memory && container.resources.limits.memory, `${label}: memory requested and limited`);
  for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
    const spec = container[probe];
    t.ok(spec, `${label}: ${probe}`);
    if (spec.exec !== undefined) {
      t.same(spec.exec.command.slice(0, 3), ['node', 'dist/src/cli.js', 'healthcheck'], `${label}: ${probe} runs verdict healthcheck`);
      t.equal(spec.exec.command.includes('--live'), probe === 'livenessProbe', `${label}: ${probe} checks ${probe === 'livenessProbe' ? '/health' : '/ready'}`);
    } else {
      t.ok(ROUTES.includes(spec.httpGet.path), `${label}: ${probe} GETs a route Verdict serves`);
      t.equal(spec.httpGet.path === '/ready', probe === 'readinessProbe', `${label}: only readiness uses /ready`);
      const port = (container.ports as Manifest[]).find((candidate) => candidate.name === spec.httpGet.port);
      t.equal(port?.containerPort, config.port, `${label}: ${probe} targets the port Verdict listens on`);
      t.equal(config.host, '0.0.0.0', `${label}: an HTTP probe needs a non-loopback address`);
    }
  }
  return config;
}

t.test('every manifest passes the Kubernetes schema', async (t) => {
  for (const example of ['sidecar', 'central']) {
    for (const manifest of manifests(example)) {
      const Model = MODELS[manifest.kind];
      t.ok(Model, `${example}: a known kind ${manifest.kind}`);
      t.doesNotThrow(() => new Model!(manifest).validate(), `${example}: ${manifest.kind} ${manifest.metadata.name} is valid`);
    }
  }
});

t.test('sidecar: Verdict starts before the app on loopback and a shared socket, non-root', async (t) => {
  const [deployment] = manifests('sidecar');
  const pod = deployment!.spec.template.spec;
  t.equal(pod.securityContext.runAsNonRoot, true);
  const verdict = (pod.initContainers as Manifest[]).find((container) => container.name === 'verdict')!;
  t.equal(verdict.restartPolicy, 'Always', 'a native sidecar');
  const config = checkVerdictContainer(verdict, 'sidecar');
  t.equal(config.host, '127.0.0.1');
  const socketDir = config.socket.slice(0, config.socket.lastIndexOf('/'));
  for (const container of [verdict, ...pod.containers]) {
    t.ok(
      (container.volumeMounts as Manifest[]).some((mount) => mount.name === 'verdict-socket' && mount.mountPath === socketDir),
      `${container.name} mounts the socket directory`,
    );
  }
  t.ok((verdict.volumeMounts as Manifest[]).some((mount) => mount.mountPath === config.dataDir), 'the data directory is writable');
  t.ok(pod.terminationGracePeriodSeconds * 1000 > config.shutdownGraceMs, 'Kubernetes waits longer than the grace period');
});

t.test('central: a Deployment on MongoDB behind a Service', async (t) => {
  const all = manifests('central');
  const deployment = all.find((manifest) => manifest.kind === 'Deployment')!;
  const service = all.find((manifest) => manifest.kind === 'Service')!;
  const secrets = all.filter((manifest) => manifest.kind === 'Secret').map((secret) => secret.metadata.name);
  const pod = deployment.spec.template.spec;
  const verdict = pod.containers[0];
  const config = checkVerdictContainer(verdict, 'central');
  t.equal(config.store, 'mongodb', 'MONGODB_URI chooses the MongoDB store');
  for (const variable of verdict.env as Manifest[]) {
    if (variable.valueFrom !== undefined) t.ok(secrets.includes(variable.valueFrom.secretKeyRef.name), `${variable.name} comes from a secret defined here`);
  }
  t.same(service.spec.selector, deployment.spec.selector.matchLabels, 'the Service selects the pods');
  const ports = Object.fromEntries((verdict.ports as Manifest[]).map((port) => [port.name, port.containerPort]));
  t.same(ports, { http: config.port, metrics: config.metricsPort });
  for (const port of service.spec.ports) t.ok(port.targetPort in ports, `Service port ${port.name} targets a container port`);
  t.ok(pod.terminationGracePeriodSeconds * 1000 > config.shutdownGraceMs);
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
