import closeWithGrace from 'close-with-grace';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/config.js';
import type { Listeners } from './listeners.js';

/**
 * On SIGTERM or SIGINT (or an uncaught error): readiness flips to 503 and every response says
 * `Connection: close` at once; the listeners keep serving for `shutdownDelayMs` (so load balancers
 * and a sidecar's app stop sending first), then stop accepting and answer every request already
 * sent (see Listeners.close); then the workers, store and decision log close.
 * Whatever is still running after `shutdownGraceMs` is cut off and the process exits with 1.
 */
export function closeOnSignals(config: Config, listeners: Listeners, app: () => FastifyInstance | undefined): void {
  const log = () => app()?.log;
  closeWithGrace(
    {
      delay: config.shutdownGraceMs,
      logger: {
        error: (message: string) => {
          const logger = log();
          if (logger === undefined) console.error(`verdict: ${message}`);
          else logger.error(message);
        },
      },
    },
    async ({ signal, err }) => {
      if (err !== undefined) log()?.error({ err }, 'closing after an unexpected error');
      else log()?.info({ signal }, 'shutting down');
      app()?.readiness.beginShutdown();
      listeners.drain();
      if (config.shutdownDelayMs > 0) await sleep(config.shutdownDelayMs);
      await listeners.close();
      await app()?.close();
    },
  );
}
