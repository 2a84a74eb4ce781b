import type { Config } from './config.js';
import type { ValidationIssue } from './schemas/errors.js';

export type RequestLimits = Pick<Config, 'maxJsonDepth' | 'maxStringLength'>;

type Location = (string | number)[];

/**
 * The first place where a parsed body breaks a limit: a list or object nested deeper than
 * `maxJsonDepth`, or a string or key longer than `maxStringLength`, with its location.
 */
function firstViolation(body: unknown, limits: RequestLimits, at: Location): ValidationIssue | undefined {
  const values: unknown[] = [body];
  const depths: number[] = [0];
  const locations: Location[] = [at];
  const tooLong = (loc: Location) => ({ loc, msg: `String should have at most ${limits.maxStringLength} characters`, type: 'string_too_long' });
  while (values.length > 0) {
    const value = values.pop();
    const depth = depths.pop()!;
    const loc = locations.pop()!;
    if (typeof value === 'string') {
      if (value.length > limits.maxStringLength) return tooLong(loc);
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= limits.maxJsonDepth) return { loc, msg: `is nested more than ${limits.maxJsonDepth} levels deep`, type: 'value_error' };
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) {
        values.push(value[index]);
        depths.push(depth + 1);
        locations.push([...loc, index]);
      }
      continue;
    }
    for (const key of Object.keys(value)) {
      if (key.length > limits.maxStringLength) return tooLong([...loc, key]);
      values.push((value as Record<string, unknown>)[key]);
      depths.push(depth + 1);
      locations.push([...loc, key]);
    }
  }
  return undefined;
}

/**
 * Whether a parsed value keeps within the limits: the common case, so it allocates nothing and only
 * answers yes or no (firstViolation then says where). Recursion is bounded by maxJsonDepth.
 */
function withinLimits(value: unknown, depth: number, limits: RequestLimits): boolean {
  if (typeof value === 'string') return value.length <= limits.maxStringLength;
  if (value === null || typeof value !== 'object') return true;
  if (depth >= limits.maxJsonDepth) return false;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) if (!withinLimits(value[index], depth + 1, limits)) return false;
    return true;
  }
  // A parsed JSON object inherits no enumerable keys: for-in visits exactly its own.
  for (const key in value) {
    if (key.length > limits.maxStringLength || !withinLimits((value as Record<string, unknown>)[key], depth + 1, limits)) return false;
  }
  return true;
}

/**
 * Whether JSON text this short cannot break the limits: a string is never longer than the text,
 * and each level of nesting takes two characters of it. Most single checks end here.
 */
const withinLimitsByLength = (textLength: number, limits: RequestLimits) =>
  textLength <= limits.maxStringLength && textLength < 2 * (limits.maxJsonDepth + 1);

/**
 * The issue (at most one) that makes a parsed request body exceed the limits; `at` locates the body.
 * `textLength`, the length of the JSON text it was parsed from, lets short bodies skip the walk.
 */
export function requestLimitIssues(body: unknown, limits: RequestLimits, textLength: number, at: Location = ['body']): ValidationIssue[] {
  if (withinLimitsByLength(textLength, limits) || withinLimits(body, 0, limits)) return [];
  return [firstViolation(body, limits, at)!];
}
