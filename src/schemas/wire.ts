// What the server and its clients must spell alike beyond the bodies' schemas: header names, the
// change feed's line and its heartbeat. The server reads them from here; the Node client's copy is
// generated from here (clients/node/src/wire.ts, see scripts/client-wire.mjs).
import type { FromSchema } from 'json-schema-to-ts';

/** The request header carrying the admin key (Eunomia's name for it). */
export const API_KEY_HEADER = 'way-api-key';
/** The response header carrying the policy snapshot revision that the answering process serves. */
export const REVISION_HEADER = 'verdict-revision';
/** The request header asking to be decided at that policy revision or later (read-your-writes). */
export const MIN_REVISION_HEADER = 'verdict-min-revision';
/** The response header naming the request in the server's logs and audit records. */
export const REQUEST_ID_HEADER = 'x-request-id';
/** How often the change feed sends a line when nothing changed: a reader that hears nothing for three of these takes the feed for lost. */
export const HEARTBEAT_MILLIS = 2000;

/**
 * One line of the decision change feed (`GET /admin/changes`), as JSON: what a client that caches
 * decisions needs to drop exactly those a change may alter.
 */
export const changeLineSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['at'],
  properties: {
    /** When the process knew, in milliseconds since 1970 (every line has it; a line with nothing else is a heartbeat). */
    at: { type: 'number' },
    /** This process now decides by that policy revision (a schema write is one too). */
    revision: { type: 'integer' },
    /** Whether the revision's policies read the decision's time: then no decision may be kept. */
    time_dependent: { type: 'boolean' },
    /**
     * The registered entities of those uris changed, or `"all"` when the process forgot every one it
     * held (its store feed was lost) or more changed at once than a line names.
     */
    entities: { anyOf: [{ type: 'array', items: { type: 'string' } }, { const: 'all' }] },
  },
} as const;

export type ChangeLine = FromSchema<typeof changeLineSchema>;
