import { request } from 'undici';
import type { TestServer } from '../helpers/server.js';

/** What `/check` answers one check sent alone: the answer the client must give its caller, byte for byte. */
export async function answeredAlone(server: TestServer, check: unknown): Promise<{ status: number; body: string }> {
  const response = await request(`${server.url}/check`, { method: 'POST', body: JSON.stringify(check), headers: { 'content-type': 'application/json' } });
  return { status: response.statusCode, body: await response.body.text() };
}

/** Requests the server counted on `route` (any method and status), from its metrics. */
export async function requestsOn(server: TestServer, route: string): Promise<number> {
  const text = (await server.call('GET', '/metrics')).body as string;
  let count = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('verdict_http_request_duration_seconds_count{') && line.includes(`route="${route}"`)) count += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return count;
}

/** A policy of one rule that allows `action` to principals of `role`, and denies by default. */
export const roleRule = (name: string, role: string, action = 'read') => ({
  name,
  rules: [{ name: `${role}-${action}`, effect: 'allow', principal_conditions: [{ path: 'attributes.role', operator: '==', value: role }], actions: [action] }],
});
