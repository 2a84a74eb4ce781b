import t from 'tap';
import { startServer } from '../helpers/server.js';

t.test('a fresh server answers /health and denies without policies', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const health = await server.call('GET', '/health');
  t.equal(health.status, 200);
  t.same(health.body, { status: 'ok', revision: 0 });
  const check = await server.call('POST', '/check', { principal: { attributes: { a: 1 } }, resource: { uri: 'x' } });
  t.equal(check.status, 200);
  t.same(check.body, { allowed: false, reason: 'Action denied by default because there are no policies' });
});
