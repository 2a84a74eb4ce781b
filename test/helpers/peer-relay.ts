import { connect, createServer } from 'node:net';

/**
 * Runs inside a server's network namespace (see private-network.ts): relays every connection made
 * to the Unix socket `socketPath` to `host`:`port`, connecting from `host`, so that the server sees a
 * client at that address. Exits when its standard input ends, that is when the test that started it does.
 */
const [socketPath, host, port] = process.argv.slice(2) as [string, string, string];
createServer((client) => {
  const upstream = connect({ host, port: Number(port), localAddress: host });
  client.pipe(upstream).pipe(client);
  const end = () => {
    client.destroy();
    upstream.destroy();
  };
  for (const socket of [client, upstream]) socket.on('error', end).on('close', end);
}).listen(socketPath, () => console.log('relaying'));
process.stdin.on('end', () => process.exit(0)).resume();
