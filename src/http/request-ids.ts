import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { RequestOrigin } from '../decision-log/line.js';
import { REQUEST_ID_HEADER } from '../schemas/wire.js';
import { traceOf } from './tracing.js';

/**
 * Request ids in the shape of a random UUID, unique across processes and restarts: a random UUID's
 * first 80 bits (its version and variant included) drawn once per process, then a count of the
 * process's requests in place of its last 48. Drawing a fresh random UUID for every request costs
 * about a microsecond of each, and nothing needs an id to be unpredictable.
 */
export function requestIds(): () => string {
  const prefix = randomUUID().slice(0, 24);
  let count = 0;
  return () => prefix + (count++).toString(16).padStart(12, '0');
}

/** A caller's own request id: printable ASCII, short enough to repeat in every log line of its decisions. */
const CALLER_REQUEST_ID = /^[\x21-\x7e]{1,200}$/;

/** The id a caller knows its request by: the `X-Request-ID` it sent (`sent`), when usable, else `own`. Every door reads it so. */
export const callerRequestIdOf = (sent: string | string[] | undefined, own: string): string => (typeof sent === 'string' && CALLER_REQUEST_ID.test(sent) ? sent : own);

/** The id the caller knows the request by: the `X-Request-ID` it sent, when it sent a usable one, else the request's own. */
export function callerRequestId(request: FastifyRequest): string {
  return callerRequestIdOf(request.headers[REQUEST_ID_HEADER], request.id);
}

/** Names in the reply the id the caller knows the request by (see callerRequestId). */
export function echoRequestId(request: FastifyRequest, reply: FastifyReply): void {
  reply.header(REQUEST_ID_HEADER, callerRequestId(request));
}

/** The request as the decision log names the decisions it asked for: the caller's id, and its own unique one. */
export const originOf = (request: FastifyRequest): RequestOrigin => {
  const trace = traceOf(request);
  return trace === undefined ? { requestId: callerRequestId(request), id: request.id } : { requestId: callerRequestId(request), id: request.id, trace };
};

/**
 * `then`, after the request id is echoed: one hook in place of two, since every hook a route runs
 * costs each of its requests (a second one cost an evaluation about a microsecond of CPU).
 */
export const echoingRequestId =
  (then: onRequestHookHandler): onRequestHookHandler =>
  function (request, reply, done) {
    echoRequestId(request, reply);
    return then.call(this, request, reply, done);
  };
