import { createServer, connect, type Socket } from 'node:net';

export interface TcpProxy {
  /** The loopback port that forwards to the target. */
  port: number;
  /** Drops every forwarded connection and refuses new ones (accepted, then closed at once) until restore(). */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

/** A TCP proxy on 127.0.0.1 to `target`, to take a server away from a client and give it back. */
export async function tcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let cut = false;
  const server = createServer((client) => {
    if (cut) return client.destroy();
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    cut() {
      cut = true;
      for (const socket of open) socket.destroy();
    },
    restore() {
      cut = false;
    },
    close: () =>
      new Promise((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
