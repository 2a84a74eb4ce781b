import type { IncomingMessage } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import FindMyWay from 'find-my-way';
import { ClientError, INVALID_TOKEN_CHALLENGE, InvalidToken, listedIssues, RequestValidationError, UnavailableError } from '../errors.js';
import { StoreUnavailableError, StoreWriteUnconfirmedError } from '../store/errors.js';
import { WorkerTimeoutError } from '../pool/bulk-pool.js';
import { validationIssues } from '../schemas/validation.js';
import { issuesInOneLine } from '../schemas/errors.js';
import type { ServedRevision } from './revision.js';
import { REVISION_HEADER } from '../schemas/wire.js';

const CONTENT_TYPE_ERRORS = new Set(['FST_ERR_CTP_INVALID_MEDIA_TYPE', 'FST_ERR_CTP_INVALID_CONTENT_LENGTH']);

/** How much of an oversized body is read and dropped, in body limits, so that its sender sees the 413. */
const DISCARDED_BODY_LIMITS = 8;

/**
 * Reads and drops the rest of an oversized body, if it is at most `maxBytes` long, and resolves
 * once it has all arrived (or at once, when it is longer). The 413 closes the connection; closing
 * it while the client is still sending would show the client a broken pipe instead of the answer.
 */
function discardRestOfBody(raw: IncomingMessage, maxBytes: number): Promise<void> {
  if (raw.complete || Number(raw.headers['content-length']) > maxBytes) return Promise.resolve();
  return new Promise((resolve) => {
    let discarded = 0;
    const onData = (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > maxBytes) finish();
    };
    const finish = () => {
      raw.off('data', onData).off('end', finish).off('error', finish).off('close', finish);
      resolve();
    };
    raw.on('data', onData).once('end', finish).once('error', finish).once('close', finish);
    raw.resume();
  });
}

/** How a request that breaks the contract is answered: 422 listing its issues, or (the AuthZEN family) 400 saying them in one line. */
export type ContractErrors = 'listed' | 'bad-request';

/** What an error is answered with: its status and `{detail}` body. */
async function answerOf(error: FastifyError, request: FastifyRequest, app: FastifyInstance, contract: ContractErrors): Promise<[number, { detail: unknown }]> {
  if (contract === 'bad-request') {
    if (error instanceof RequestValidationError) return [400, { detail: issuesInOneLine(error.issues) }];
    if (error.validation) return [400, { detail: issuesInOneLine(listedIssues(validationIssues(error.validation, error.validationContext))) }];
  }
  if (error instanceof RequestValidationError) return [422, { detail: error.issues }];
  if (error instanceof ClientError) return [error.statusCode, { detail: error.detail }];
  if (error instanceof UnavailableError) {
    request.log.warn({ err: error }, 'service unavailable');
    return [503, { detail: error.detail }];
  }
  if (error instanceof StoreWriteUnconfirmedError) {
    request.log.warn({ err: error }, 'write not confirmed by the store');
    return [503, { detail: error.message }];
  }
  if (error instanceof StoreUnavailableError || error instanceof WorkerTimeoutError) {
    request.log.warn({ err: error }, 'service unavailable');
    return [503, { detail: `${error.message}; retry shortly` }];
  }
  if (error.validation) return [422, { detail: listedIssues(validationIssues(error.validation, error.validationContext)) }];
  if (CONTENT_TYPE_ERRORS.has(error.code)) {
    return [400, { detail: `Unsupported Content-Type '${request.headers['content-type'] ?? ''}': send application/json` }];
  }
  if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return [400, { detail: `Malformed JSON body: ${error.message}` }];
  }
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    await discardRestOfBody(request.raw, DISCARDED_BODY_LIMITS * app.initialConfig.bodyLimit!);
    return [413, { detail: `Request body is larger than the limit of ${app.initialConfig.bodyLimit} bytes` }];
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) return [status, { detail: error.message }];
  request.log.error({ err: error }, 'request failed');
  return [500, { detail: 'Internal server error' }];
}

/**
 * Every error becomes `{detail}`: 422 lists the offending fields, other client errors say what to
 * fix, and anything else is a 500 that is logged and reveals nothing. Each names the revision served
 * (`revision`), on every route: routes that name it without a hook have no other way to (see revision.ts).
 */
export function installErrorHandling(app: FastifyInstance, revision: ServedRevision): void {
  answerErrors(app, revision, 'listed');
  installNotFound(app, revision);
}

/** Errors of the routes of `scope` answered as installErrorHandling says, with requests that break the contract answered as `contract` says. */
export function answerErrors(scope: FastifyInstance, revision: ServedRevision, contract: ContractErrors): void {
  scope.setErrorHandler(async (error: FastifyError, request, reply) => {
    const [status, body] = await answerOf(error, request, scope, contract);
    if (error instanceof InvalidToken) reply.header('www-authenticate', INVALID_TOKEN_CHALLENGE);
    return reply.code(status).header(REVISION_HEADER, revision()).send(body);
  });
}

/**
 * Unknown paths get 404; known paths asked with another method get 405 and an Allow header.
 * A mirror of the route table (find-my-way, Fastify's own router) tells which methods a URL has.
 */
function installNotFound(app: FastifyInstance, revision: ServedRevision): void {
  const routes = FindMyWay({ maxParamLength: app.initialConfig.maxParamLength ?? 100 });
  const methods = new Set<string>();
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      if (routes.hasRoute(method as FindMyWay.HTTPMethod, route.url)) continue;
      routes.on(method as FindMyWay.HTTPMethod, route.url, () => undefined);
      methods.add(method);
    }
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?', 1)[0]!;
    const allowed = [...methods].filter((method) => routes.find(method as FindMyWay.HTTPMethod, path) !== null);
    reply.header(REVISION_HEADER, revision());
    // A route that answers this method and still finds nothing (a missing static file) is a 404.
    if (allowed.length > 0 && !allowed.includes(request.method)) {
      return reply.code(405).header('allow', allowed.join(', ')).send({ detail: 'Method Not Allowed' });
    }
    return reply.code(404).send({ detail: 'Not Found' });
  });
}
