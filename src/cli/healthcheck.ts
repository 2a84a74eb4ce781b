import type { Config } from '../config/config.js';
import { http } from '../node-http.js';

const PROBE_TIMEOUT_MS = 3000;

/** A wildcard listen address is reached on loopback. */
function reachableHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '::1';
  return host.replace(/^\[(.*)\]$/, '$1');
}

/** Where a client on this machine reaches the server `config` describes: its Unix socket when it has one, else host:port. */
export function serverTarget(config: Config): { socketPath: string } | { host: string; port: number } {
  return config.socket !== '' ? { socketPath: config.socket } : { host: reachableHost(config.host), port: config.port };
}

/** The target as people write it, for messages. */
export const describeTarget = (target: ReturnType<typeof serverTarget>): string =>
  'socketPath' in target ? `unix:${target.socketPath}` : `${target.host}:${target.port}`;

/**
 * GETs `path` from the server `config` describes and says whether it answered 200: what
 * `verdict healthcheck` runs in a container without curl.
 */
export function probe(config: Config, path: string): Promise<{ healthy: boolean; message: string }> {
  const target = serverTarget(config);
  const where = `${describeTarget(target)}${path}`;
  return new Promise((resolve) => {
    const outgoing = http.request({ ...target, path, method: 'GET', timeout: PROBE_TIMEOUT_MS }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ healthy: response.statusCode === 200, message: `${where}: ${response.statusCode} ${body}` }));
    });
    outgoing.on('timeout', () => outgoing.destroy(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)));
    outgoing.on('error', (error) => resolve({ healthy: false, message: `${where}: ${error.message}` }));
    outgoing.end();
  });
}
