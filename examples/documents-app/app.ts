// An app that Verdict guards through the Node client: documents read by anyone their policy lets
// read them, deleted by their owner. The principal is the user the request names (a real app takes
// it from its session or token); the resource and the action come from the route.
//
// In an app of your own, import from '@verdict-authz/client'.
import Fastify, { type FastifyRequest } from 'fastify';
import { fastifyGuard, VerdictClient, type CheckRequest } from '../../clients/node/src/index.js';

type DocumentRequest = FastifyRequest<{ Params: { id: string } }>;

/** The check each route asks: the user as the principal, the document by its registered uri. */
const documentCheck = (action: string) => (request: DocumentRequest): CheckRequest => ({
  principal: { uri: `user:${String(request.headers['x-user'] ?? 'anonymous')}` },
  resource: { uri: `document:${request.params.id}` },
  action,
});

export function documentsApp(verdict: VerdictClient) {
  const app = Fastify();
  app.get('/documents/:id', { preHandler: fastifyGuard(verdict, documentCheck('read')) }, async (request: DocumentRequest) => ({ id: request.params.id }));
  app.delete('/documents/:id', { preHandler: fastifyGuard(verdict, documentCheck('delete'), { reasonHeader: true }) }, async (request: DocumentRequest) => ({ deleted: request.params.id }));
  return app;
}

// Run as a program: `VERDICT_URL=http://127.0.0.1:8421 node dist/examples/documents-app/app.js`.
if (import.meta.url === `file://${process.argv[1]}`) {
  const verdict = new VerdictClient({ url: process.env.VERDICT_URL ?? 'http://127.0.0.1:8421', cache: true, adminKey: process.env.ADMIN_API_KEY });
  const app = documentsApp(verdict);
  app.addHook('onClose', () => verdict.close());
  await app.listen({ port: Number(process.env.PORT ?? 3000) });
}
