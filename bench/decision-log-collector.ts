/**
 * A decision-log collector for benchmarking `--decision-log http://...`: counts the lines posted to
 * it and answers 204, or (COLLECTOR_MODE=slow) holds every request without ever answering. Prints
 * the lines received each 5 s. The port is the first argument (default 4318).
 *
 *   node dist/bench/decision-log-collector.js 4318 &
 *   BENCH_PARTS=http BENCH_ONLY='check, attributes' BENCH_PROCESSES=1 \
 *     BENCH_COMPARE_ARGS='--decision-log http://127.0.0.1:4318/' npm run bench
 */
import { createServer } from 'node:http';

const port = Number(process.argv[2] ?? 4318);
const slow = process.env.COLLECTOR_MODE === 'slow';
let lines = 0;
createServer((request, response) => {
  request.on('data', (chunk: Buffer) => {
    for (const byte of chunk) if (byte === 0x0a) lines++;
  });
  request.on('end', () => {
    if (!slow) response.writeHead(204).end();
  });
}).listen(port, '127.0.0.1', () => console.log(`collector on 127.0.0.1:${port}${slow ? ', never answering' : ''}`));
setInterval(() => console.log(`${lines} lines received`), 5000).unref();
