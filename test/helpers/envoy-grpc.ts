import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/**
 * A gRPC client playing Envoy's ext_authz filter (`grpc_service`): it sends the CheckRequest Envoy
 * documents for an HTTP request (envoy.service.auth.v3, from the protos Envoy publishes, as carried by
 * @grpc/grpc-js-xds) and reads the CheckResponse; and grpc.health.v1's Check.
 */
export interface EnvoyGrpcRequest {
  method: string;
  /** The path with its query, as the client sent it. */
  path: string;
  headers?: Record<string, string>;
  /** The downstream peer's address, as Envoy reports it in `attributes.source`. */
  sourceAddress?: string;
}

export interface EnvoyGrpcAnswer {
  code: number;
  /** The HTTP status Envoy gives the client: 200 when allowed, else the denied response's (403 when it names none). */
  httpStatus: number;
  body: string;
  headers: Record<string, string>;
}

const HTTP_STATUS: Record<string, number> = { Unauthorized: 401, Forbidden: 403 };

const require = createRequire(import.meta.url);
const xds = dirname(require.resolve('@grpc/grpc-js-xds/package.json'));
const health = dirname(require.resolve('grpc-health-check/package.json'));
const definitions = protoLoader.loadSync(['envoy/service/auth/v3/external_auth.proto', join(health, 'proto/health/v1/health.proto')], {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  oneofs: true,
  includeDirs: ['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((dep) => join(xds, 'deps', dep)),
});
const loaded = grpc.loadPackageDefinition(definitions) as unknown as {
  envoy: { service: { auth: { v3: { Authorization: grpc.ServiceClientConstructor } } } };
  grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
};

type Unary = (request: unknown, callback: (error: grpc.ServiceError | null, response: Record<string, any>) => void) => void;

export class EnvoyGrpc {
  private readonly authorization: grpc.Client & { Check: Unary };
  private readonly health: grpc.Client & { Check: Unary };

  constructor(address: string) {
    this.authorization = new loaded.envoy.service.auth.v3.Authorization(address, grpc.credentials.createInsecure()) as never;
    this.health = new loaded.grpc.health.v1.Health(address, grpc.credentials.createInsecure()) as never;
  }

  /** Sends a raw CheckRequest (as proto-loader takes it); resolves with the CheckResponse. */
  checkRaw(message: unknown): Promise<Record<string, any>> {
    return new Promise((resolve, reject) => this.authorization.Check(message, (error, response) => (error === null ? resolve(response) : reject(error))));
  }

  /** What Envoy does with `request`: the CheckRequest it sends, and the answer read as Envoy reads it. */
  async check(request: EnvoyGrpcRequest): Promise<EnvoyGrpcAnswer> {
    const headers = Object.fromEntries(Object.entries(request.headers ?? {}).map(([key, value]) => [key.toLowerCase(), value]));
    const response = await this.checkRaw({
      attributes: {
        ...(request.sourceAddress !== undefined && { source: { address: { socket_address: { address: request.sourceAddress, port_value: 50_000 } } } }),
        request: { http: { id: '1', method: request.method, path: request.path, host: 'app.example', scheme: 'https', protocol: 'HTTP/1.1', headers } },
      },
    });
    const code = response.status?.code ?? 0;
    const flat = (options: { header: { key: string; value: string } }[] | undefined) => Object.fromEntries((options ?? []).map(({ header }) => [header.key, header.value]));
    if (code === 0) return { code, httpStatus: 200, body: '', headers: flat(response.ok_response?.headers) };
    const denied = response.denied_response ?? {};
    return { code, httpStatus: HTTP_STATUS[denied.status?.code] ?? 403, body: denied.body ?? '', headers: flat(denied.headers) };
  }

  /** The raw call, with a serializer that sends `bytes` as they are (a message Envoy never sends). */
  sendBytes(bytes: Buffer): Promise<unknown> {
    return new Promise((resolve, reject) =>
      this.authorization.makeUnaryRequest('/envoy.service.auth.v3.Authorization/Check', (value: Buffer) => value, (value: Buffer) => value, bytes, (error, value) => (error ? reject(error) : resolve(value))),
    );
  }

  healthStatus(service = ''): Promise<string> {
    return new Promise((resolve, reject) => this.health.Check({ service }, (error, response) => (error === null ? resolve(response.status as string) : reject(error))));
  }

  close(): void {
    this.authorization.close();
    this.health.close();
  }
}
