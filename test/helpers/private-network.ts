import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { CLI, childEnvironment, outputMatches, tracked, waitFor, type Child } from './child.js';

/**
 * A `verdict start` in a network namespace of its own (`unshare --net`), whose loopback interface
 * also carries PEER_ADDRESS: a client there can connect from an address that is not loopback, which
 * nothing on the machine's own network may do in a test. The address is a documentation one
 * (TEST-NET-1) and the namespace has no other interface, so nothing leaves it. The test reaches
 * the server through a relay in the same namespace (peer-relay.ts) on a Unix socket, a file both
 * namespaces see; the server sees every relayed request come from PEER_ADDRESS.
 */

export const PEER_ADDRESS = '192.0.2.1';
const RELAY = fileURLToPath(new URL('./peer-relay.js', import.meta.url));

/** Why a private network cannot be made here (no unshare, nsenter or ip, or no permission), or undefined. */
export function privateNetworkMissing(): string | undefined {
  const probe = spawnSync('unshare', ['--net', 'sh', '-c', `ip link set lo up && ip addr add ${PEER_ADDRESS}/32 dev lo && command -v nsenter`], { encoding: 'utf8' });
  return probe.status === 0 ? undefined : `cannot make a network namespace here (unshare --net, ip, nsenter): ${probe.error?.message ?? probe.stderr.trim()}`;
}

/** `command` in a clean environment plus `env` (stdin a pipe: the relay ends when it closes), tracked like runVerdict's. */
const spawnTracked = (t: Test, command: string, args: string[], env: NodeJS.ProcessEnv): Child =>
  tracked(t, spawn(command, args, { env: childEnvironment(env), stdio: ['pipe', 'pipe', 'pipe'] }));

/**
 * `verdict start --host PEER_ADDRESS` with `args` (which name the store) in a private network,
 * resolved once it answers GET /health through the relay: `address` (`unix:/path`) reaches it
 * from PEER_ADDRESS.
 */
export async function startBeyondLoopback(t: Test, scratch: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ address: string; server: Child }> {
  const port = '8421';
  const server = spawnTracked(
    t,
    'unshare',
    ['--net', 'sh', '-c', `ip link set lo up && ip addr add ${PEER_ADDRESS}/32 dev lo && echo network-ready && exec "$@"`, 'sh', process.execPath, CLI, 'start', '--host', PEER_ADDRESS, '--port', port, ...args],
    env,
  );
  // Only once the namespace exists, with its address, may the relay join it: never the machine's own network.
  await outputMatches(server, /^network-ready$/m);
  const socket = join(scratch, 'relay.sock');
  const relay = spawnTracked(t, 'nsenter', [`--net=/proc/${server.process.pid}/ns/net`, process.execPath, RELAY, socket, PEER_ADDRESS, port], {});
  await outputMatches(relay, /relaying/);
  await waitFor(`unix:${socket}`, '/health', 200, server);
  return { address: `unix:${socket}`, server };
}
