import t from 'tap';
import { openStore } from '../../src/store/open.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { Policy } from '../../src/schemas/policy.js';
import { startServer, temporaryDataDir, type TestServer } from '../helpers/server.js';
import { TEST_WRITER } from '../helpers/writer.js';

/**
 * No policy's decisions may depend on another policy's condition text. Compiled conditions are
 * shared between policies; a policy whose condition path spells another policy's conditions (as
 * a joined key would hold them) must not take their place.
 */

/** Policy B: deny anyone outside the core team below level 3. */
const blocker = {
  name: 'b',
  rules: [
    {
      name: 'block',
      effect: 'deny',
      principal_conditions: [
        { path: 'attributes.team', operator: '!=', value: 'core' },
        { path: 'attributes.level', operator: '<', value: 3 },
      ],
      actions: ['read'],
    },
  ],
  default_effect: 'allow',
};

/** Policy A: one condition whose path is B's two conditions as a key joined with U+0000 and U+0001 would spell them. */
const crafted = {
  name: 'a',
  rules: [
    {
      name: 'decoy',
      effect: 'allow',
      principal_conditions: [{ path: 'attributes.team\u0000!=\u0000"core"\u0001attributes.level', operator: '<', value: 3 }],
      actions: ['read'],
    },
  ],
  default_effect: 'allow',
};

const outsider = { principal: { attributes: { team: 'sales', level: 1 } }, resource: { attributes: { kind: 'doc' } }, action: 'read' };
const BLOCKED = { allowed: false, reason: 'Rule block denied the action in policy b' };

async function check(server: TestServer) {
  const answer = await server.call('POST', '/check', outsider);
  t.equal(answer.status, 200);
  return answer.body;
}

t.test('a condition path holding control characters is refused, and B keeps denying', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const refused = await server.call('POST', '/admin/policies', crafted);
  t.equal(refused.status, 422, 'refused');
  t.same(refused.body.detail, [
    { loc: ['body', 'rules', 0, 'principal_conditions', 0, 'path'], msg: 'path must not hold control characters (U+0000 at index 15)', type: 'value_error' },
  ]);
  t.equal((await server.call('POST', '/admin/policies', blocker)).status, 200);
  t.same(await check(server), BLOCKED);

  const action = await server.call('POST', '/admin/policies', { ...blocker, name: 'c', rules: [{ ...blocker.rules[0], actions: ['read', 'wri\tte'] }] });
  t.equal(action.status, 422, 'an action holding one is refused too');
  t.same(action.body.detail, [{ loc: ['body', 'rules', 0, 'actions', 1], msg: 'an action must not hold control characters (U+0009 at index 3)', type: 'value_error' }]);
});

t.test('a crafted policy already in the store (written before paths were checked) does not disable B', async (t) => {
  const dataDir = temporaryDataDir();
  const store = await openStore({ ...DEFAULT_CONFIG, dataDir }, { auditValues: false });
  const stored = { version: '1.0', description: null, ...crafted, rules: crafted.rules.map((rule) => ({ ...rule, description: null, resource_conditions: [] })) };
  await store.createPolicy(stored as unknown as Policy, TEST_WRITER);
  await store.close();

  const server = await startServer({ dataDir });
  t.teardown(server.close);
  t.equal((await server.call('POST', '/admin/policies', blocker)).status, 200, 'B created after A (a derived snapshot)');
  t.same(await check(server), BLOCKED, 'B denies, on the snapshot derived from the one holding A');
  await server.close();

  // Compiled afresh at start, A first: B still denies.
  const restarted = await startServer({ dataDir });
  t.teardown(restarted.close);
  t.same(await check(restarted), BLOCKED, 'B denies after a restart');
  const explained = await restarted.call('POST', '/check?explain=true', outsider);
  t.same(explained.body.explain.decided_by, { kind: 'rule', effect: 'deny', why: explained.body.explain.decided_by.why, policy: 'b', rule: 'block' });
});
