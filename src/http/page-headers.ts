import type { FastifyInstance } from 'fastify';

/**
 * What the pages a browser renders from this server (the dashboard, the API documentation) may
 * do: load scripts, styles, fonts and data only from here (images also from `data:` URLs, which both
 * use for icons), run no script inline, submit no form elsewhere, and be framed by no page at all,
 * so that no other site can overlay them and steer a click to a write. `inlineStyles`: the hashes of
 * the inline <style> elements a page may also apply.
 */
function contentSecurityPolicy(inlineStyles: string[]): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    ["style-src 'self'", ...inlineStyles.map((hash) => `'${hash}'`)].join(' '),
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * Gives every answer of `scope`'s routes the headers of a browser page: the policy above, no framing
 * also for browsers that ignore it, no type sniffing.
 */
export function servePagesSafely(scope: FastifyInstance, inlineStyles: string[] = []): void {
  const headers = { 'content-security-policy': contentSecurityPolicy(inlineStyles), 'x-frame-options': 'DENY', 'x-content-type-options': 'nosniff' };
  scope.addHook('onRequest', async (_request, reply) => {
    reply.headers(headers);
  });
}
