import type { VerdictClient } from './client.js';
import { describeDetail, VerdictCredentialError, VerdictError } from './errors.js';
import type { CheckRequest } from './wire.js';

/** The check that guards a request, from what the app knows of it: the principal from the request, the resource and action from the route. */
export type CheckMapping<Request> = (request: Request) => CheckRequest | Promise<CheckRequest>;

export interface GuardOptions {
  /**
   * Send the denial's reason in this response header (`true`: `verdict-reason`), percent-encoded (a header holds
   * only ASCII; `decodeURIComponent` reads it); off by default, since a reason may say more than the caller should learn.
   */
  reasonHeader?: boolean | string;
}

/** What a guard answers: let it through, or stop it with a status, a body and headers. */
interface Refusal {
  status: number;
  body: { detail: string };
  headers: Record<string, string>;
}

/**
 * Decides `request`: undefined lets it through; a denial is 403, a principal's token Verdict refuses
 * 401 (with the Bearer challenge), and no decision (Verdict unreachable, a check it refuses) 503:
 * never an allow by accident.
 */
async function refusalOf<Request>(client: VerdictClient, mapping: CheckMapping<Request>, options: GuardOptions, request: Request): Promise<Refusal | undefined> {
  try {
    const decision = await client.check(await mapping(request), { route: routeOf(request) });
    if (decision.allowed) return undefined;
    const header = options.reasonHeader === true ? 'verdict-reason' : options.reasonHeader || undefined;
    return { status: 403, body: { detail: 'Forbidden' }, headers: header === undefined ? {} : { [header]: encodeURIComponent(decision.reason) } };
  } catch (error) {
    if (error instanceof VerdictCredentialError) return { status: 401, body: { detail: 'Unauthorized' }, headers: { 'www-authenticate': 'Bearer error="invalid_token"' } };
    const why = error instanceof VerdictError ? describeDetail(error.detail ?? error.message) : (error as Error).message;
    return { status: 503, body: { detail: `Authorization could not be decided: ${why}` }, headers: {} };
  }
}

/** The route a request matched, as Fastify (`routeOptions.url`) or Express (`baseUrl` and `route.path`) names it. */
function routeOf(request: unknown): string | undefined {
  const { routeOptions, route, baseUrl } = request as { routeOptions?: { url?: unknown }; route?: { path?: unknown }; baseUrl?: unknown };
  if (typeof routeOptions?.url === 'string') return routeOptions.url;
  if (typeof route?.path === 'string') return `${typeof baseUrl === 'string' ? baseUrl : ''}${route.path}`;
  return undefined;
}

/** The part of a Fastify reply a guard uses. */
interface FastifyReplyLike {
  code(status: number): FastifyReplyLike;
  headers(values: Record<string, string>): FastifyReplyLike;
  send(body: unknown): unknown;
}

/**
 * A Fastify `preHandler` that lets a request through only when Verdict allows the check `mapping`
 * makes of it: `app.get('/documents/:id', { preHandler: fastifyGuard(client, (request) => ...) }, handler)`.
 */
export function fastifyGuard<Request>(client: VerdictClient, mapping: CheckMapping<Request>, options: GuardOptions = {}) {
  return async (request: Request, reply: FastifyReplyLike): Promise<void> => {
    const refusal = await refusalOf(client, mapping, options, request);
    if (refusal !== undefined) await reply.code(refusal.status).headers(refusal.headers).send(refusal.body);
  };
}

/** The part of an Express response a guard uses. */
interface ExpressResponseLike {
  status(status: number): ExpressResponseLike;
  set(values: Record<string, string>): ExpressResponseLike;
  json(body: unknown): unknown;
}

/**
 * An Express middleware that calls `next()` only when Verdict allows the check `mapping` makes of
 * the request: `app.get('/documents/:id', expressGuard(client, (request) => ...), handler)`.
 */
export function expressGuard<Request>(client: VerdictClient, mapping: CheckMapping<Request>, options: GuardOptions = {}) {
  return (request: Request, response: ExpressResponseLike, next: (error?: unknown) => void): void => {
    refusalOf(client, mapping, options, request).then((refusal) => {
      if (refusal === undefined) return next();
      response.status(refusal.status).set(refusal.headers).json(refusal.body);
    }, next);
  };
}
