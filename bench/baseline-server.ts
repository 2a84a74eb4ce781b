import Fastify from 'fastify';

/**
 * The baseline every figure is compared with: bare Fastify parsing the same JSON body and giving a
 * fixed answer, the limit for a Node.js front. Prints its port on stdout once listening.
 */
const app = Fastify({ logger: false });
const answer = { allowed: true, reason: 'fixed' };
app.post('/check', async () => answer);
app.post('/check/bulk', async (request) => (request.body as unknown[]).map(() => answer));
const decided = { decision: true };
app.post('/access/v1/evaluation', async () => decided);
app.post('/access/v1/evaluations', async (request) => ({ evaluations: (request.body as { evaluations: unknown[] }).evaluations.map(() => decided) }));
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
console.log(typeof address === 'object' && address !== null ? address.port : '');
