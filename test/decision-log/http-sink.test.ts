import t from 'tap';
import { createServer, type IncomingMessage } from 'node:http';
import { HttpSink } from '../../src/decision-log/http-sink.js';
import { CLOSE_WAIT_MILLIS } from '../../src/decision-log/entries.js';
import { until } from '../helpers/until.js';

// The decision log's HTTP sink against a real collector that never answers: closing drops what it
// holds once its wait is over, and abandons the request in flight then, so that a process stops when
// it says it will, not when the collector's request would have timed out.

t.test('on close, past its wait, the sink drops what it holds and abandons the request the collector holds', async (t) => {
  const held: IncomingMessage[] = [];
  let abandoned = 0;
  const collector = createServer((request) => {
    held.push(request);
    request.socket.on('close', () => abandoned++);
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    collector.closeAllConnections();
    collector.close();
  });
  const report = { delivered: 0, dropped: 0 };
  // Every wait of the sink (its back-off, and its wait on close) is over at once.
  const sink = new HttpSink(`http://127.0.0.1:${(collector.address() as { port: number }).port}/ingest`, { delivered: (lines) => (report.delivered += lines), dropped: (lines) => (report.dropped += lines) }, CLOSE_WAIT_MILLIS, () => Promise.resolve());
  sink.add('{"a":1}\n{"a":2}\n', 2);
  await until(() => held.length === 1, 'the collector to hold the batch');
  await sink.close();
  await until(() => abandoned === 1, 'the held request to be abandoned', 3000);
  t.same(report, { delivered: 0, dropped: 2 }, 'its lines counted as dropped');
});
