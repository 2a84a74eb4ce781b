import t from 'tap';
import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { MongoNetworkError, MongoServerError, Timestamp, type ChangeStreamDocument, type ResumeToken } from 'mongodb';
import { ChangeStreamFollower, type FollowedStream, type StreamStart } from '../../src/store/mongodb/change-stream-follower.js';
import type { StoreChange } from '../../src/store/store.js';

// The MongoDB store's follower driven by scripted change streams (no MongoDB server runs here):
// each stream plays its steps in order, as the driver's ChangeStream would report them (which moves
// its resume token to a change's just before it hands the change over).

type Step =
  /** The driver moved the resume token (after an empty batch): the stream is live. */
  | { token: string }
  /** A change event. */
  | { event: ChangeStreamDocument }
  /** The stream fails with this error. */
  | { fail: Error }
  /** Nothing more: the stream waits until it is closed. */
  | 'wait'
  /** The stream ends by itself (as the driver's does after an invalidate). */
  | 'end';

class ScriptedStream extends EventEmitter implements FollowedStream {
  private closed = false;
  private wake: (() => void) | undefined;

  constructor(private readonly steps: Step[]) {
    super();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<ChangeStreamDocument> {
    for (const step of this.steps) {
      await new Promise((resolve) => setImmediate(resolve));
      if (this.closed) return;
      if (step === 'end') return;
      if (step === 'wait') {
        await new Promise<void>((resolve) => (this.wake = resolve));
        return;
      }
      if ('token' in step) this.emit('resumeTokenChanged', { _data: step.token });
      else if ('fail' in step) throw step.fail;
      else {
        this.emit('resumeTokenChanged', step.event._id);
        yield step.event;
      }
    }
    await new Promise<void>((resolve) => (this.wake = resolve));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
  }
}

const token = (data: string): ResumeToken => ({ _data: data });
const policyChange = (data: string) =>
  ({ _id: token(data), operationType: 'update', ns: { db: 'verdict', coll: 'policies' }, documentKey: { _id: 'p' }, clusterTime: new Timestamp({ t: 1, i: 1 }) }) as unknown as ChangeStreamDocument;
const entityChange = (data: string, uri: string) =>
  ({ _id: token(data), operationType: 'delete', ns: { db: 'verdict', coll: 'entities' }, documentKey: { _id: uri }, wallTime: new Date(5000) }) as unknown as ChangeStreamDocument;
const resetEvent = (data: string, operationType: 'drop' | 'dropDatabase' | 'invalidate' | 'rename') =>
  ({ _id: token(data), operationType, ns: { db: 'verdict', coll: 'policies' } }) as unknown as ChangeStreamDocument;
const lostHistory = () => new MongoServerError({ ok: 0, errmsg: 'resume point may no longer be in the oplog', code: 286, codeName: 'ChangeStreamHistoryLost' });
const networkError = () => new MongoNetworkError('connection closed');
const unauthorized = () => new MongoServerError({ ok: 0, errmsg: 'not authorized on verdict to execute command { aggregate: 1 }', code: 13, codeName: 'Unauthorized' });
const invalidToken = () => new MongoServerError({ ok: 0, errmsg: 'cannot resume stream; the resume token was not found', code: 260, codeName: 'InvalidResumeToken' });

/**
 * Runs a follower over the scripted streams; the log holds every open (with its start) and every
 * change heard, in order. `fails(change)`: the listener throws on that change instead of taking it.
 */
function follow(streams: Step[][], from?: Timestamp, fails: (change: StoreChange) => boolean = () => false) {
  const log: Array<{ open: StreamStart } | StoreChange> = [];
  let opened = 0;
  let done: () => void = () => undefined;
  const allOpened = new Promise<void>((resolve) => (done = resolve));
  const follower = new ChangeStreamFollower(
    (start) => {
      log.push({ open: start });
      const steps = streams[opened++] ?? ['wait'];
      if (opened >= streams.length) setImmediate(done);
      return new ScriptedStream(steps);
    },
    (change) => {
      if (fails(change)) throw new Error('the listener failed');
      log.push('committedAt' in change ? { ...change, committedAt: undefined } : change);
    },
    { from, backoffMillis: { first: 1, max: 4 } },
  );
  /** Resolves once the last scripted stream has played. */
  const played = async () => {
    await allOpened;
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
  };
  return { log, follower, played };
}

const atTime = new Timestamp({ t: 100, i: 2 });

t.test('events become store changes; every reopen resumes after the last token (scripted change stream)', async (t) => {
  const { log, follower, played } = follow([[{ token: 'a' }, { event: policyChange('b') }, { event: entityChange('c', 'user:x') }, { fail: networkError() }], [{ token: 'd' }, 'wait']], atTime);
  await played();
  await follower.stop();
  t.same(log, [
    { open: { startAtOperationTime: atTime } },
    { kind: 'policies', committedAt: undefined },
    { kind: 'entity', uri: 'user:x', committedAt: undefined },
    { kind: 'interrupted', reason: 'connection closed' },
    { open: { resumeAfter: token('c') } },
    { kind: 'resumed' },
  ]);
});

t.test('a stream that failed before any token reopens at the starting operation time, losing nothing (scripted change stream)', async (t) => {
  const { log, follower, played } = follow([[{ fail: networkError() }], [{ fail: networkError() }], [{ token: 'a' }, 'wait']], atTime);
  await played();
  await follower.stop();
  t.same(log, [
    { open: { startAtOperationTime: atTime } },
    { kind: 'interrupted', reason: 'connection closed' },
    { open: { startAtOperationTime: atTime } },
    { open: { startAtOperationTime: atTime } },
    { kind: 'resumed' },
  ], 'interrupted once, resumed once, and no reload: the start point still holds');
});

t.test('an empty batch moves the token: an outage after it resumes there, not at the start (scripted change stream)', async (t) => {
  const { log, follower, played } = follow([[{ token: 'a' }, { token: 'b' }, { fail: networkError() }], [{ token: 'c' }, 'wait']], atTime);
  await played();
  await follower.stop();
  t.same(log.filter((entry) => 'open' in entry), [{ open: { startAtOperationTime: atTime } }, { open: { resumeAfter: token('b') } }]);
});

t.test('with no starting point, a failed first open reloads everything once the new stream is live (scripted change stream)', async (t) => {
  const { log, follower, played } = follow([[{ fail: networkError() }], [{ token: 'a' }, 'wait']]);
  await played();
  await follower.stop();
  t.same(log, [{ open: {} }, { kind: 'interrupted', reason: 'connection closed' }, { open: {} }, { kind: 'resumed' }, { kind: 'everything' }]);
});

t.test('lost history: the new stream opens first, then everything is reloaded (scripted change stream)', async (t) => {
  const { log, follower, played } = follow([[{ token: 'a' }, { fail: lostHistory() }], [{ fail: networkError() }], [{ token: 'b' }, 'wait']], atTime);
  await played();
  await follower.stop();
  t.same(log, [
    { open: { startAtOperationTime: atTime } },
    { kind: 'interrupted', reason: 'resume point may no longer be in the oplog (the history to resume from is lost: following from a new stream, and reloading everything once it is open)' },
    { open: {} },
    { open: {} },
    { kind: 'resumed' },
    { kind: 'everything' },
  ], 'no reload before a stream is live again, and one after');
});

t.test('drops, renames and invalidation reload everything; after an invalidate the next stream starts after it (scripted change stream)', async (t) => {
  const { log, follower, played } = follow([[{ token: 'a' }, { event: resetEvent('b', 'drop') }, { event: resetEvent('c', 'rename') }, { event: resetEvent('d', 'dropDatabase') }, { event: resetEvent('e', 'invalidate') }, 'end'], [{ token: 'f' }, 'wait']], atTime);
  await played();
  await follower.stop();
  t.same(log, [
    { open: { startAtOperationTime: atTime } },
    { kind: 'everything' },
    { kind: 'everything' },
    { kind: 'everything' },
    { kind: 'everything' },
    { open: { startAfter: token('e') } },
  ]);
});

t.test('a stream that ends by itself (closed under the follower) is reopened where it stood (scripted change stream)', async (t) => {
  const { log, follower, played } = follow([[{ token: 'a' }, 'end'], [{ token: 'b' }, 'wait']], atTime);
  await played();
  await follower.stop();
  t.same(log, [{ open: { startAtOperationTime: atTime } }, { open: { resumeAfter: token('a') } }], 'no reload, no interruption reported');
});

t.test('a change the listener fails on is not lost: the stream reopens before it (scripted change stream)', async (t) => {
  let failures = 0;
  const failsOnce = (change: StoreChange) => change.kind === 'entity' && failures++ === 0;
  const { log, follower, played } = follow([[{ token: 'a' }, { event: policyChange('b') }, { event: entityChange('c', 'user:x') }, 'wait'], [{ event: entityChange('c', 'user:x') }, 'wait']], atTime, failsOnce);
  await played();
  await follower.stop();
  t.same(log, [
    { open: { startAtOperationTime: atTime } },
    { kind: 'policies', committedAt: undefined },
    { kind: 'interrupted', reason: 'the listener failed' },
    { open: { resumeAfter: token('b') } },
    { kind: 'resumed' },
    { kind: 'entity', uri: 'user:x', committedAt: undefined },
  ], 'reopened after the last change taken, and the failed one heard again');
});

t.test('a change the listener fails on three times is given up for a new stream and a reload of everything (scripted change stream)', async (t) => {
  const { log, follower, played } = follow(
    [[{ event: entityChange('c', 'user:x') }, 'wait'], [{ event: entityChange('c', 'user:x') }, 'wait'], [{ event: entityChange('c', 'user:x') }, 'wait'], [{ token: 'd' }, 'wait']],
    atTime,
    (change) => change.kind === 'entity',
  );
  await played();
  await follower.stop();
  const start = { open: { startAtOperationTime: atTime } };
  t.same(log.filter((entry) => 'open' in entry), [start, start, start, { open: {} }], 'before the change while it may still be taken, then from a new stream');
  t.match(log.filter((entry) => 'kind' in entry && entry.kind === 'interrupted').at(-1), { reason: /could not be applied 3 times in a row: following from a new stream, and reloading everything/ });
  t.same(log.slice(-2), [{ kind: 'resumed' }, { kind: 'everything' }]);
});

t.test('a resume the server keeps refusing is given up after three refusals: a new stream, then everything reloaded (scripted change stream)', async (t) => {
  const { log, follower, played } = follow([[{ token: 'a' }, { fail: unauthorized() }], [{ fail: unauthorized() }], [{ fail: unauthorized() }], [{ token: 'b' }, 'wait']], atTime);
  await played();
  await follower.stop();
  t.same(log, [
    { open: { startAtOperationTime: atTime } },
    { kind: 'interrupted', reason: unauthorized().message },
    { open: { resumeAfter: token('a') } },
    { open: { resumeAfter: token('a') } },
    { kind: 'interrupted', reason: `${unauthorized().message} (MongoDB refused to resume 3 times in a row: following from a new stream, and reloading everything once it is open)` },
    { open: {} },
    { kind: 'resumed' },
    { kind: 'everything' },
  ]);
});

t.test('a resume token the server calls invalid (260) is given up at once (scripted change stream)', async (t) => {
  const { log, follower, played } = follow([[{ token: 'a' }, { fail: invalidToken() }], [{ token: 'b' }, 'wait']], atTime);
  await played();
  await follower.stop();
  t.same(log.filter((entry) => 'open' in entry), [{ open: { startAtOperationTime: atTime } }, { open: {} }]);
  t.same(log.slice(-2), [{ kind: 'resumed' }, { kind: 'everything' }]);
});

t.test('an outage never gives up the resume point, however many reopens fail (scripted change stream)', async (t) => {
  const outage: Step[][] = Array.from({ length: 6 }, () => [{ fail: networkError() }]);
  const { log, follower, played } = follow([[{ token: 'a' }, { fail: networkError() }], ...outage, [{ token: 'b' }, 'wait']], atTime);
  await played();
  await follower.stop();
  t.ok(log.filter((entry) => 'open' in entry).slice(1).every((entry) => JSON.stringify(entry) === JSON.stringify({ open: { resumeAfter: token('a') } })), 'every reopen resumes where it stood');
  t.same(log.filter((entry) => !('open' in entry)), [{ kind: 'interrupted', reason: 'connection closed' }, { kind: 'resumed' }], 'nothing to reload');
});

t.test('stop() cancels a pending reopen and ends the follower (scripted change stream)', async (t) => {
  const opens: StreamStart[] = [];
  const follower = new ChangeStreamFollower(
    (start) => {
      opens.push(start);
      return new ScriptedStream([{ fail: networkError() }]);
    },
    () => undefined,
    { from: atTime, backoffMillis: { first: 60_000, max: 60_000 } },
  );
  while (opens.length === 0) await new Promise((resolve) => setImmediate(resolve));
  for (let turn = 0; turn < 10; turn++) await new Promise((resolve) => setImmediate(resolve));
  // The bound does not outlive the test: a timer left behind would run on beside the files after this one.
  const stopped = await Promise.race([follower.stop().then(() => true), sleep(10_000, false, { ref: false })]);
  t.equal(stopped, true, 'stop() ended the one-minute pause instead of waiting it out');
  t.equal(opens.length, 1, 'and nothing was reopened');
});
