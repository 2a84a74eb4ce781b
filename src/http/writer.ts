import type { FastifyRequest } from 'fastify';
import type { Writer } from '../audit/record.js';
import type { AdminKey } from '../admin-keys.js';

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
