import t from 'tap';
import {
  MongoClient,
  MongoAPIError,
  MongoErrorLabel,
  MongoInvalidArgumentError,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoRuntimeError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTransactionError,
  MongoWriteConcernError,
} from 'mongodb';
import { rethrowStoreError, rethrowWriteError, unavailability, unconfirmedWrite } from '../../src/store/mongodb/errors.js';
import { CommitOutcomeUnknownError } from '../../src/store/mongodb/transaction.js';
import { StoreUnavailableError, StoreWriteUnconfirmedError } from '../../src/store/errors.js';

// How MongoDB failures reach clients, checked on the driver's own error classes (mongodb 7.9),
// built as the driver builds them from a server's reply: no MongoDB server runs here.

const serverError = (code: number, codeName: string, labels: string[] = []) =>
  new MongoServerError({ ok: 0, errmsg: `${codeName} from the server`, code, codeName, errorLabels: labels });

t.test('failover, shutdown and unreachable servers are "unavailable" (503 with a detail), by code', async (t) => {
  for (const [code, name] of [
    [10107, 'NotWritablePrimary'],
    [11602, 'InterruptedDueToReplStateChange'],
    [91, 'ShutdownInProgress'],
    [11600, 'InterruptedAtShutdown'],
    [189, 'PrimarySteppedDown'],
    [13435, 'NotPrimaryNoSecondaryOk'],
    [13436, 'NotPrimaryOrSecondary'],
    [64, 'WriteConcernFailed'],
  ] as const) {
    t.match(unavailability(serverError(code, name)), new RegExp(`^${name}: `), `${name} (${code})`);
  }
});

t.test('errors labelled for a retry are unavailable whatever their code', async (t) => {
  for (const label of [
    MongoErrorLabel.RetryableWriteError,
    MongoErrorLabel.TransientTransactionError,
    MongoErrorLabel.UnknownTransactionCommitResult,
  ]) {
    t.match(unavailability(serverError(112, 'WriteConflict', [label])), new RegExp(`^${label}: `), label);
  }
});

t.test('a write concern error is unavailable, as its own class and inside a write reply', async (t) => {
  const writeConcernError = { code: 64, codeName: 'WriteConcernFailed', errmsg: 'waiting for replication timed out' };
  t.match(unavailability(new MongoWriteConcernError({ ok: 1, writeConcernError })), /^write concern not satisfied/);
  const reply = new MongoServerError({ ok: 1, errmsg: 'write failed', code: 100, codeName: 'UnsatisfiableWriteConcern', writeConcernError });
  t.match(unavailability(reply), /^write concern not satisfied: waiting for replication timed out/);
});

t.test('network errors and a real server-selection timeout are unavailable', async (t) => {
  t.ok(unavailability(new MongoNetworkError('connection 3 to 10.0.0.1:27017 closed')));
  t.ok(unavailability(new MongoNetworkTimeoutError('connection timed out')));
  // A client pointed at a port where nothing listens: the driver's own selection error.
  const client = new MongoClient('mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200');
  const error = await client.db('verdict').collection('policies').findOne({}).then(() => undefined, (caught: unknown) => caught);
  await client.close();
  t.type(error, MongoServerSelectionError);
  t.match(unavailability(error), /127\.0\.0\.1:1/);
});

t.test('driver misuse and other server errors are bugs: passed on as they are (500, logged)', async (t) => {
  for (const error of [
    new MongoInvalidArgumentError('Argument "filter" must be an object'),
    new MongoAPIError('ChangeStream cannot be used as an iterator after being used as an EventEmitter'),
    new MongoTransactionError('Transaction already in progress'),
    new MongoRuntimeError('unexpected state'),
    serverError(2, 'BadValue'),
    serverError(11000, 'DuplicateKey'),
    new Error('not MongoDB at all'),
  ]) {
    t.equal(unavailability(error), undefined, error.message);
    t.throws(() => rethrowStoreError(error), error, 'rethrown unchanged');
  }
});

t.test('rethrowStoreError: unavailable becomes StoreUnavailableError with the reason', async (t) => {
  t.throws(() => rethrowStoreError(serverError(10107, 'NotWritablePrimary')), new StoreUnavailableError('MongoDB is unavailable (NotWritablePrimary: NotWritablePrimary from the server)'));
});

t.test('a write not committed says it was not applied; one whose commit is unconfirmed says it may have been', async (t) => {
  t.throws(
    () => rethrowWriteError(serverError(10107, 'NotWritablePrimary')),
    new StoreUnavailableError('MongoDB is unavailable (NotWritablePrimary: NotWritablePrimary from the server); the write was not applied'),
  );
  const unknown = new CommitOutcomeUnknownError(new MongoWriteConcernError({ ok: 1, writeConcernError: { code: 64, codeName: 'WriteConcernFailed', errmsg: 'waiting for replication timed out' } }));
  t.match(unavailability(unknown), /^write concern not satisfied/, 'an unknown commit is unavailability, by its cause');
  const unconfirmed = unconfirmedWrite(unknown, 10_000);
  t.type(unconfirmed, StoreWriteUnconfirmedError);
  t.equal(unconfirmed.message, 'MongoDB did not confirm the write within 10 s (write concern not satisfied: waiting for replication timed out): it may have been applied, or not: read it back before sending it again');
  t.throws(() => rethrowWriteError(new Error('a bug')), new Error('a bug'), 'anything else is passed on');
});
