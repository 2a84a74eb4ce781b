import t from 'tap';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config/config.js';
import { EXT_AUTHZ_PREFIX, ExtAuthzMapping } from '../../src/ext-authz/mapping.js';
import { readTokenSettings } from '../../src/identity/settings.js';
import { ready, scratchDir, startServer } from '../helpers/server.js';
import { signingKey, TokenIssuer, tokenFor } from '../helpers/token-issuer.js';
import { throughEnvoy, type EnvoyFilter } from '../helpers/envoy-ext-authz.js';

// The mesh examples of deploy/ as a platform engineer applies them: the Istio pieces name each
// other, the plain Envoy's filter agrees with the mapping, and the example's own policies, mapping
// and key set settings decide as docs/mesh.md says (only the key set's URL is the test's).

const DEPLOY = fileURLToPath(new URL('../../../deploy/', import.meta.url));
type Manifest = Record<string, any>;

const documents = (file: string): Manifest[] => parseAllDocuments(readFileSync(join(DEPLOY, file), 'utf8')).map((document) => document.toJS() as Manifest);
const example = (file: string) => documents(join('kubernetes', 'mesh-istio', file));
const all = ['configmap.yaml', 'deployment.yaml', 'service-entry.yaml', 'authorization-policy.yaml'].flatMap(example);
const ofKind = (kind: string) => all.filter((manifest) => manifest.kind === kind);
const configMap = (name: string) => ofKind('ConfigMap').find((map) => map.metadata.name === name)!;

const deployment = ofKind('Deployment')[0]!;
const verdict = (deployment.spec.template.spec.initContainers as Manifest[]).find((container) => container.name === 'verdict')!;
const env = Object.fromEntries((verdict.env as Manifest[]).map((variable) => [variable.name, variable.value ?? 'from-a-secret']));
const config = loadConfig(verdict.args.slice(1), env);
const mapping = parseYaml(configMap('verdict-mesh').data['mapping.yaml']);
const headersRead = [...Object.keys(mapping.principal?.headers ?? {}), ...Object.keys(mapping.context?.headers ?? {}), ...(mapping.client_address === undefined ? [] : ['x-forwarded-for'])];
const principalHeader: string = mapping.upstream_headers.principal_uri;

t.test('Istio: the AuthorizationPolicy calls the extension provider, which calls Verdict on the pod\'s loopback at /ext-authz with the headers the mapping reads', async (t) => {
  const provider = documents('istio/mesh-config.yaml')[0]!.spec.meshConfig.extensionProviders[0];
  const policy = ofKind('AuthorizationPolicy')[0]!;
  const entry = ofKind('ServiceEntry')[0]!;
  t.equal(policy.spec.action, 'CUSTOM');
  t.equal(policy.spec.provider.name, provider.name, 'the policy names the provider');
  t.same(policy.spec.selector.matchLabels, deployment.spec.selector.matchLabels, "the policy selects the app's pods");
  t.same([provider.envoyExtAuthzHttp.service, provider.envoyExtAuthzHttp.port], [entry.spec.hosts[0], entry.spec.ports[0].number], 'the provider calls the ServiceEntry');
  t.same([entry.spec.endpoints[0].address, entry.spec.ports[0].number], [config.host, config.port], "the ServiceEntry is Verdict's address in the pod");
  t.equal(provider.envoyExtAuthzHttp.pathPrefix, EXT_AUTHZ_PREFIX);
  t.equal(provider.envoyExtAuthzHttp.failOpen, false, 'Verdict unreachable: denied');
  for (const header of ['authorization', ...headersRead]) t.ok(provider.envoyExtAuthzHttp.includeRequestHeadersInCheck.includes(header), `the check includes ${header}`);
  t.ok(provider.envoyExtAuthzHttp.headersToUpstreamOnAllow.includes(principalHeader), 'the principal header reaches the app');
  const mounts = Object.fromEntries((verdict.volumeMounts as Manifest[]).map((mount) => [mount.name, mount.mountPath]));
  t.equal(join(mounts['verdict-mesh'], 'tokens.yaml'), config.tokens, 'TOKENS is the mounted ConfigMap key');
  t.equal(join(mounts['verdict-mesh'], 'mapping.yaml'), config.extAuthz, 'EXT_AUTHZ is the mounted ConfigMap key');
});

/** The filter of deploy/envoy/envoy.yaml, for the harness. */
function envoyFilter(serverUri: string): EnvoyFilter {
  const listener = documents('envoy/envoy.yaml')[0]!.static_resources.listeners[0];
  const manager = listener.filter_chains[0].filters[0].typed_config;
  const extAuthz = manager.http_filters.find((filter: Manifest) => filter.name === 'envoy.filters.http.ext_authz').typed_config;
  const exact = (patterns: Manifest[]) => patterns.map((pattern) => pattern.exact);
  return {
    serverUri,
    pathPrefix: extAuthz.http_service.path_prefix,
    allowedHeaders: exact(extAuthz.allowed_headers.patterns),
    allowedUpstreamHeaders: exact(extAuthz.http_service.authorization_response.allowed_upstream_headers.patterns),
    allowedClientHeaders: exact(extAuthz.http_service.authorization_response.allowed_client_headers.patterns),
    useRemoteAddress: manager.use_remote_address === true,
  };
}

t.test('plain Envoy: the ext_authz filter calls Verdict at /ext-authz, fails closed, and forwards what the mapping reads', async (t) => {
  const config_ = documents('envoy/envoy.yaml')[0]!.static_resources;
  const extAuthz = config_.listeners[0].filter_chains[0].filters[0].typed_config.http_filters[0].typed_config;
  t.equal(extAuthz.failure_mode_allow, false);
  const cluster = config_.clusters.find((candidate: Manifest) => candidate.name === extAuthz.http_service.server_uri.cluster);
  t.equal(cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value, config.port, "the cluster is Verdict's port");
  const filter = envoyFilter('unused');
  t.equal(filter.pathPrefix, EXT_AUTHZ_PREFIX);
  for (const header of headersRead) t.ok(filter.allowedHeaders!.includes(header), `${header} is forwarded`);
  t.ok(filter.allowedUpstreamHeaders!.includes(principalHeader));
  t.equal(config_.listeners[0].filter_chains[0].filters[0].typed_config.normalize_path, true, 'paths normalized before they are authorized');
  t.equal(filter.useRemoteAddress, true, 'Envoy appends the address it saw to x-forwarded-for, which the mapping reads as the client address');
  t.equal(config_.listeners[0].filter_chains[0].filters[0].typed_config.xff_num_trusted_hops, mapping.client_address.trusted_hops, 'Envoy and the mapping trust as many proxies before Envoy');
});

t.test("plain Envoy: its mapping and key-set files are real files, the mesh example's own, and Verdict reads them", async (t) => {
  const withoutHeader = (file: string) => readFileSync(join(DEPLOY, 'envoy', file), 'utf8').split('\n').slice(2).join('\n');
  for (const file of ['tokens.yaml', 'mapping.yaml']) t.equal(withoutHeader(file), configMap('verdict-mesh').data[file], `deploy/envoy/${file} is the ConfigMap's ${file}`);
  const settings = readTokenSettings(join(DEPLOY, 'envoy', 'tokens.yaml'));
  t.same(settings.keySets.map((set) => set.name), ['corporate-idp'], 'the key set read');
  t.doesNotThrow(() => ExtAuthzMapping.read(join(DEPLOY, 'envoy', 'mapping.yaml'), ['corporate-idp']), 'the mapping read');
});

t.test('the gRPC flavour: the Istio provider and the plain Envoy call Verdict\'s --ext-authz-grpc port over HTTP/2, fail closed, and send no body', async (t) => {
  const provider = documents('istio/mesh-config.yaml')[0]!.spec.meshConfig.extensionProviders.find((candidate: Manifest) => candidate.envoyExtAuthzGrpc !== undefined);
  const entry = ofKind('ServiceEntry')[0]!;
  t.equal(provider.envoyExtAuthzGrpc.service, entry.spec.hosts[0], 'the provider calls the ServiceEntry');
  t.ok(entry.spec.ports.some((port: Manifest) => port.number === provider.envoyExtAuthzGrpc.port && port.protocol === 'GRPC'), 'which has the gRPC port');
  t.equal(String(provider.envoyExtAuthzGrpc.port), config.extAuthzGrpc, "the port Verdict's EXT_AUTHZ_GRPC opens");
  t.equal(provider.envoyExtAuthzGrpc.failOpen, false);
  const plain = documents('envoy/envoy-grpc.yaml')[0]!.static_resources;
  const extAuthz = plain.listeners[0].filter_chains[0].filters[0].typed_config.http_filters[0].typed_config;
  t.equal(extAuthz.failure_mode_allow, false);
  t.equal(extAuthz.with_request_body, undefined, 'no body sent');
  const cluster = plain.clusters.find((candidate: Manifest) => candidate.name === extAuthz.grpc_service.envoy_grpc.cluster_name);
  t.ok(cluster.typed_extension_protocol_options['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'].explicit_http_config.http2_protocol_options !== undefined, 'HTTP/2 to Verdict');
  t.equal(String(cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value), config.extAuthzGrpc, 'the same port');
});

t.test("the example as applied, on two replicas and after a restart: the owner named by the path decides alike everywhere, with no registry write and no admin key", async (t) => {
  const key = await signingKey('idp-1', 'RS256');
  const issuer = await TokenIssuer.start([key]);
  t.teardown(() => issuer.close());
  const dir = scratchDir(t);
  const tokens = parseYaml(configMap('verdict-mesh').data['tokens.yaml']);
  const [keySet] = tokens.key_sets;
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ ...tokens, key_sets: [{ ...keySet, jwks_url: issuer.jwksUrl }] }));
  writeFileSync(join(dir, 'mapping.yaml'), configMap('verdict-mesh').data['mapping.yaml']);
  // The policies as the pod mounts them: the ConfigMap's keys as files of one directory.
  const policies = join(dir, 'policies');
  mkdirSync(policies);
  for (const [name, text] of Object.entries(configMap('verdict-policies').data) as [string, string][]) writeFileSync(join(policies, name), text);
  // Each replica with its own empty data directory, as the pod's emptyDir.
  const replica = async () => {
    const server = await startServer({ tokens: join(dir, 'tokens.json'), extAuthz: join(dir, 'mapping.yaml'), policiesDir: policies, evaluation: config.evaluation });
    await ready(server);
    return server;
  };

  const decidesAsDocumented = async (server: Awaited<ReturnType<typeof startServer>>, which: string) => {
    const filter = envoyFilter(server.url);
    const as = async (sub: string, method: string, path: string, extra = {}) =>
      throughEnvoy(filter, { method, host: 'documents.example.com', path, headers: { authorization: `Bearer ${await tokenFor(key, sub, { issuer: keySet.issuer, audience: keySet.audience, extra })}` }, peerAddress: '198.51.100.7' });
    t.same(await as('alice', 'GET', '/users/alice/documents/42'), { passed: true, upstreamHeaders: { [principalHeader]: 'user:alice' } }, `${which}: the owner reads`);
    t.match(await as('alice', 'PUT', '/users/alice/documents/42'), { passed: true }, `${which}: and updates`);
    t.match(await as('bob', 'GET', '/users/alice/documents/42'), { passed: false, status: 403 }, `${which}: another user does not`);
    t.match(await as('bob', 'PUT', '/users/alice/documents/42', { groups: ['editors'] }), { passed: true }, `${which}: an editor updates any`);
    t.match(await as('alice', 'POST', '/users/alice/documents'), { passed: true }, `${which}: the owner creates in her own documents`);
    t.match(await as('bob', 'POST', '/users/alice/documents'), { passed: false, status: 403 }, `${which}: not in another's`);
    t.match(await as('alice', 'GET', '/documents/42'), { passed: false, status: 403 }, `${which}: an unmapped path is denied`);
    t.match(
      await throughEnvoy(filter, { method: 'GET', host: 'h', path: '/users/alice/documents/42', headers: { authorization: 'Bearer not-a-token' }, peerAddress: '198.51.100.7' }),
      { passed: false, status: 401, headers: { 'www-authenticate': /invalid_token/ } },
      `${which}: a token that does not verify is refused`,
    );
  };

  const [first, second] = [await replica(), await replica()];
  await decidesAsDocumented(first, 'replica 1');
  await decidesAsDocumented(second, 'replica 2');
  for (const server of [first, second]) t.same((await server.call('GET', '/admin/fetchers/registry/entities')).body, [], 'with nothing registered anywhere');
  await first.close();
  const restarted = await replica();
  t.teardown(restarted.close);
  t.teardown(second.close);
  await decidesAsDocumented(restarted, 'replica 1 restarted');
});
