import { BlockList, isIP } from 'node:net';

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** Whether `address` is an IP address on loopback: 127.0.0.0/8 (IPv4-mapped too) or ::1. */
export function isLoopbackAddress(address: string): boolean {
  const family = isIP(address);
  return family !== 0 && LOOPBACK.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** Whether a host (a name, an address, an IPv6 address in brackets) always means this machine: `localhost` or a loopback address. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.toLowerCase().replace(/\.$/, '').replace(/^\[(.*)\]$/, '$1');
  return bare === 'localhost' || isLoopbackAddress(bare);
}
