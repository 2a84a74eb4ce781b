import t, { type Test } from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Document } from 'mongodb';
import { MongoStore } from '../../src/store/mongodb/store.js';
import type { MongoTimeouts } from '../../src/store/mongodb/connection.js';
import type { AuditObserver } from '../../src/store/store.js';
import { StoreUnavailableError, StoreWriteUnconfirmedError } from '../../src/store/errors.js';
import type { Policy } from '../../src/schemas/policy.js';
import { found, NO_ANSWER, scriptedMongo, type Answer, type Received } from '../helpers/scripted-mongo.js';
import { TEST_WRITER } from '../helpers/writer.js';
import { startServer } from '../helpers/server.js';

// Every MongoDB operation of the store ends, whatever the server does: checked against a scripted
// stand-in for a primary (no MongoDB server runs here), through the real driver. The store is given
// short bounds; each test allows many times them (LIVENESS_MS) before it calls the operation hung.

const TIMEOUTS: MongoTimeouts = { retry: 300, majority: 200, answer: 1500 };
const LIVENESS_MS = 20_000;

const policy = (name: string): Policy => ({ version: '1.0', name, description: null, rules: [], default_effect: 'deny' });

/** What `operation` ended with, or 'still waiting' when it had not ended after LIVENESS_MS. */
async function ending(operation: Promise<unknown>): Promise<{ value: unknown } | { error: Error } | 'still waiting'> {
  return Promise.race([
    operation.then(
      (value) => ({ value }),
      (error: Error) => ({ error }),
    ),
    sleep(LIVENESS_MS, 'still waiting' as const, { ref: false }),
  ]);
}

/**
 * A primary whose secondaries are gone (from when `lost()` holds): a write that waits for a
 * majority is answered only when its wtimeout runs out, with MongoDB's write concern error, and
 * never without one; everything else is answered.
 */
function majorityLost(lost: () => boolean, also: Answer = () => undefined): Answer {
  return (command: Received) => {
    const concern = command.body.writeConcern as Document | undefined;
    if (!lost() || concern?.w !== 'majority') return also(command);
    if (concern.wtimeout === undefined) return NO_ANSWER;
    const writeConcernError = { code: 64, codeName: 'WriteConcernFailed', errmsg: 'waiting for replication timed out', errInfo: { wtimeout: true } };
    return sleep(Number(concern.wtimeout)).then(() => ({ ok: 1, n: 1, writeConcernError }));
  };
}

async function openOn(t: Test, answer: Answer, observer?: AuditObserver) {
  const server = await scriptedMongo(answer);
  const store = await MongoStore.open({ uri: server.uri, database: 'verdict', serverSelectionTimeoutMS: 2000, timeouts: TIMEOUTS, observer });
  t.teardown(async () => {
    await store.close();
    await server.close();
  });
  return { server, store };
}

t.test('an admin write whose commit no majority acknowledges ends, saying it may have been applied (scripted primary that loses its majority)', async (t) => {
  let lost = false;
  const heard: string[] = [];
  const observer: AuditObserver = { recorded: (operation) => heard.push(operation), failed: () => heard.push('failed'), unconfirmed: () => heard.push('unconfirmed') };
  const { store } = await openOn(t, majorityLost(() => lost), observer);
  lost = true;
  heard.length = 0;
  const ended = await ending(store.createPolicy(policy('p'), TEST_WRITER));
  t.not(ended, 'still waiting', 'the write ended');
  if (ended === 'still waiting' || !('error' in ended)) return t.fail('the write was acknowledged');
  t.type(ended.error, StoreWriteUnconfirmedError);
  t.match(ended.error.message, /did not confirm.*write concern not satisfied.*may have been applied, or not: read it back before sending it again/);
  t.same(heard, ['unconfirmed'], 'the audit observer hears it as unconfirmed, not as failed (verdict_audit_writes_unconfirmed_total)');
});

t.test('a start whose set-up no majority acknowledges ends, refused in one line (scripted primary without a majority)', async (t) => {
  const server = await scriptedMongo(majorityLost(() => true));
  t.teardown(() => server.close());
  const ended = await ending(MongoStore.open({ uri: server.uri, database: 'verdict', serverSelectionTimeoutMS: 2000, timeouts: TIMEOUTS }));
  t.not(ended, 'still waiting', 'the start ended');
  if (ended === 'still waiting' || !('error' in ended)) return t.fail('the start succeeded');
  t.type(ended.error, StoreUnavailableError);
  t.match(ended.error.message, /^cannot use MongoDB: .*write concern/);
});

t.test('audit pruning that no majority acknowledges ends (scripted primary that loses its majority)', async (t) => {
  let lost = false;
  const oneRecord = (command: Received) =>
    command.name === 'find' && command.body.find === 'audit' ? found(command, [{ _id: 1 }]) : undefined;
  const { store } = await openOn(t, majorityLost(() => lost, oneRecord));
  lost = true;
  const ended = await ending(store.pruneAudit({ maxCount: 0 }, 10));
  t.not(ended, 'still waiting', 'the prune ended');
  if (ended === 'still waiting' || !('error' in ended)) return t.fail('the prune succeeded');
  t.type(ended.error, StoreUnavailableError);
});

t.test('a commit never answered ends, saying it may have been applied; a read never answered ends (scripted primary that stops answering)', async (t) => {
  let silent = false;
  const { store } = await openOn(t, (command) => (silent && (command.name === 'commitTransaction' || (command.name === 'find' && command.body.find === 'entities')) ? NO_ANSWER : undefined));
  silent = true;
  const write = await ending(store.createEntity({ uri: 'user:a', type: null, attributes: [], registered_at: '2026-01-01T00:00:00.000Z' }, TEST_WRITER));
  t.not(write, 'still waiting', 'the write ended');
  if (write !== 'still waiting' && 'error' in write) {
    t.type(write.error, StoreWriteUnconfirmedError);
    t.match(write.error.message, /may have been applied/);
  } else t.fail('the write was acknowledged');
  const read = await ending(store.getEntity('user:a'));
  t.not(read, 'still waiting', 'the read ended');
  if (read !== 'still waiting' && 'error' in read) t.type(read.error, StoreUnavailableError);
  else t.fail('the read answered');
});

t.test('a write that every attempt fails to start ends, saying it was not applied (scripted primary whose transactions all conflict)', async (t) => {
  let conflicting = false;
  const writeConflict = { ok: 0, errmsg: 'Write conflict during plan execution', code: 112, codeName: 'WriteConflict', errorLabels: ['TransientTransactionError'] };
  const { server, store } = await openOn(t, (command) => (conflicting && command.name === 'findAndModify' ? writeConflict : undefined));
  conflicting = true;
  const before = server.operations().length;
  const ended = await ending(store.createPolicy(policy('p'), TEST_WRITER));
  t.not(ended, 'still waiting', 'the write ended');
  if (ended === 'still waiting' || !('error' in ended)) return t.fail('the write was acknowledged');
  t.type(ended.error, StoreUnavailableError);
  t.notOk(ended.error instanceof StoreWriteUnconfirmedError, 'no commit was sent: its fate is known');
  t.match(ended.error.message, /Write conflict.*the write was not applied/);
  t.ok(server.operations().slice(before).filter((command) => command.name === 'findAndModify').length > 1, 'it was retried meanwhile');
});

t.test('over HTTP: a write no majority confirms is a 503 whose detail says it may have been applied, and checks go on (scripted primary that loses its majority)', async (t) => {
  let lost = false;
  const mongo = await scriptedMongo(majorityLost(() => lost));
  const store = await MongoStore.open({ uri: mongo.uri, database: 'verdict', serverSelectionTimeoutMS: 2000, timeouts: TIMEOUTS });
  const server = await startServer({}, { store });
  t.teardown(async () => {
    await server.close();
    await mongo.close();
  });
  lost = true;
  const written = await server.call('POST', '/admin/policies', { name: 'p', rules: [] });
  t.equal(written.status, 503);
  t.match(written.body.detail, /^MongoDB did not confirm the write within 0\.3 s \(write concern not satisfied: .*\): it may have been applied, or not: read it back before sending it again$/);
  const check = await server.call('POST', '/check', { principal: { uri: 'user:a' }, resource: { attributes: { kind: 'x' } }, action: 'read' });
  t.equal(check.status, 200, 'decisions go on from the snapshot');
});

t.test('a commit whose outcome stays unknown is sent again after growing pauses, not as fast as the server answers (scripted primary)', async (t) => {
  let unknown = false;
  const { server, store } = await openOn(t, (command) =>
    unknown && command.name === 'commitTransaction'
      ? { ok: 0, code: 50, codeName: 'MaxTimeMSExpired', errmsg: 'operation exceeded time limit', errorLabels: ['UnknownTransactionCommitResult'] }
      : undefined,
  );
  unknown = true;
  const ended = await ending(store.createPolicy(policy('p'), TEST_WRITER));
  t.ok(ended !== 'still waiting' && 'error' in ended && ended.error instanceof StoreWriteUnconfirmedError, 'the write ends, saying it may have been applied');
  const commits = server.received.filter((command) => command.name === 'commitTransaction').length;
  // Answered at once, a commit sent again without a pause goes out thousands of times in the 300 ms retry budget.
  t.ok(commits >= 2 && commits <= 60, `${commits} commits in the ${TIMEOUTS.retry} ms budget`);
});

t.test('a write past its retry budget stops before its next operation, not applied, however slowly each answer comes (scripted primary)', async (t) => {
  let slow = false;
  const { server, store } = await openOn(t, async (command) => {
    if (slow && command.name === 'findAndModify') await sleep(200);
    return undefined;
  });
  slow = true;
  const before = server.received.length;
  const ended = await ending(store.createPolicy(policy('p'), TEST_WRITER));
  t.ok(ended !== 'still waiting' && 'error' in ended, 'the write is refused');
  if (ended === 'still waiting' || !('error' in ended)) return;
  t.type(ended.error, StoreUnavailableError);
  t.match(ended.error.message, new RegExp(`longer than its ${TIMEOUTS.retry} ms.*not applied`));
  t.equal(server.received.slice(before).filter((command) => command.name === 'commitTransaction').length, 0, 'nothing was committed');
});
