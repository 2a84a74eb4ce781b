import { isUtf8 } from 'node:buffer';
import type { FastifyInstance } from 'fastify';
import { ClientError, RequestValidationError } from '../errors.js';
import { requestLimitIssues, type RequestLimits } from '../requests/request-limits.js';

/**
 * Makes `read` the only body parser of `scope`, for application/json (Fastify would otherwise
 * accept text/plain), handing it the body as text. Bytes that are not valid UTF-8 are refused with
 * 400 rather than replaced: two different URIs would otherwise become one.
 */
export function acceptJson(scope: FastifyInstance, read: (text: string) => unknown): void {
  acceptJsonBytes(scope, (bytes) => read(bytes.toString('utf8')));
}

/** As acceptJson, handing `read` the body's bytes, known to be valid UTF-8, undecoded. */
export function acceptJsonBytes(scope: FastifyInstance, read: (bytes: Buffer) => unknown): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    try {
      if (!isUtf8(body as Buffer)) throw new ClientError(400, 'Request body is not valid UTF-8');
      done(null, read(body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}

/**
 * JSON bodies parsed with plain JSON.parse: keys such as `__proto__` stay ordinary own keys (the
 * code never reads attributes through prototypes), and an empty body counts as no body, since some
 * clients send `Content-Type: application/json` on every request, DELETE included. A body nested
 * too deep or holding too long a string is refused (422) before any route sees it.
 */
export function installJsonBodyParser(app: FastifyInstance, limits: RequestLimits): void {
  acceptJson(app, (text) => {
    if (text === '') return undefined;
    const body: unknown = JSON.parse(text);
    const issues = requestLimitIssues(body, limits, text.length);
    if (issues.length > 0) throw new RequestValidationError(issues);
    return body;
  });
}
