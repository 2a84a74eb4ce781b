/** The admin and check API, from the page that Verdict serves (same origin). */
import type { ValidationIssue } from './issues.js';
import { isValidationIssueList, placeIssues } from './issues.js';

const KEY_STORAGE = 'verdict.adminKey';
const KEY_HEADER = 'WAY-API-KEY';

/** The admin key lives in sessionStorage: this tab only, gone when it closes. */
export const adminKey = {
  get: (): string | null => sessionStorage.getItem(KEY_STORAGE),
  set: (key: string) => sessionStorage.setItem(KEY_STORAGE, key),
  forget: () => sessionStorage.removeItem(KEY_STORAGE),
};

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
  ) {
    super(typeof detail === 'string' ? detail : `The server answered ${status}`);
  }

  /** The 422 items naming each offending field, when there are any. */
  get issues(): ValidationIssue[] {
    return isValidationIssueList(this.detail) ? this.detail : [];
  }
}

/** Called when the server refuses the admin key, so the app can ask for it again. */
let onUnauthorized: (error: ApiError) => void = () => {};
export function whenUnauthorized(handler: (error: ApiError) => void): void {
  onUnauthorized = handler;
}

export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  return (await callWithWarnings<T>(method, path, body)).answer;
}

/**
 * As `call`, with the warnings a write's answer carries (its `Verdict-Warnings` header: what it
 * contradicts of the attribute schemas, taken under `--schema-enforcement warn`).
 */
export async function callWithWarnings<T>(method: string, path: string, body?: unknown): Promise<{ answer: T; warnings: string[] }> {
  const headers: Record<string, string> = {};
  const key = adminKey.get();
  if (key !== null) headers[KEY_HEADER] = key;
  // Every write says it is JSON, a body-less one too: with admin authentication off, the server
  // refuses a write that does not, so that another site's page cannot send one.
  if (method !== 'GET') headers['content-type'] = 'application/json';
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  if (response.ok) {
    const warned = response.headers.get('verdict-warnings');
    return { answer: parsed as T, warnings: warned === null ? [] : (JSON.parse(warned) as string[]) };
  }
  const detail = typeof parsed === 'object' && parsed !== null && 'detail' in parsed ? parsed.detail : parsed;
  const error = new ApiError(response.status, detail);
  // A refused bearer token (a check's principal) is the check's own failure, not the admin key's.
  if (response.status === 401 && response.headers.get('www-authenticate') === null) onUnauthorized(error);
  throw error;
}

export const policyPath = (name: string) => `/admin/policies/${encodeURIComponent(name)}`;
export const ENTITIES = '/admin/fetchers/registry/entities';
export const entityPath = (uri: string) => `${ENTITIES}/${encodeURIComponent(uri)}`;

/**
 * Where to show a failed call: validation issues by the fields they concern (`byField`, the rest as
 * alerts); any other failure as one alert, with no field messages (`byField` undefined).
 */
export function failureReport(error: unknown, fields: string[]): { byField?: Record<string, string>; alerts: string[] } {
  if (error instanceof ApiError && error.issues.length > 0) {
    const placed = placeIssues(error.issues, fields);
    return { byField: placed.byField, alerts: placed.unplaced };
  }
  return { alerts: [(error as Error).message] };
}
