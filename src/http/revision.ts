import type { FastifyInstance, FastifyReply, onSendHookHandler } from 'fastify';

import { REVISION_HEADER } from '../schemas/wire.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The handler names the revision itself, with `withRevision` (see revisionOnEveryAnswer). */
    namesItsRevision?: boolean;
  }
}

/** The config of a route whose handler names the revision itself. */
export const NAMES_ITS_REVISION = { namesItsRevision: true };

/** What Fastify's serializer names: answers written as text keep the header they had. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** The revision this process serves now. */
export type ServedRevision = () => number;

/**
 * Every answer names the revision this process serves as it is sent: after an admin write, the
 * revision that includes it. An onSend hook names it on every route registered after this call,
 * except routes whose config is NAMES_ITS_REVISION (the check routes, which name it with
 * `withRevision`: the hook cost about a microsecond of server CPU per check). The error and
 * not-found handlers name it themselves, for every route (see errors.ts).
 */
export function revisionOnEveryAnswer(app: FastifyInstance, revision: ServedRevision): void {
  const nameRevision: onSendHookHandler = (_request, reply, payload, done) => {
    reply.header(REVISION_HEADER, revision());
    done(null, payload);
  };
  app.addHook('onRoute', (route) => {
    if (route.config?.namesItsRevision === true) return;
    route.onSend = route.onSend === undefined ? [nameRevision] : [nameRevision, ...[route.onSend].flat()];
  });
}

/**
 * How a NAMES_ITS_REVISION route answers what it decided, sync or not: names the revision served once
 * it is decided (after an admin write, the one that includes it), then sends the JSON text
 * `prewritten` has for the answer (the hot path's answers, joined from texts written once per
 * snapshot), or, when it has none, returns the answer for the route's response schema to serialize.
 */
export function answerDecided<T>(
  reply: FastifyReply,
  revision: ServedRevision,
  answer: T | Promise<T>,
  prewritten: (answer: T) => string | undefined = () => undefined,
): T | undefined | Promise<T | undefined> {
  const send = (decided: T): T | undefined => {
    reply.header(REVISION_HEADER, revision());
    const json = prewritten(decided);
    if (json === undefined) return decided;
    reply.type(JSON_CONTENT_TYPE).send(json);
    return undefined;
  };
  return answer instanceof Promise ? answer.then(send) : send(answer);
}
