import { createServer } from 'node:net';
import { request } from 'undici';

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function waitForHealth(url: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    try {
      const response = await request(`${url}/health`);
      await response.body.dump();
      if (response.statusCode === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not become healthy`);
}
