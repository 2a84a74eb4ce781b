// The floor under each flavour of external authorization: a server that does nothing but answer one
// unary request with a fixed message, over Node's HTTP/1.1, over Node's HTTP/2 framed as gRPC by hand,
// and over @grpc/grpc-js (what Verdict's gRPC door is built on). Run as a child process by the mesh
// benchmark (`node dist/bench/bare-transports.js <http1|http2|grpc-js>`); prints its port once listening.
import { createServer } from 'node:http';
import { createServer as createHttp2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';

export const BARE_TRANSPORTS = ['http1', 'http2', 'grpc-js'] as const;
export type BareTransport = (typeof BARE_TRANSPORTS)[number];

/** The one method every bare server answers, its messages passed as bytes (no protobuf). */
export const BARE_METHOD = {
  path: '/bench.Bare/Check',
  requestStream: false,
  responseStream: false,
  requestSerialize: (bytes: Buffer) => bytes,
  requestDeserialize: (bytes: Buffer) => bytes,
  responseSerialize: (bytes: Buffer) => bytes,
  responseDeserialize: (bytes: Buffer) => bytes,
} as const;

const ANSWER = Buffer.alloc(40, 1);

/** A gRPC message as it goes on the wire: not compressed, its length, its bytes. */
function grpcFrame(message: Buffer): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  return frame;
}

function listening(port: number): void {
  console.log(port);
}

function serve(transport: BareTransport): void {
  if (transport === 'http1') {
    const server = createServer((request, response) => {
      request.resume();
      request.on('end', () => response.writeHead(200, { 'content-type': 'application/json', 'content-length': ANSWER.length }).end(ANSWER));
    });
    server.listen(0, '127.0.0.1', () => listening((server.address() as AddressInfo).port));
  } else if (transport === 'http2') {
    const server = createHttp2Server();
    const framed = grpcFrame(ANSWER);
    server.on('stream', (stream) => {
      stream.resume();
      stream.on('end', () => {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(framed);
      });
    });
    server.listen(0, '127.0.0.1', () => listening((server.address() as AddressInfo).port));
  } else {
    const server = new grpc.Server({ 'grpc.enable_channelz': 0 });
    server.addService({ Check: BARE_METHOD }, { Check: (_call: unknown, answer: (error: null, value: Buffer) => void) => answer(null, ANSWER) });
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) => {
      if (error !== null) throw error;
      listening(port);
    });
  }
}

const asked = process.argv[2];
if (asked !== undefined) {
  if (!(BARE_TRANSPORTS as readonly string[]).includes(asked)) throw new Error(`bare-transports: ${asked} is none of ${BARE_TRANSPORTS.join(', ')}`);
  serve(asked as BareTransport);
}
