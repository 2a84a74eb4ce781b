import t from 'tap';
import { ask } from '../helpers/child.js';
import { scratchDir } from '../helpers/server.js';
import { PEER_ADDRESS, privateNetworkMissing, startBeyondLoopback } from '../helpers/private-network.js';

/**
 * The failure limit's loopback exemption is for clients on the server's own machine (the sidecar's
 * pod): here a client connects from an address that is not loopback (in a network namespace of its
 * own, see helpers/private-network.ts) and names 127.0.0.1 in X-Forwarded-For; with --trust-proxy
 * that address becomes request.ip, but it must not buy the client unlimited guesses.
 */

const missing = privateNetworkMissing();
const KEY = 'the-right-key-0123456789';
const LIMIT = 3;

t.test('a client beyond loopback naming 127.0.0.1 in X-Forwarded-For is still limited', { skip: missing }, async (t) => {
  for (const trustProxy of ['true', `${PEER_ADDRESS}/32`, 'loopback,192.0.2.0/24']) {
    const { address } = await startBeyondLoopback(t, scratchDir(t), [
      '--store',
      'embedded',
      '--data-dir',
      `${scratchDir(t)}/data`,
      '--workers',
      '1',
      '--trust-proxy',
      trustProxy,
      '--admin-auth-failures-per-minute',
      String(LIMIT),
    ], { ADMIN_AUTHN_REQUIRED: 'true', ADMIN_API_KEY: KEY, LOG_LEVEL: 'warn' });
    const claimsLoopback = { 'x-forwarded-for': '127.0.0.1' };
    const statuses: number[] = [];
    for (let attempt = 0; attempt <= LIMIT; attempt++) {
      statuses.push((await ask(address, 'GET', '/admin/policies', undefined, { ...claimsLoopback, 'way-api-key': `guess-${attempt}` })).status);
    }
    t.same(statuses, [401, 401, 401, 429], `--trust-proxy ${trustProxy}: ${LIMIT} failures, then 429`);
    const right = await ask(address, 'GET', '/admin/policies', undefined, { ...claimsLoopback, 'way-api-key': KEY });
    t.equal(right.status, 429, `--trust-proxy ${trustProxy}: even the right key waits out the minute`);
  }
});

t.test('from beyond loopback without a forwarded address, the limit holds as ever', { skip: missing }, async (t) => {
  const { address } = await startBeyondLoopback(t, scratchDir(t), ['--store', 'embedded', '--data-dir', `${scratchDir(t)}/data`, '--workers', '1', '--admin-auth-failures-per-minute', String(LIMIT)], {
    ADMIN_AUTHN_REQUIRED: 'true',
    ADMIN_API_KEY: KEY,
    LOG_LEVEL: 'warn',
  });
  const statuses: number[] = [];
  for (let attempt = 0; attempt <= LIMIT; attempt++) statuses.push((await ask(address, 'GET', '/admin/policies', undefined, { 'way-api-key': 'guess' })).status);
  t.same(statuses, [401, 401, 401, 429]);
});
