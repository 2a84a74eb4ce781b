import { request } from 'undici';

/**
 * What Envoy's ext_authz HTTP filter does with a request, as its documentation describes it (no
 * Envoy binary runs here; this stands in for it in tests, and test/mesh/envoy-harness.test.ts holds
 * it to the documented rules):
 *
 * - with `use_remote_address` (the connection manager's, applied before any filter), the address of
 *   the peer Envoy accepted the connection from is appended to `X-Forwarded-For` (after what the
 *   client sent, which Envoy keeps), and the filter sees that header;
 * - the authorization request has the original method, `path_prefix` followed by the original path
 *   (with its query), and only these headers: `Host` (the original authority), `Authorization` and
 *   `Content-Length` always, those the `allowed_headers` matchers accept, and `headers_to_add`
 *   (which replace the client's of the same name);
 * - it has no body and a `Content-Length` of 0, unless `with_request_body` forwards up to
 *   `max_request_bytes` of the client's body;
 * - a 200 lets the request through, adding the response headers `allowed_upstream_headers` accepts
 *   to it (replacing those of the same name);
 * - any other status stops it: the client gets that status, the body, and the response headers
 *   (those `allowed_client_headers` accepts, when set; all but `Host` otherwise).
 */
export interface EnvoyFilter {
  /** The authorization service's base URL (its `server_uri`). */
  serverUri: string;
  pathPrefix: string;
  /** Lower-case header names, or prefixes ending in `*`. */
  allowedHeaders?: string[];
  headersToAdd?: Record<string, string>;
  withRequestBody?: { maxRequestBytes: number };
  allowedUpstreamHeaders?: string[];
  allowedClientHeaders?: string[];
  /** The connection manager's `use_remote_address`: the peer's address appended to `X-Forwarded-For`. */
  useRemoteAddress?: boolean;
}

export interface ClientRequest {
  method: string;
  /** The authority (`Host`). */
  host: string;
  /** The path with its query, as the client sent it. */
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** The address of the peer that connected to Envoy (the client, or a load balancer before it). */
  peerAddress?: string;
}

export type FilterOutcome =
  | { passed: true; upstreamHeaders: Record<string, string> }
  | { passed: false; status: number; body: string; headers: Record<string, string> };

/** The headers Envoy always sends, whatever `allowed_headers` says. */
const ALWAYS_SENT = ['authorization'];

const matches = (patterns: readonly string[] | undefined, name: string) =>
  (patterns ?? []).some((pattern) => (pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern));

/** The authorization request Envoy makes of `client`'s request: method, path, headers and body. */
export function authorizationRequest(filter: EnvoyFilter, client: ClientRequest): { method: string; path: string; headers: Record<string, string>; body: string } {
  const headers: Record<string, string> = { host: client.host };
  const received = Object.fromEntries(Object.entries(client.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]));
  if (filter.useRemoteAddress) {
    if (client.peerAddress === undefined) throw new Error('use_remote_address needs the peer address');
    const sent = received['x-forwarded-for'];
    received['x-forwarded-for'] = sent === undefined ? client.peerAddress : `${sent}, ${client.peerAddress}`;
  }
  for (const [name, value] of Object.entries(received)) {
    const lower = name.toLowerCase();
    if (ALWAYS_SENT.includes(lower) || matches(filter.allowedHeaders, lower)) headers[lower] = value;
  }
  for (const [name, value] of Object.entries(filter.headersToAdd ?? {})) headers[name.toLowerCase()] = value;
  const body = filter.withRequestBody === undefined ? '' : Buffer.from(client.body ?? '').subarray(0, filter.withRequestBody.maxRequestBytes).toString('utf8');
  headers['content-length'] = String(Buffer.byteLength(body));
  if (body !== '' && client.headers?.['content-type'] !== undefined) headers['content-type'] = client.headers['content-type'];
  return { method: client.method, path: `${filter.pathPrefix}${client.path}`, headers, body };
}

/** Sends `client`'s authorization request over real HTTP, and says what Envoy would do with the answer. */
export async function throughEnvoy(filter: EnvoyFilter, client: ClientRequest): Promise<FilterOutcome> {
  const made = authorizationRequest(filter, client);
  const response = await request(`${filter.serverUri}${made.path}`, {
    method: made.method as 'GET',
    headers: made.headers,
    body: made.method === 'GET' || made.method === 'HEAD' ? undefined : made.body,
  });
  const body = await response.body.text();
  const headers = Object.fromEntries(Object.entries(response.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : String(value)]));
  if (response.statusCode === 200) {
    return { passed: true, upstreamHeaders: Object.fromEntries(Object.entries(headers).filter(([name]) => matches(filter.allowedUpstreamHeaders, name))) };
  }
  const toClient = Object.entries(headers).filter(([name]) => (filter.allowedClientHeaders === undefined ? name !== 'host' : matches(filter.allowedClientHeaders, name)));
  return { passed: false, status: response.statusCode, body, headers: Object.fromEntries(toClient) };
}
