import type { FastifyInstance } from 'fastify';
import { RequestValidationError } from '../errors.js';
import { requestLimitIssues, type RequestLimits } from '../request-limits.js';

/**
 * JSON bodies parsed with plain JSON.parse: keys such as `__proto__` stay ordinary own keys (the
 * code never reads attributes through prototypes), and an empty body counts as no body, since some
 * clients send `Content-Type: application/json` on every request, DELETE included. A body nested
 * too deep or holding too long a string is refused (422) before any route sees it.
 */
export function installJsonBodyParser(app: FastifyInstance, limits: RequestLimits): void {
  // JSON only: any other content type is refused (Fastify would otherwise accept text/plain).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, text, done) => {
    if (text === '') {
      done(null, undefined);
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(text as string);
    } catch (error) {
      done(error as SyntaxError, undefined);
      return;
    }
    const issues = requestLimitIssues(body, limits, (text as string).length);
    if (issues.length > 0) done(new RequestValidationError(issues), undefined);
    else done(null, body);
  });
}
