import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import { ClientError } from '../errors.js';
import type { Config } from '../config.js';
import type { AdminKey } from './writer.js';

export const API_KEY_HEADER = 'way-api-key';
export const API_KEY_SECURITY = [{ adminApiKey: [] }];
const INVALID_KEY = 'Invalid API key. Please provide a valid API key.';
const FAILURE_WINDOW_MILLIS = 60_000;
/** ADMIN_API_KEY, as the audit trail names it. */
const DEFAULT_KEY: AdminKey = { name: 'default', role: 'admin' };

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * The admin key check as an onRequest hook, run before the body is read, or undefined when
 * authentication is off. Digests of equal length are compared in constant time, so neither the key
 * nor its length leaks through timing. Only failures count against a client (by address): once it
 * has failed `adminAuthFailuresPerMinute` times in a minute, it gets 429 until the minute is over,
 * whatever key it sends, so guessing stays slow; clients that send the right key are never limited.
 */
export async function adminKeyCheck(app: FastifyInstance, config: Config): Promise<onRequestHookHandler | undefined> {
  if (!config.adminAuthRequired) return undefined;
  await app.register(rateLimit, { global: false });
  const failures = app.createRateLimit({ max: config.adminAuthFailuresPerMinute, timeWindow: FAILURE_WINDOW_MILLIS });
  const expected = digest(config.adminApiKey);
  return async (request, reply) => {
    const recent = await failures(request, { increment: false });
    if (!recent.isAllowed && recent.remaining === 0) {
      reply.header('retry-after', recent.ttlInSeconds);
      throw new ClientError(429, `Too many failed authentication attempts; retry in ${recent.ttlInSeconds} seconds`);
    }
    const sent = request.headers[API_KEY_HEADER];
    if (typeof sent !== 'string' || !timingSafeEqual(digest(sent), expected)) {
      await failures(request);
      throw new ClientError(401, INVALID_KEY);
    }
    request.adminKey = DEFAULT_KEY;
  };
}
