import { createServer, type Socket } from 'node:net';
import { BSON, Binary, Long, Timestamp, type Document } from 'mongodb';

/**
 * A scripted stand-in for a MongoDB replica-set primary, for the tests of what only a server's
 * answers can show where no MongoDB can run: the real driver connects to it over TCP and speaks
 * the wire protocol (OP_QUERY for the handshake, OP_MSG after), and the test's `answer` decides
 * what each command gets. It holds no data: by default reads find nothing, counters read 1,
 * writes succeed, and a change stream stays empty until the test sends it events.
 */

/** A command as the server received it (document sequences merged into the body). */
export interface Received {
  name: string;
  db: string;
  body: Document;
}

/** No reply at all: the server keeps the command (a primary waiting for a majority that never comes). */
export const NO_ANSWER = Symbol('no answer');

/** What the test answers a command with; undefined: the default answer. */
export type Answer = (command: Received) => Document | typeof NO_ANSWER | undefined | Promise<Document | typeof NO_ANSWER | undefined>;

export interface ScriptedMongo {
  /** A connection string naming the stand-in as the only member of replica set `rs0` (a test of several members names them all). */
  uri: string;
  host: string;
  /** Every command received, in order (the handshake and monitoring `hello`s included). */
  received: Received[];
  /** Commands received other than monitoring and session bookkeeping. */
  operations(): Received[];
  /** Queues change events for every open change stream; the next getMore returns them. */
  sendChanges(...events: Document[]): void;
  close(): Promise<void>;
}

const OP_REPLY = 1;
const OP_QUERY = 2004;
const OP_MSG = 2013;
const CHANGE_STREAM_CURSOR = Long.fromNumber(7);
const BOOKKEEPING = new Set(['hello', 'ismaster', 'isMaster', 'endSessions', 'ping', 'killCursors', 'getMore']);

const clusterTime = () => new Timestamp({ t: Math.floor(Date.now() / 1000), i: 1 });

/** A hello answer as a MongoDB 7 primary sends it. */
export function primaryHello(host: string): Document {
  return {
    helloOk: true,
    ismaster: true,
    isWritablePrimary: true,
    secondary: false,
    setName: 'rs0',
    setVersion: 1,
    hosts: [host],
    primary: host,
    me: host,
    maxBsonObjectSize: 16 * 1024 * 1024,
    maxMessageSizeBytes: 48_000_000,
    maxWriteBatchSize: 100_000,
    localTime: new Date(),
    logicalSessionTimeoutMinutes: 30,
    connectionId: 1,
    minWireVersion: 0,
    maxWireVersion: 21,
    readOnly: false,
    ok: 1,
  };
}

/** The answer to a find or aggregate that finds `documents`. */
export function found(command: Received, documents: Document[]): Document {
  return { cursor: { firstBatch: documents, id: Long.ZERO, ns: `${command.db}.${String(command.body[command.name])}` }, ok: 1 };
}

/**
 * Which member of its replica set a stand-in is, and how far it has applied the set's writes: by
 * default the only member, its primary, at the present time.
 */
export interface Membership {
  /** Its hello answer, from its own host (see primaryHello; a secondary sets `secondary` and names the primary). */
  hello?: (host: string) => Document;
  /** The operation and cluster time its answers carry. */
  operationTime?: () => Timestamp;
}

/** The answer a command gets when the test gives none. */
function defaultAnswer(command: Received, host: string, events: Document[], membership: Membership): Document {
  const { name, db, body } = command;
  switch (name) {
    case 'hello':
    case 'ismaster':
    case 'isMaster':
      return membership.hello?.(host) ?? primaryHello(host);
    case 'find':
    case 'listIndexes':
      return found(command, []);
    case 'aggregate':
      if ((body.pipeline as Document[])[0]?.$changeStream !== undefined) {
        return { cursor: { firstBatch: [], id: CHANGE_STREAM_CURSOR, ns: `${db}.$cmd.aggregate`, postBatchResumeToken: { _data: 'start' } }, ok: 1 };
      }
      return found(command, []);
    case 'getMore': {
      const nextBatch = events.splice(0);
      const token = nextBatch.at(-1)?._id ?? { _data: `idle-${Date.now()}` };
      return { cursor: { nextBatch, id: CHANGE_STREAM_CURSOR, ns: `${db}.$cmd.aggregate`, postBatchResumeToken: token }, ok: 1 };
    }
    case 'findAndModify':
      return { value: { _id: (body.query as Document)._id, value: 1 }, lastErrorObject: { n: 1, updatedExisting: true }, ok: 1 };
    case 'insert':
      return { n: (body.documents as unknown[]).length, ok: 1 };
    case 'update':
      return { n: 1, nModified: 1, ok: 1 };
    case 'delete':
      return { n: 0, ok: 1 };
    case 'count':
      return { n: 0, ok: 1 };
    default:
      return { ok: 1 };
  }
}

/** The command of one OP_QUERY or OP_MSG message, or undefined for any other kind. */
function commandOf(opCode: number, message: Buffer): Received | undefined {
  let body: Document;
  let db: string;
  if (opCode === OP_QUERY) {
    const nameEnd = message.indexOf(0, 20);
    db = message.toString('utf8', 20, nameEnd).split('.')[0]!;
    const at = nameEnd + 1 + 8;
    body = BSON.deserialize(message.subarray(at, at + message.readInt32LE(at)));
  } else if (opCode === OP_MSG) {
    const checksum = (message.readUInt32LE(16) & 1) === 1 ? 4 : 0;
    const sequences: Record<string, Document[]> = {};
    body = {};
    for (let at = 20; at < message.length - checksum; ) {
      const kind = message[at]!;
      if (kind === 0) {
        const size = message.readInt32LE(at + 1);
        body = BSON.deserialize(message.subarray(at + 1, at + 1 + size));
        at += 1 + size;
      } else {
        const size = message.readInt32LE(at + 1);
        const end = at + 1 + size;
        const nameEnd = message.indexOf(0, at + 5);
        const documents: Document[] = [];
        for (let doc = nameEnd + 1; doc < end; doc += message.readInt32LE(doc)) documents.push(BSON.deserialize(message.subarray(doc, doc + message.readInt32LE(doc))));
        sequences[message.toString('utf8', at + 5, nameEnd)] = documents;
        at = end;
      }
    }
    Object.assign(body, sequences);
    db = String(body.$db ?? 'admin');
  } else {
    return undefined;
  }
  return { name: Object.keys(body)[0]!, db, body };
}

function replyTo(opCode: number, requestId: number, document: Document, time: Timestamp): Buffer {
  const reply = { ...document, operationTime: time, $clusterTime: { clusterTime: time, signature: { hash: new Binary(Buffer.alloc(20)), keyId: Long.ZERO } } };
  const payload = Buffer.from(BSON.serialize(reply));
  const header = Buffer.alloc(16);
  let body: Buffer;
  if (opCode === OP_QUERY) {
    body = Buffer.alloc(20);
    body.writeInt32LE(1, 16);
    header.writeInt32LE(OP_REPLY, 12);
  } else {
    body = Buffer.from([0, 0, 0, 0, 0]);
    header.writeInt32LE(OP_MSG, 12);
  }
  header.writeInt32LE(16 + body.length + payload.length, 0);
  header.writeInt32LE(requestId, 8);
  return Buffer.concat([header, body, payload]);
}

/** Starts the stand-in on a free loopback port. */
export async function scriptedMongo(answer: Answer = () => undefined, membership: Membership = {}): Promise<ScriptedMongo> {
  const received: Received[] = [];
  const events: Document[] = [];
  const kept: Array<(reply: Document) => void> = [];
  const sockets = new Set<Socket>();
  let host = '';

  const respond = async (socket: Socket, opCode: number, message: Buffer) => {
    const command = commandOf(opCode, message);
    if (command === undefined) return;
    received.push(command);
    let reply = await answer(command);
    if (reply === NO_ANSWER) reply = await new Promise<Document>((resolve) => kept.push(resolve));
    // An idle change stream is answered after a pause, as a server's awaitData getMore is.
    if (reply === undefined && command.name === 'getMore' && events.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    const time = membership.operationTime?.() ?? clusterTime();
    if (!socket.destroyed) socket.write(replyTo(opCode, message.readInt32LE(4), reply ?? defaultAnswer(command, host, events, membership), time));
  };

  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
        const message = pending.subarray(0, pending.readInt32LE(0));
        pending = pending.subarray(message.length);
        void respond(socket, message.readInt32LE(12), message);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  host = `127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    uri: `mongodb://${host}/?replicaSet=rs0`,
    host,
    received,
    operations: () => received.filter((command) => !BOOKKEEPING.has(command.name)),
    sendChanges: (...sent) => events.push(...sent),
    close: () =>
      new Promise((resolve) => {
        for (const resume of kept.splice(0)) resume({ ok: 0, errmsg: 'closed', code: 91, codeName: 'ShutdownInProgress' });
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
