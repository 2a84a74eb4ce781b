import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface LoadResult {
  /** Requests answered in the run. */
  requests: number;
  requestsPerSecond: number;
  p99Millis: number;
  /** Non-2xx answers and socket errors. */
  errors: number;
}

/** A Lua script for wrk that POSTs the given JSON bodies in turn and prints one result line. */
function script(bodies: readonly string[]): string {
  const table = bodies.map((body) => `[==[${body}]==]`).join(',\n');
  return `local bodies = {\n${table}\n}
local next_body = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  next_body = next_body % #bodies + 1
  return wrk.format(nil, nil, nil, bodies[next_body])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %.0f %d\\n", summary.requests, summary.duration, latency:percentile(99),
    e.status + e.connect + e.read + e.write + e.timeout))
end
`;
}

/** Loads `url` with Debian's wrk (C, so the generator is not the bottleneck) and reads its result line. */
export async function loadWithWrk(url: string, bodies: readonly string[], seconds: number, connections: number): Promise<LoadResult> {
  const scriptFile = join(mkdtempSync(join(tmpdir(), 'verdict-wrk-')), 'bodies.lua');
  writeFileSync(scriptFile, script(bodies));
  const { stdout } = await run('wrk', ['-t', '1', '-c', String(connections), '-d', `${seconds}s`, '-s', scriptFile, url], {
    maxBuffer: 16 * 1024 * 1024,
  });
  const line = stdout.split('\n').find((text) => text.startsWith('RESULT '));
  if (line === undefined) throw new Error(`wrk printed no result:\n${stdout}`);
  const [requests, durationMicros, p99Micros, errors] = line.split(' ').slice(1).map(Number) as [number, number, number, number];
  return { requests, requestsPerSecond: requests / (durationMicros / 1e6), p99Millis: p99Micros / 1000, errors };
}

export async function wrkAvailable(): Promise<boolean> {
  try {
    await run('wrk', ['--version']);
    return true;
  } catch (error) {
    // wrk --version exits 1 after printing its banner
    return (error as { stdout?: string }).stdout?.includes('wrk') ?? false;
  }
}
