import type { FastifyPluginAsync } from 'fastify';
import { UnavailableError } from '../errors.js';
import { MAX_URIS_PER_LINE, type ChangeFeed } from '../services/change-feed.js';
import { HEARTBEAT_MILLIS, REQUEST_ID_HEADER } from '../schemas/wire.js';
import { API_KEY_SECURITY } from './admin-auth.js';
import { ERROR_RESPONSES } from './responses.js';
import { REVISION_HEADER } from '../schemas/wire.js';

/** What the feed answers: JSON lines. */
export const CHANGE_FEED_TYPE = 'application/x-ndjson';

/** Feeds open at once, per process: each is a socket and a line per change. */
export const MAX_FEED_SUBSCRIBERS = 64;
/** Feeds one admin key may hold at once: no key can take them all from the others. */
export const MAX_FEEDS_PER_KEY = MAX_FEED_SUBSCRIBERS / 2;
/** What a feed may hold unsent for a reader that does not read: past it, the feed is closed (the reader reconnects, and starts over). */
const MAX_UNSENT_BYTES = 1 << 20;

/**
 * `GET /admin/changes`: the decision change feed, a long-lived stream of JSON lines (see ChangeLine)
 * for clients that cache decisions. The caller registers it behind the admin key check (a `read` key
 * may follow it): entity uris are the registry's.
 */
export const changeRoutes: FastifyPluginAsync<{ feed: ChangeFeed }> = async (app, { feed }) => {
  const open = new Set<() => void>();
  /** The feeds each key holds, by its name (none: admin authentication is off, and nobody but the pod reaches them). */
  const heldBy = new Map<string, number>();
  // A stream never ends by itself: closing the server ends them, or it would wait on them.
  app.addHook('preClose', (done) => {
    for (const end of open) end();
    done();
  });
  app.get('/admin/changes', {
    schema: {
      tags: ['operations'],
      security: API_KEY_SECURITY,
      summary: 'Follow what changes decisions: policy revisions and registered entities, as a stream of JSON lines',
      description:
        'An `application/x-ndjson` stream that stays open. The first line is `{"at": <ms>, "revision": N, "time_dependent": <boolean>}`: the revision ' +
        "this process decides by, and whether its policies read the decision's time (then decisions change as time passes, and none may be kept); " +
        'then a line like it each time that changes (policy and schema writes), `{"at", "entities": [<uri>, ...]}` when registered ' +
        `entities change (\`"entities": "all"\` when the process forgot them all, or more than ${MAX_URIS_PER_LINE} changed at once), and ` +
        `\`{"at"}\` every ${HEARTBEAT_MILLIS} ms when nothing did. A reader that falls 1 MiB behind is cut off. ` +
        `At most ${MAX_FEED_SUBSCRIBERS} feeds per process, and ${MAX_FEEDS_PER_KEY} per admin key: 503 beyond.`,
      response: {
        200: {
          description: 'The stream: one JSON object per line.',
          content: {
            [CHANGE_FEED_TYPE]: {
              schema: {
                type: 'object',
                properties: {
                  at: { type: 'integer' },
                  revision: { type: 'integer' },
                  time_dependent: { type: 'boolean' },
                  entities: { oneOf: [{ type: 'array', items: { type: 'string' } }, { const: 'all' }] },
                },
                required: ['at'],
              },
            },
          },
        },
        ...ERROR_RESPONSES,
      },
    },
    handler: (request, reply) => {
      if (feed.subscriberCount >= MAX_FEED_SUBSCRIBERS) {
        throw new UnavailableError(`This process already serves ${MAX_FEED_SUBSCRIBERS} change feeds; close one, or follow another process`);
      }
      const key = request.adminKey?.name;
      const held = key === undefined ? 0 : (heldBy.get(key) ?? 0);
      if (key !== undefined && held >= MAX_FEEDS_PER_KEY) {
        throw new UnavailableError(`The admin key '${key}' already holds ${MAX_FEEDS_PER_KEY} change feeds of this process, its share; close one, or follow with another key`);
      }
      if (key !== undefined) heldBy.set(key, held + 1);
      reply.hijack();
      const socket = reply.raw;
      // `connection: close`: the connection ends with the stream, so that a closing server waits for neither.
      socket.writeHead(200, { 'content-type': CHANGE_FEED_TYPE, 'cache-control': 'no-store', connection: 'close', [REQUEST_ID_HEADER]: String(request.id), [REVISION_HEADER]: feed.revision });
      // Ended, the stream's connection goes too: a closing server would otherwise wait for the reader to hang up.
      const end = () => {
        if (!open.has(end)) return;
        unsubscribe();
        open.delete(end);
        if (key !== undefined) {
          const left = heldBy.get(key)! - 1;
          if (left === 0) heldBy.delete(key);
          else heldBy.set(key, left);
        }
        socket.end();
        setImmediate(() => request.raw.socket?.destroy());
      };
      const unsubscribe = feed.subscribe((line) => {
        if (socket.writableLength > MAX_UNSENT_BYTES) return end();
        socket.write(line);
      });
      open.add(end);
      socket.on('close', end);
    },
  });
};
