import type { Test } from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A span as an OTLP/HTTP (JSON) export carries it, its attributes flattened. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Record<string, unknown>;
}

/** An OTLP/HTTP (JSON) traces receiver: every span it was sent (and the path of each export), its attributes flattened; `answer` false never answers. */
export async function receiver(t: Test, answer = true): Promise<{ url: string; spans: ReceivedSpan[]; raw: string[]; paths: string[] }> {
  const spans: ReceivedSpan[] = [];
  const raw: string[] = [];
  const paths: string[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      raw.push(text);
      paths.push(request.url ?? '');
      const body = JSON.parse(text) as { resourceSpans: { scopeSpans: { spans: (Omit<ReceivedSpan, 'attributes'> & { attributes: { key: string; value: Record<string, unknown> }[] })[] }[] }[] };
      for (const resource of body.resourceSpans) {
        for (const scope of resource.scopeSpans) {
          for (const span of scope.spans) spans.push({ ...span, attributes: Object.fromEntries(span.attributes.map(({ key, value }) => [key, Object.values(value)[0]])) });
        }
      }
      if (answer) response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, raw, paths };
}
