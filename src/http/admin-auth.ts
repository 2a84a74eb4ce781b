import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type {} from '@fastify/rate-limit';
import { ClientError } from '../errors.js';
import type { Config } from '../config/config.js';
import type { AdminKey, KeyRing } from '../admin-keys.js';
import { isLoopbackAddress } from '../loopback.js';

import { API_KEY_HEADER } from '../schemas/wire.js';
export const API_KEY_SECURITY = [{ adminApiKey: [] }];
const INVALID_KEY = 'Invalid API key. Please provide a valid API key.';
const FAILURE_WINDOW_MILLIS = 60_000;
/** The 401 of an explanation asked for without a key, while admin authentication is on. */
export const EXPLAIN_NEEDS_KEY =
  `?explain=true shows registered attributes and policy constants, which admin authentication protects: send an admin key (of any role) in the ${API_KEY_HEADER.toUpperCase()} header, or ask without explain for the decision alone.`;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A route that changes nothing although its method is not GET: `read` keys may call it. */
    readsOnly?: boolean;
  }
}

/** Whether a `read` key may make this request: it reads (GET, HEAD, or a route marked readsOnly). */
const readsOnly = (request: FastifyRequest) =>
  request.method === 'GET' || request.method === 'HEAD' || request.routeOptions.config.readsOnly === true;

/**
 * Whether a client address is the sidecar's own pod: loopback (IPv4-mapped included), or no address
 * at all, which is how a Unix-socket client appears. Such clients share one address with the app
 * and the dashboard, so locking that address out would lock out the right key with the wrong one.
 */
export function isLocalClient(address: string | undefined): boolean {
  return address === undefined || isLoopbackAddress(address);
}

/**
 * Whether a request comes from this machine: its connection (the socket's peer, which no header
 * can name) and the client the request names (`request.ip`, which --trust-proxy takes from
 * X-Forwarded-For) both local. The peer alone would make every client of a proxy on loopback
 * local; the forwarded address alone would let a client name itself 127.0.0.1.
 */
const isLocalRequest = (request: FastifyRequest) => isLocalClient(request.socket.remoteAddress) && isLocalClient(request.ip);

/**
 * Fastify's trustProxy for `--trust-proxy`. Fastify reads `true` as "believe every forwarded address",
 * which would let any client name itself 127.0.0.1; here it means one hop: the connecting peer is the
 * proxy, and the client is the last address that peer added to X-Forwarded-For.
 */
export function trustedProxies(setting: Config['trustProxy']): false | string[] | ((address: string, hop: number) => boolean) {
  return setting === true ? (_address, hop) => hop === 0 : setting;
}

/** Admin authentication, when it is on: the admin routes' hook, and the key check other routes ask for. */
export interface AdminKeyCheck {
  /** The onRequest hook of the admin routes and the earlier family's writes. */
  guard: onRequestHookHandler;
  /** Resolves when the request carries a key of any role; throws the 401 (or 429) otherwise, with `detail` as its detail. */
  requireKey(request: FastifyRequest, reply: FastifyReply, detail: string): Promise<void>;
}

/**
 * The admin key check. The keys are ADMIN_API_KEY (an `admin` key named `default`) and those of
 * `--admin-keys-file` (see KeyRing; every digest is compared in constant time). A `read` key may only
 * read: 403 on anything else. Failures from a client that is not local (see isLocalRequest) count
 * against its address (`request.ip`, which `--trust-proxy` takes from X-Forwarded-For), whichever route
 * asked for the key: once it has failed `adminAuthFailuresPerMinute` times in a minute, it gets 429
 * until the minute is over, whatever key it sends, so guessing stays slow. Local clients get 401 for a
 * wrong key and are never locked out.
 */
export async function adminKeyCheck(app: FastifyInstance, config: Config, keys: KeyRing): Promise<AdminKeyCheck> {
  keys.on('reloaded', (count) => app.log.info({ keys: count }, 'admin keys file reloaded'));
  keys.on('rejected', ({ error }) => app.log.error({ err: error }, 'admin keys file not reloaded; the keys stay as they were'));
  if (keys.size === 0) app.log.warn('no admin key is configured yet: every admin request is refused until the keys file lists one');
  app.addHook('onClose', async () => keys.close());
  // Loaded only when authentication is on.
  const { default: rateLimit } = await import('@fastify/rate-limit');
  await app.register(rateLimit, { global: false });
  const failures = app.createRateLimit({ max: config.adminAuthFailuresPerMinute, timeWindow: FAILURE_WINDOW_MILLIS });
  const authenticate = async (request: FastifyRequest, reply: FastifyReply, detail: string): Promise<AdminKey> => {
    const limited = !isLocalRequest(request);
    if (limited) {
      const recent = await failures(request, { increment: false });
      if (!recent.isAllowed && recent.remaining === 0) {
        reply.header('retry-after', recent.ttlInSeconds);
        throw new ClientError(429, `Too many failed authentication attempts; retry in ${recent.ttlInSeconds} seconds`);
      }
    }
    const sent = request.headers[API_KEY_HEADER];
    const key = typeof sent === 'string' ? keys.find(sent) : undefined;
    if (key === undefined) {
      if (limited) await failures(request);
      throw new ClientError(401, detail);
    }
    return key;
  };
  return {
    guard: async (request, reply) => {
      const key = await authenticate(request, reply, INVALID_KEY);
      request.adminKey = key;
      if (key.role === 'read' && !readsOnly(request)) {
        throw new ClientError(
          403,
          `The admin key '${key.name}' has the read role: it may read but not change anything, and ${request.method} ${request.routeOptions.url} changes data. Use a key with the admin role.`,
        );
      }
    },
    requireKey: async (request, reply, detail) => {
      request.adminKey = await authenticate(request, reply, detail);
    },
  };
}

/**
 * `then()` once the request may see an explanation: at once while admin authentication is off
 * (`guard` undefined), else once `guard` has found its key.
 */
export function onceMayExplain<T>(
  guard: ((request: FastifyRequest, reply: FastifyReply) => Promise<void>) | undefined,
  request: FastifyRequest,
  reply: FastifyReply,
  then: () => T,
): T | Promise<Awaited<T>> {
  return guard === undefined ? then() : (guard(request, reply).then(then) as Promise<Awaited<T>>);
}
