import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Writer } from '../audit/record.js';
import type { AdminKey } from '../admin-keys.js';
import type { WriteWarnings } from '../services/write-warnings.js';

/** The actor of writes made while admin authentication is off. */
export const ANONYMOUS = 'anonymous';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the admin key check; null when authentication is off. */
    adminKey: AdminKey | null;
  }
}

/** Who is writing, for the audit record: the key's name, the client address, the request id and route. */
export function writerOf(request: FastifyRequest): Writer {
  return {
    actor: request.adminKey?.name ?? ANONYMOUS,
    client: request.ip,
    requestId: String(request.id),
    route: `${request.method} ${request.routeOptions.url ?? request.url}`,
  };
}

/** The answer header that carries a write's warnings: a JSON list of `<where>: <what>` texts. */
export const WARNINGS_HEADER = 'verdict-warnings';
/** Warnings a header lists, each cut to MAX_WARNING_LENGTH characters; past them, a last one says how many more. */
const MAX_HEADER_WARNINGS = 10;
const MAX_WARNING_LENGTH = 300;

/**
 * Where a write's schema warnings go (see WriteWarnings): into its answer's `Verdict-Warnings` header,
 * since the answer's body is the policy or entity that clients parse strictly (Eunomia's Python SDK
 * refuses any field it does not know). Non-ASCII is escaped, as a header must be.
 */
export function warningsTo(reply: FastifyReply): WriteWarnings {
  return (issues) => {
    const texts = issues.slice(0, MAX_HEADER_WARNINGS).map(({ loc, msg }) => `${loc.join('.')}: ${msg}`.slice(0, MAX_WARNING_LENGTH));
    if (issues.length > MAX_HEADER_WARNINGS) texts.push(`and ${issues.length - MAX_HEADER_WARNINGS} more`);
    reply.header(WARNINGS_HEADER, JSON.stringify(texts).replace(/[^\x20-\x7e]/g, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`));
  };
}
