import { chmodSync, lstatSync, rmSync } from 'node:fs';
import cluster from 'node:cluster';
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import { Server as NetServer } from 'node:net';
import type { Config } from '../config/config.js';
import { http } from '../node-http.js';

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

/** See Config's testProcessHeader. */
const PROCESS_HEADER = 'verdict-test-process';

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
 * of its own for /metrics and the probes. They open before the app is built and answer with `starting` until
 * `serve` hands them the app, so probes can tell "alive but loading" from "dead".
 */
export class Listeners {
  private readonly api: Server[] = [];
  private metrics: Server | undefined;
  private draining = false;

  private constructor(
    private handler: RequestListener,
    private metricsHandler: RequestListener,
    private readonly namesProcess: boolean,
  ) {}

  static async open(config: Config, starting: RequestListener): Promise<Listeners> {
    const listeners = new Listeners(starting, starting, config.testProcessHeader);
    const apiServer = () => {
      const server = http.createServer((request, response) => listeners.dispatch(listeners.handler, request, response));
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
      listeners.metrics = http.createServer((request, response) => listeners.dispatch(listeners.metricsHandler, request, response));
      await listen(listeners.metrics, { host: config.metricsHost ?? config.host, port: config.metricsPort });
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

  /** Hands a request to `handler`, its response marked `Connection: close` once the listeners drain. */
  private dispatch(handler: RequestListener, request: IncomingMessage, response: ServerResponse): void {
    if (this.draining) response.setHeader('connection', 'close');
    if (this.namesProcess) response.setHeader(PROCESS_HEADER, String(process.pid));
    handler(request, response);
  }

  /**
   * From now on every response says `Connection: close` (and Node closes its connection after it),
   * so a keep-alive client sends its next request on a new connection, which is refused once the
   * listeners close, instead of on a socket that is closed under it.
   */
  drain(): void {
    this.draining = true;
  }

  /**
   * Stops accepting connections and resolves once every connection has ended: a request already
   * sent on an open connection is answered (with `Connection: close`), and an idle keep-alive
   * connection ends at its keep-alive timeout, which clients are told of and stop reusing it
   * before. Closing idle connections at once, as http.Server#close does, would cut the request a
   * client may be sending on one at that very moment.
   */
  async close(): Promise<void> {
    this.drain();
    const servers = [...this.api, ...(this.metrics === undefined ? [] : [this.metrics])];
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve()))));
  }
}
