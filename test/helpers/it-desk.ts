import type { Test } from 'tap';
import { startServer, type TestServer } from './server.js';

// The check tests' world: an IT desk policy, two users and two resources registered, and the
// request-and-assert shapes those tests repeat.

export const NO_POLICIES = 'Action denied by default because there are no policies';
export const DEFAULT_DENY = 'Action denied by default effect';
export const conflict = (uri: string, key: string) => `For entity '${uri}', attribute '${key}' has more than one value`;

export const eq = (key: string, value: unknown) => ({ path: `attributes.${key}`, operator: '==', value });

/** IT staff administer laptops; admins in IT with role admin may `wipe` laptops. */
export const IT_DESK = {
  name: 'IT desk',
  rules: [
    {
      name: 'IT admins',
      effect: 'allow',
      principal_conditions: [eq('department', 'it')],
      resource_conditions: [eq('kind', 'laptop')],
      actions: ['administer'],
    },
    {
      name: 'wipers',
      effect: 'allow',
      principal_conditions: [eq('department', 'it'), eq('role', 'admin')],
      resource_conditions: [eq('kind', 'laptop')],
      actions: ['wipe'],
    },
  ],
};
export const ALLOWED_ADMIN = { allowed: true, reason: 'Rule it-admins allowed the action in policy it-desk' };
export const ALLOWED_WIPE = { allowed: true, reason: 'Rule wipers allowed the action in policy it-desk' };
export const DENIED = { allowed: false, reason: DEFAULT_DENY };

export async function createPolicy(server: TestServer, policy: unknown) {
  const response = await server.call('POST', '/admin/policies', policy);
  if (response.status !== 200) throw new Error(`policy not created: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

export async function register(server: TestServer, uri: string, type: string, attributes: unknown) {
  const response = await server.call('POST', '/admin/fetchers/registry/entities', { uri, type, attributes });
  if (response.status !== 200) throw new Error(`entity not registered: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

/** A server (started with `overrides`) with IT_DESK, alice (it) and bob (sales), laptop-1 (laptop) and desk-1 (desk). */
export async function itServer(t: Test, overrides = {}): Promise<TestServer> {
  const server = await startServer(overrides);
  t.teardown(server.close);
  await createPolicy(server, IT_DESK);
  await register(server, 'user:alice', 'principal', { department: 'it' });
  await register(server, 'user:bob', 'principal', { department: 'sales' });
  await register(server, 'laptop-1', 'resource', { kind: 'laptop' });
  await register(server, 'desk-1', 'resource', { kind: 'desk' });
  return server;
}

/** A server with no policy and nothing registered. */
export async function emptyServer(t: Test, overrides = {}): Promise<TestServer> {
  const server = await startServer(overrides);
  t.teardown(server.close);
  return server;
}

/** Asserts that POSTing `body` to `path` answers `status` with exactly `answer`; the message defaults to the body sent. */
export async function answers(t: Test, server: TestServer, body: unknown, status: number, answer: unknown, path = '/check', message = JSON.stringify(body)): Promise<void> {
  const response = await server.call('POST', path, body);
  t.same({ status: response.status, body: response.body }, { status, body: answer }, message);
}

/** Asserts that /check (or `path`) decides `body` as `decision`. */
export const decides = (t: Test, server: TestServer, body: unknown, decision: unknown, path = '/check', message?: string) =>
  answers(t, server, body, 200, decision, path, message);

/** Asserts that each of `cases` ([check, decision, what it shows]) is decided so by /check, and all of them alike as one /check/bulk; `label` leads each message. */
export async function decidesEachAndInBulk(t: Test, server: TestServer, cases: readonly (readonly [unknown, unknown, string])[], label: string): Promise<void> {
  for (const [check, decision, message] of cases) await decides(t, server, check, decision, '/check', `${label}: ${message}`);
  await decides(t, server, cases.map(([check]) => check), cases.map(([, decision]) => decision), '/check/bulk', `${label}: the same as one bulk`);
}

/** Asserts that `body` is refused with 400 and this detail. */
export const refuses = (t: Test, server: TestServer, body: unknown, detail: string, path = '/check', message?: string) =>
  answers(t, server, body, 400, { detail }, path, message);

/** Asserts that `body` is refused with 422, its issues located at `locations`, in order (each issue with a message and a type). */
export async function refusesAt(t: Test, server: TestServer, body: unknown, locations: unknown[][], path = '/check', message = JSON.stringify(body)): Promise<void> {
  const response = await server.call('POST', path, body);
  const issues = Array.isArray(response.body?.detail) ? (response.body.detail as { loc: unknown[]; msg: unknown; type: unknown }[]) : [];
  t.same(
    { status: response.status, locations: issues.map((issue) => issue.loc), described: issues.every((issue) => typeof issue.msg === 'string' && typeof issue.type === 'string') },
    { status: 422, locations, described: true },
    message,
  );
}
