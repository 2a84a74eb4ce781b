import { createHash, timingSafeEqual } from 'node:crypto';
import type { onRequestHookHandler } from 'fastify';
import { ClientError } from '../errors.js';
import type { Config } from '../config.js';

export const API_KEY_HEADER = 'way-api-key';
export const API_KEY_SECURITY = [{ adminApiKey: [] }];
const INVALID_KEY = 'Invalid API key. Please provide a valid API key.';

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * The admin key check as an onRequest hook, run before the body is read. Digests of equal length
 * are compared in constant time, so neither the key nor its length leaks through timing.
 */
export function adminAuthHook(config: Config): onRequestHookHandler | undefined {
  if (!config.adminAuthRequired) return undefined;
  const expected = digest(config.adminApiKey);
  return (request, _reply, done) => {
    const sent = request.headers[API_KEY_HEADER];
    if (typeof sent !== 'string' || !timingSafeEqual(digest(sent), expected)) {
      done(new ClientError(401, INVALID_KEY));
      return;
    }
    done();
  };
}
