import type { FastifyInstance } from 'fastify';

/**
 * JSON bodies parsed with plain JSON.parse: keys such as `__proto__` stay ordinary own keys (the
 * code never reads attributes through prototypes), and an empty body counts as no body, since some
 * clients send `Content-Type: application/json` on every request, DELETE included.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  // JSON only: any other content type is refused (Fastify would otherwise accept text/plain).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, text, done) => {
    if (text === '') {
      done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(text as string));
    } catch (error) {
      done(error as SyntaxError, undefined);
    }
  });
}
