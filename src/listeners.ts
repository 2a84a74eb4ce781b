import { chmodSync, lstatSync, rmSync } from 'node:fs';
import cluster from 'node:cluster';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { Config } from './config.js';

/** Group members (an app container in the same pod) may connect to the socket; others may not. */
const SOCKET_MODE = 0o660;

function listen(server: Server, target: { host: string; port: number } | { path: string }): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(target, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** A socket file left by a process that died is removed; anything else at the path is an error. */
function removeStaleSocket(path: string): void {
  try {
    if (lstatSync(path).isSocket()) rmSync(path);
  } catch {
    // nothing there
  }
}

function describe(server: Server): string {
  const address = server.address();
  if (typeof address === 'string') return `unix:${address}`;
  if (address === null) return 'closed';
  return address.family === 'IPv6' ? `http://[${address.address}]:${address.port}` : `http://${address.address}:${address.port}`;
}

/**
 * The HTTP listeners of one process: TCP at host:port, optionally a Unix socket, optionally a port
 * of its own for /metrics. They open before the app is built and answer with `starting` until
 * `serve` hands them the app, so probes can tell "alive but loading" from "dead".
 */
export class Listeners {
  private readonly api: Server[] = [];
  private metrics: Server | undefined;

  private constructor(
    private handler: RequestListener,
    private metricsHandler: RequestListener,
  ) {}

  static async open(config: Config, starting: RequestListener): Promise<Listeners> {
    const listeners = new Listeners(starting, starting);
    const apiServer = () => {
      const server = createServer((request, response) => listeners.handler(request, response));
      listeners.api.push(server);
      return server;
    };
    await listen(apiServer(), { host: config.host, port: config.port });
    if (config.socket !== '') {
      // Processes of a cluster share the socket the first one created.
      if (cluster.isPrimary) removeStaleSocket(config.socket);
      await listen(apiServer(), { path: config.socket });
      chmodSync(config.socket, SOCKET_MODE);
    }
    if (config.metricsPort !== undefined) {
      listeners.metrics = createServer((request, response) => listeners.metricsHandler(request, response));
      await listen(listeners.metrics, { host: config.host, port: config.metricsPort });
    }
    return listeners;
  }

  /** From now on requests go to the app. */
  serve(handler: RequestListener, metricsHandler: RequestListener): void {
    this.handler = handler;
    this.metricsHandler = metricsHandler;
  }

  /** Where this process listens, for the log and for tests: `http://host:port` or `unix:/path`. */
  get addresses(): { api: string[]; metrics: string | undefined } {
    return { api: this.api.map(describe), metrics: this.metrics && describe(this.metrics) };
  }

  /** Stops accepting connections and resolves once every request in flight has been answered. */
  async close(): Promise<void> {
    const servers = [...this.api, ...(this.metrics === undefined ? [] : [this.metrics])];
    await Promise.all(
      servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            // Keep-alive connections with no request in flight would otherwise hold close() open.
            server.closeIdleConnections();
          }),
      ),
    );
  }
}
