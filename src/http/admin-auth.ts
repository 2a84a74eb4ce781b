import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import type {} from '@fastify/rate-limit';
import { ClientError } from '../errors.js';
import type { Config } from '../config.js';
import type { KeyRing } from '../admin-keys.js';
import { isLoopbackAddress } from '../loopback.js';

export const API_KEY_HEADER = 'way-api-key';
export const API_KEY_SECURITY = [{ adminApiKey: [] }];
const INVALID_KEY = 'Invalid API key. Please provide a valid API key.';
const FAILURE_WINDOW_MILLIS = 60_000;

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

/**
 * The admin key check as an onRequest hook, run before the body is read. The keys are ADMIN_API_KEY
 * (an `admin` key named `default`) and those of `--admin-keys-file` (see KeyRing; every digest is
 * compared in constant time). A `read` key may only read: 403 on anything else. Failures from a
 * client that is not local (see isLocalRequest) count against its address (`request.ip`, which
 * `--trust-proxy` takes from X-Forwarded-For): once it has failed `adminAuthFailuresPerMinute` times
 * in a minute, it gets 429 until the minute is over, whatever key it sends, so guessing stays slow.
 * Local clients get 401 for a wrong key and are never locked out.
 */
export async function adminKeyCheck(app: FastifyInstance, config: Config, keys: KeyRing): Promise<onRequestHookHandler> {
  keys.on('reloaded', (count) => app.log.info({ keys: count }, 'admin keys file reloaded'));
  keys.on('rejected', ({ error }) => app.log.error({ err: error }, 'admin keys file not reloaded; the keys stay as they were'));
  if (keys.size === 0) app.log.warn('no admin key is configured yet: every admin request is refused until the keys file lists one');
  app.addHook('onClose', async () => keys.close());
  // Loaded only when authentication is on.
  const { default: rateLimit } = await import('@fastify/rate-limit');
  await app.register(rateLimit, { global: false });
  const failures = app.createRateLimit({ max: config.adminAuthFailuresPerMinute, timeWindow: FAILURE_WINDOW_MILLIS });
  return async (request, reply) => {
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
      throw new ClientError(401, INVALID_KEY);
    }
    request.adminKey = key;
    if (key.role === 'read' && !readsOnly(request)) {
      throw new ClientError(
        403,
        `The admin key '${key.name}' has the read role: it may read but not change anything, and ${request.method} ${request.routeOptions.url} changes data. Use a key with the admin role.`,
      );
    }
  };
}
