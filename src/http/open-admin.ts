import { isIP } from 'node:net';
import type { FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Config } from '../config/config.js';
import { ClientError } from '../errors.js';
import { isLoopbackHost } from '../loopback.js';

/** A Host header: a name or IPv4 address, or an IPv6 address in brackets, and an optional port. Nothing else (no user, no path). */
const HOST_HEADER = /^(?:\[[0-9a-f:.]+\]|[^\s/@:[\]\\?#]+)(?::\d{1,5})?$/i;

/** The host a Host header names, lower case, without its port or a final dot; undefined when it is not a host. */
function hostOf(header: string | undefined): string | undefined {
  if (header === undefined || !HOST_HEADER.test(header)) return undefined;
  try {
    return new URL(`http://${header}`).hostname.replace(/\.$/, '');
  } catch {
    return undefined;
  }
}

/** Whether a browser's Origin is the server this request addresses: same host and port (the scheme may differ behind a TLS proxy). */
function isOwnOrigin(origin: string, host: string): boolean {
  try {
    const page = new URL(origin);
    // The Host is read with the page's scheme, so that a default port is left out of both alike.
    return (page.protocol === 'http:' || page.protocol === 'https:') && page.host === new URL(`${page.protocol}//${host}`).host;
  } catch {
    return false;
  }
}

const isJson = (contentType: string | undefined) => contentType?.split(';', 1)[0]!.trim().toLowerCase() === 'application/json';

const route = (request: FastifyRequest) => `${request.method} ${request.routeOptions.url ?? request.url}`;

/**
 * The guard of the admin routes and the earlier family's writes while admin authentication is off
 * (the key check takes its place when it is on). Whoever reaches them may use them, so no web page in
 * an operator's browser may be that someone:
 * - the Host must name this server (a loopback name or address, the --host address, or one of
 *   --admin-hosts), reads included: a page whose name an attacker points at 127.0.0.1 (DNS
 *   rebinding) is same-origin with it and could read the answers. 421 otherwise.
 * - a write may not come from a page of another origin (its browser says so in Origin). 403.
 * - a write must be application/json, except a DELETE: forms and `no-cors` fetches, which a page
 *   may send anywhere without asking, cannot send that type, and a DELETE from another origin is
 *   never sent without the CORS approval Verdict never gives (Eunomia's SDKs send theirs with no
 *   body or type). 400, as every other unsupported content type is.
 */
export function openAdminGuard(config: Config): onRequestHookHandler {
  const ownNames = new Set([config.host, ...config.adminHosts].map((host) => hostOf(isIP(host) === 6 ? `[${host}]` : host)).filter((host) => host !== undefined));
  return async (request) => {
    const host = hostOf(request.headers.host);
    if (host === undefined || !(isLoopbackHost(host) || ownNames.has(host))) {
      throw new ClientError(
        421,
        `The Host '${request.headers.host ?? ''}' does not name this server. While admin authentication is off, admin requests must address it as localhost, a loopback address, its --host address, or a name listed in --admin-hosts (ADMIN_HOSTS).`,
      );
    }
    if (request.method === 'GET' || request.method === 'HEAD') return;
    const origin = request.headers.origin;
    if (origin !== undefined && !isOwnOrigin(origin, request.headers.host!)) {
      throw new ClientError(
        403,
        `${route(request)} from a page at Origin '${origin}' is refused: while admin authentication is off, only pages this server serves may write. Turn admin authentication on (set ADMIN_API_KEY) to write from elsewhere with a key.`,
      );
    }
    if (request.method !== 'DELETE' && !isJson(request.headers['content-type'])) {
      throw new ClientError(
        400,
        `${route(request)} needs Content-Type: application/json (even with no body) while admin authentication is off, so that no web page can send it; got '${request.headers['content-type'] ?? 'none'}'.`,
      );
    }
  };
}
