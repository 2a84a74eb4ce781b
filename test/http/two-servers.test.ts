import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { startServer, temporaryDataDir, type TestServer } from '../helpers/server.js';
import { reachableMongo } from '../helpers/mongo.js';
import type { Config } from '../../src/config/config.js';

// Two Verdict servers on one data directory (two connections, as two processes would have): what
// is written through one is enforced by the other once its change feed has delivered it.

async function eventually(t: Test, probe: () => Promise<unknown>, expected: unknown, what: string): Promise<void> {
  let last: unknown;
  for (let waited = 0; waited < 5000; waited += 20) {
    last = await probe();
    if (JSON.stringify(last) === JSON.stringify(expected)) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.same(last, expected, what);
}

interface SharedStore {
  config: Partial<Config>;
  drop(): Promise<unknown>;
}

function twoServersOn(name: string, sharedStore: () => Promise<SharedStore>): void {
  t.test(`${name}: policies and entities written through one server are enforced by the other`, async (t) => {
    const shared = await sharedStore();
    const first = await startServer(shared.config);
    const second = await startServer(shared.config);
    t.teardown(async () => {
      await first.close();
      await second.close();
      await shared.drop();
    });
    const check = (server: TestServer) => async () =>
      (await server.call('POST', '/check', { principal: { uri: 'user:kim' }, resource: { attributes: { kind: 'laptop' } }, action: 'use' })).body;

    t.equal((await first.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:kim', attributes: { team: 'it' } })).status, 200);
    t.same(await check(second)(), { allowed: false, reason: 'Action denied by default because there are no policies' });

    const policy = {
      name: 'laptops',
      rules: [
        {
          name: 'it-uses-laptops',
          effect: 'allow',
          principal_conditions: [{ path: 'attributes.team', operator: '==', value: 'it' }],
          resource_conditions: [{ path: 'attributes.kind', operator: '==', value: 'laptop' }],
          actions: ['use'],
        },
      ],
    };
    t.equal((await first.call('POST', '/admin/policies', policy)).status, 200);
    const allowed = { allowed: true, reason: 'Rule it-uses-laptops allowed the action in policy laptops' };
    await eventually(t, check(second), allowed, 'the new policy is enforced by the other server');

    // The second server has Kim's attributes cached by now; an update through the first must reach it.
    t.equal((await first.call('PUT', '/admin/fetchers/registry/entities/user%3Akim', { uri: 'user:kim', attributes: { team: 'hr' } })).status, 200);
    await eventually(t, check(second), { allowed: false, reason: 'Action denied by default effect' }, 'the entity update reaches it');

    t.equal((await first.call('DELETE', '/admin/fetchers/registry/entities/user%3Akim')).status, 200);
    const withSupplied = async () =>
      (await second.call('POST', '/check', { principal: { uri: 'user:kim', attributes: { team: 'it' } }, resource: { attributes: { kind: 'laptop' } }, action: 'use' })).body;
    await eventually(t, withSupplied, allowed, 'the deletion reaches it (the supplied team no longer conflicts)');

    t.equal((await second.call('DELETE', '/admin/policies/laptops')).status, 200);
    await eventually(t, withSupplied, { allowed: false, reason: 'Action denied by default because there are no policies' }, 'and back the other way');

    const lagObservations = async (server: TestServer) => {
      const text = String((await server.call('GET', '/metrics')).body);
      return Number(/^verdict_change_feed_lag_seconds_count (\d+)$/m.exec(text)?.[1]);
    };
    t.ok((await lagObservations(second)) >= 4, "the second server timed each of the first's four writes it served");
    // The deletion was written through the second server, so nothing above waited for the first to serve it.
    await eventually(t, async () => (await lagObservations(first)) >= 1, true, "and the first the second's deletion");
  });

  t.test(`${name}: a burst of writes, two to one policy and two to one entity, ends on the other server as the last write left each, on the front and in its worker`, async (t) => {
    const shared = await sharedStore();
    const first = await startServer(shared.config);
    const second = await startServer({ ...shared.config, evaluation: 'pool', workers: 1 });
    t.teardown(async () => {
      await first.close();
      await second.close();
      await shared.drop();
    });
    const forTeam = (name: string, team: string) => ({
      name,
      rules: [{ name: 'team-uses', effect: 'allow', principal_conditions: [{ path: 'attributes.team', operator: '==', value: team }], resource_conditions: [], actions: ['use'] }],
    });
    const byUri = async () => (await second.call('POST', '/check', { principal: { uri: 'user:kim' }, resource: { attributes: { kind: 'laptop' } }, action: 'use' })).body.allowed;
    // Attributes only: the second server's worker decides these.
    const teamsAllowed = async () =>
      (await second.call('POST', '/check/bulk', ['it', 'ops', 'qa'].map((team) => ({ principal: { attributes: { team } }, resource: { attributes: { kind: 'laptop' } }, action: 'use' })))).body.map(
        (decision: { allowed: boolean }) => decision.allowed,
      );
    t.equal((await first.call('POST', '/admin/fetchers/registry/entities', { uri: 'user:kim', attributes: { team: 'it' } })).status, 200);
    t.equal((await first.call('POST', '/admin/policies', forTeam('laptops', 'it'))).status, 200);
    await eventually(t, teamsAllowed, [true, false, false], 'the worker of the other server holds the policy');
    t.equal(await byUri(), true, 'and so does its front');

    const burst: [string, string, unknown][] = [
      ['PUT', '/admin/policies/laptops', forTeam('laptops', 'ops')],
      ['PUT', '/admin/fetchers/registry/entities/user%3Akim', { uri: 'user:kim', attributes: { team: 'ops' } }],
      ['POST', '/admin/policies', forTeam('interim', 'it')],
      ['PUT', '/admin/policies/laptops', forTeam('laptops', 'qa')],
      ['DELETE', '/admin/policies/interim', undefined],
      ['PUT', '/admin/fetchers/registry/entities/user%3Akim', { uri: 'user:kim', attributes: { team: 'qa' } }],
    ];
    for (const [method, path, body] of burst) t.equal((await first.call(method, path, body)).status, 200, `${method} ${path}`);
    await eventually(t, async () => (await second.call('GET', '/health')).body.revision, (await first.call('GET', '/health')).body.revision, 'the other server reaches the last revision');
    t.same(await teamsAllowed(), [false, false, true], 'its worker decides by the last replacement, without the deleted policy');
    await eventually(t, byUri, true, 'its front reads the entity as last written');
    t.same((await second.call('GET', '/admin/policies')).body.map((policy: { name: string }) => policy.name), ['laptops']);
  });
}

twoServersOn('embedded', async () => {
  const dataDir = temporaryDataDir();
  return { config: { dataDir }, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
});

const mongo = await reachableMongo();
if ('skipped' in mongo) {
  console.log(`# two servers on MongoDB SKIPPED: ${mongo.skipped}`);
  t.test('mongodb: two servers on one store', { skip: mongo.skipped }, () => undefined);
} else {
  t.teardown(mongo.stop);
  twoServersOn('mongodb', async () => {
    const database = mongo.freshDatabase();
    return { config: { store: 'mongodb', mongodbUri: mongo.uri, mongodbDatabase: database }, drop: () => mongo.dropDatabase(database) };
  });
}
