import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { ServerUnaryCall, sendUnaryData, Server } from '@grpc/grpc-js';
import type { ExtAuthzOutcome, ExtAuthzService } from '../services/ext-authz.js';
import type { Readiness } from '../services/readiness.js';
import type { Connection, ForwardedRequest } from '../ext-authz/mapping.js';
import { INVALID_TOKEN_CHALLENGE } from '../errors.js';
import { deciderOf, type Decision } from '../engine/index.js';
import { REQUEST_ID_HEADER } from '../schemas/wire.js';
import { callerRequestIdOf } from '../http/request-ids.js';
import type { Tracing } from '../tracing/tracing.js';
import type { Metrics } from '../live/metrics.js';
import { RequestTrace } from '../tracing/request-trace.js';

/** The largest CheckRequest read: Envoy's headers, and a body only if `with_request_body` is on (it should be off). */
const MAX_MESSAGE_BYTES = 1024 * 1024 + 64 * 1024;
/** Concurrent calls on one HTTP/2 connection from Envoy. */
const MAX_CONCURRENT_STREAMS = 1000;
/** How long a drain waits for calls in flight before it cuts them. */
const DRAIN_MILLIS = 10_000;
/** gRPC status codes (google.rpc.Code) the answers carry. */
const OK = 0;
const PERMISSION_DENIED = 7;
const UNAUTHENTICATED = 16;
/** The method the metrics name: the one this door serves. */
const CHECK_METHOD = 'envoy.service.auth.v3.Authorization/Check';

/** One end of the connection, as Envoy reports it: its address, and the principal of its certificate (a URI SAN) when it has one. */
interface Peer {
  address?: { socket_address?: { address?: string; port_value?: number } };
  principal?: string;
}

/** The parts of Envoy's CheckRequest (envoy.service.auth.v3) read here, as proto-loader gives them (field names as in the proto). */
interface CheckRequest {
  attributes?: {
    source?: Peer;
    destination?: Peer;
    context_extensions?: Record<string, string>;
    request?: {
      http?: {
        id?: string;
        method?: string;
        path?: string;
        headers?: Record<string, string>;
        header_map?: { headers?: { key?: string; value?: string; raw_value?: Buffer }[] };
      };
    };
  };
}

type HeaderOption = { header: { key: string; value: string }; append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' };
/** google.protobuf.Struct as proto-loader takes it (protobufjs's own definition of it names its fields in camelCase, whatever keepCase says): string fields only here. */
type Metadata = { fields: Record<string, { stringValue: string }> };
type CheckResponse = (
  | { status: { code: number }; ok_response: { headers: HeaderOption[] } }
  | { status: { code: number; message: string }; denied_response: { status: { code: string }; headers: HeaderOption[]; body: string } }
) & { dynamic_metadata?: Metadata };

/** A running gRPC door: where it listens, and how it stops. */
export interface GrpcExtAuthz {
  /** `host:port` or `unix:/path`. */
  address: string;
  /** Stops taking calls, answers those in flight (for up to DRAIN_MILLIS), then closes. */
  close(): Promise<void>;
}

const header = (key: string, value: string): HeaderOption => ({ header: { key, value }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' });

/** The headers of an HTTP request as Envoy gives them: the `headers` map, or the newer `header_map`. */
function headersOf(http: NonNullable<NonNullable<NonNullable<CheckRequest['attributes']>['request']>['http']>): Record<string, string> {
  if (http.headers !== undefined && Object.keys(http.headers).length > 0) return http.headers;
  const headers: Record<string, string> = {};
  for (const { key, value, raw_value } of http.header_map?.headers ?? []) {
    if (key !== undefined) headers[key.toLowerCase()] = value ?? raw_value?.toString('utf8') ?? '';
  }
  return headers;
}

/** The HTTP request a CheckRequest asks about, or undefined when it has none (Envoy's network filter). */
export function forwardedOf(request: CheckRequest): ForwardedRequest | undefined {
  const http = request.attributes?.request?.http;
  if (http === undefined || typeof http.method !== 'string' || typeof http.path !== 'string' || http.method === '' || !http.path.startsWith('/')) return undefined;
  const sourceAddress = request.attributes?.source?.address?.socket_address?.address;
  const contextExtensions = request.attributes?.context_extensions;
  return {
    method: http.method,
    path: http.path,
    headers: headersOf(http),
    ...(sourceAddress !== undefined && sourceAddress !== '' && { sourceAddress }),
    ...(contextExtensions !== undefined && Object.keys(contextExtensions).length > 0 && { contextExtensions }),
  };
}

/** The connection a CheckRequest with no HTTP part asks about (Envoy's network filter). */
export function connectionOf(request: CheckRequest): Connection {
  const { source, destination } = request.attributes ?? {};
  return {
    source_principal: source?.principal,
    source_address: source?.address?.socket_address?.address,
    destination_principal: destination?.principal,
    destination_address: destination?.address?.socket_address?.address,
    destination_port: destination?.address?.socket_address?.port_value,
  };
}

/**
 * What decided, for Envoy's access log (`%DYNAMIC_METADATA(envoy.filters.http.ext_authz:verdict_rule)%`):
 * the deciding policy and rule, or the default's effect; names only, never a value.
 */
function metadataOf(decision: Decision | undefined): { dynamic_metadata?: Metadata } {
  const decider = decision === undefined ? undefined : deciderOf(decision);
  if (decider === undefined) return {};
  const fields: Metadata['fields'] = { verdict_decided_by: { stringValue: decider.kind } };
  if (decider.kind === 'rule') Object.assign(fields, { verdict_policy: { stringValue: decider.policy }, verdict_rule: { stringValue: decider.rule } });
  if (decider.kind === 'default') fields.verdict_default_effect = { stringValue: decider.effect };
  return { dynamic_metadata: { fields } };
}

/** The CheckResponse of an outcome, as Envoy reads it; the same statuses and bodies as the HTTP flavour. */
export function checkResponseOf(outcome: ExtAuthzOutcome, extAuthz: ExtAuthzService): CheckResponse {
  const { mapping } = extAuthz;
  if (outcome.allowed) {
    // Always set, empty for no principal: Envoy then replaces whatever a client sent under that name.
    const headers = mapping.upstreamPrincipalHeader === undefined ? [] : [header(mapping.upstreamPrincipalHeader, outcome.principalUri ?? '')];
    return { status: { code: OK }, ok_response: { headers }, ...metadataOf(outcome.decision) };
  }
  const refusedToken = outcome.status === 401;
  return {
    status: { code: refusedToken ? UNAUTHENTICATED : PERMISSION_DENIED, message: outcome.reason },
    denied_response: {
      status: { code: refusedToken ? 'Unauthorized' : 'Forbidden' },
      headers: [header('content-type', 'text/plain; charset=utf-8'), ...(refusedToken ? [header('www-authenticate', INVALID_TOKEN_CHALLENGE)] : [])],
      body: extAuthz.deniedBody(outcome),
    },
    ...metadataOf(outcome.decision),
  };
}

/** Where the protos of Envoy's API and gRPC's health service are, in the packages that carry them. */
function protoPaths(): { includeDirs: string[]; health: string } {
  const require = createRequire(import.meta.url);
  const xds = dirname(require.resolve('@grpc/grpc-js-xds/package.json'));
  const health = dirname(require.resolve('grpc-health-check/package.json'));
  return {
    includeDirs: ['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((dep) => join(xds, 'deps', dep)),
    health: join(health, 'proto', 'health', 'v1', 'health.proto'),
  };
}

/**
 * Starts Envoy's gRPC external authorization (`--ext-authz-grpc`): `envoy.service.auth.v3.Authorization/Check`
 * decided by ExtAuthzService exactly as the HTTP flavour decides, and `grpc.health.v1.Health/Check`,
 * SERVING only while /ready would say ready. Loaded only then: a start without it loads no gRPC code.
 */
export async function startGrpcExtAuthz(
  where: { target: string; host: string },
  extAuthz: ExtAuthzService,
  readiness: Readiness,
  log: FastifyBaseLogger,
  newId: () => string,
  /** Where each call's duration is observed, by method and status code. */
  durations: Metrics['grpcCallDuration'],
  /** Spans for the calls, as for the HTTP doors, when tracing is on: the CheckRequest's `traceparent` header names the parent. */
  tracing?: Tracing,
): Promise<GrpcExtAuthz> {
  const { target, host } = where;
  const [grpc, protoLoader] = await Promise.all([import('@grpc/grpc-js'), import('@grpc/proto-loader')]);
  const paths = protoPaths();
  const options = { keepCase: true, longs: String, enums: String, defaults: false, oneofs: true, includeDirs: paths.includeDirs };
  const definitions = protoLoader.loadSync(['envoy/service/auth/v3/external_auth.proto', paths.health], options);
  const authorization = definitions['envoy.service.auth.v3.Authorization'] as import('@grpc/grpc-js').ServiceDefinition;
  const health = definitions['grpc.health.v1.Health'] as import('@grpc/grpc-js').ServiceDefinition;

  // Each label set bound once: a binding is a series of its own.
  const bound = new Map<number, ReturnType<typeof durations.bind>>();
  const durationsOf = (code: number) => bound.get(code) ?? bound.set(code, durations.bind({ method: CHECK_METHOD, code: String(code) })).get(code)!;

  const server: Server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_concurrent_streams': MAX_CONCURRENT_STREAMS,
    // grpc-js keeps channelz's counts and traces of every call unless told not to: nothing here reads them.
    'grpc.enable_channelz': 0,
  });
  server.addService(authorization, {
    Check: (call: ServerUnaryCall<CheckRequest, CheckResponse>, callback: sendUnaryData<CheckResponse>) => {
      const startedAt = performance.now();
      const answered = (response: CheckResponse) => {
        durationsOf(response.status.code).observe((performance.now() - startedAt) / 1000);
        callback(null, response);
      };
      const forwarded = forwardedOf(call.request);
      const denied = (reason: string): ExtAuthzOutcome => ({ allowed: false, status: 403, reason });
      const sent = forwarded?.headers[REQUEST_ID_HEADER];
      const id = newId();
      // A call its trace does not sample is followed no further, as an HTTP request is not.
      const started = tracing?.requestSpan('Authorization/Check', (forwarded?.headers ?? {}) as Record<string, string>);
      const span = started?.isRecording() === true ? started : undefined;
      const trace = span === undefined ? undefined : new RequestTrace();
      const origin = { requestId: callerRequestIdOf(sent, id), id, ...(trace && { trace }) };
      // No HTTP part at all: Envoy's network filter, asking about a connection. An HTTP part that cannot be read is denied.
      const decided =
        forwarded !== undefined
          ? extAuthz.authorize(forwarded, origin)
          : call.request.attributes?.request?.http === undefined
            ? extAuthz.authorizeConnection(connectionOf(call.request), origin)
            : Promise.resolve(denied('The CheckRequest has an HTTP request without a method or a path: what cannot be read is denied'));
      decided.then(
        (outcome) => {
          if (!outcome.allowed && outcome.status === 401) log.info({ reason: outcome.reason }, 'ext-authz (gRPC): bearer token refused');
          const response = checkResponseOf(outcome, extAuthz);
          if (span !== undefined) {
            span.setAttributes({ 'rpc.system': 'grpc', 'rpc.service': 'envoy.service.auth.v3.Authorization', 'rpc.method': 'Check', 'rpc.grpc.status_code': response.status.code, ...trace!.attributes() });
            span.end();
          }
          answered(response);
        },
        (error: unknown) => {
          log.error({ err: error }, 'ext-authz (gRPC): a check failed; the request is denied');
          span?.end();
          answered(checkResponseOf(denied('The request could not be decided'), extAuthz));
        },
      );
    },
  });
  server.addService(health, {
    Check: (_call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<{ status: string }>) => {
      readiness.report().then(
        (report) => callback(null, { status: report.ready ? 'SERVING' : 'NOT_SERVING' }),
        () => callback(null, { status: 'NOT_SERVING' }),
      );
    },
    Watch: (call: { emit(event: 'error', error: object): void }) => call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'Watch is not served: ask Check' }),
  });

  const address = target.startsWith('/') ? `unix:${target}` : `${host.includes(':') ? `[${host}]` : host}:${target}`;
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (error, bound) => (error === null ? resolve(bound) : reject(error))),
  );
  return {
    address: target.startsWith('/') ? address : `${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        const cut = setTimeout(() => server.forceShutdown(), DRAIN_MILLIS).unref();
        server.tryShutdown(() => {
          clearTimeout(cut);
          resolve();
        });
      }),
  };
}
