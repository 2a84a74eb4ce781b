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

/** One request wrk sends: a method, a path (with its query), headers, and a body. */
export interface WrkRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

const luaString = (text: string) => `[==[${text}]==]`;

/** A Lua script for wrk that sends the given requests in turn and prints one result line. */
function script(requests: readonly WrkRequest[]): string {
  const table = requests
    .map(({ method, path, headers, body }) => {
      const headerTable = Object.entries(headers).map(([name, value]) => `[ ${luaString(name)} ] = ${luaString(value)}`).join(', ');
      return `{ ${luaString(method)}, ${luaString(path)}, { ${headerTable} }, ${body === undefined ? 'nil' : luaString(body)} }`;
    })
    .join(',\n');
  return `local requests = {\n${table}\n}
local next_request = 0
request = function()
  next_request = next_request % #requests + 1
  local r = requests[next_request]
  return wrk.format(r[1], r[2], r[3], r[4])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %.0f %d\\n", summary.requests, summary.duration, latency:percentile(99),
    e.status + e.connect + e.read + e.write + e.timeout))
end
`;
}

/** Loads `url` with Debian's wrk (C, so the generator is not the bottleneck), POSTing the JSON bodies in turn, and reads its result line. */
export function loadWithWrk(url: string, bodies: readonly string[], seconds: number, connections: number): Promise<LoadResult> {
  const { origin, pathname, search } = new URL(url);
  return loadRequestsWithWrk(
    origin,
    bodies.map((body) => ({ method: 'POST', path: pathname + search, headers: { 'Content-Type': 'application/json' }, body })),
    seconds,
    connections,
  );
}

/** Loads the server at `origin` with `requests`, in turn, with wrk, and reads its result line. */
export async function loadRequestsWithWrk(origin: string, requests: readonly WrkRequest[], seconds: number, connections: number): Promise<LoadResult> {
  const scriptFile = join(mkdtempSync(join(tmpdir(), 'verdict-wrk-')), 'requests.lua');
  writeFileSync(scriptFile, script(requests));
  const { stdout } = await run('wrk', ['-t', '1', '-c', String(connections), '-d', `${seconds}s`, '-s', scriptFile, origin], {
    maxBuffer: 16 * 1024 * 1024,
  });
  const line = stdout.split('\n').find((text) => text.startsWith('RESULT '));
  if (line === undefined) throw new Error(`wrk printed no result:\n${stdout}`);
  const [requestCount, durationMicros, p99Micros, errors] = line.split(' ').slice(1).map(Number) as [number, number, number, number];
  return { requests: requestCount, requestsPerSecond: requestCount / (durationMicros / 1e6), p99Millis: p99Micros / 1000, errors };
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
