import type { Config } from '../config/config.js';
import type { Location, ValidationIssue } from '../schemas/errors.js';

export type RequestLimits = Pick<Config, 'maxJsonDepth' | 'maxStringLength'>;


/** Where a value breaks a limit, and which: the path is built backwards, only once a breach is found. */
interface Breach {
  kind: 'too deep' | 'too long';
  reversedPath: Location;
}

/**
 * The first place, in document order, where a parsed value nests lists or objects deeper than
 * `maxJsonDepth` or holds a string or key longer than `maxStringLength`. A value within the limits
 * (the common case) costs no allocation; recursion is bounded by maxJsonDepth.
 */
function firstBreach(value: unknown, depth: number, limits: RequestLimits): Breach | undefined {
  if (typeof value === 'string') return value.length > limits.maxStringLength ? { kind: 'too long', reversedPath: [] } : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  if (depth >= limits.maxJsonDepth) return { kind: 'too deep', reversedPath: [] };
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const breach = firstBreach(value[index], depth + 1, limits);
      if (breach !== undefined) {
        breach.reversedPath.push(index);
        return breach;
      }
    }
    return undefined;
  }
  // A parsed JSON object inherits no enumerable keys: for-in visits exactly its own.
  for (const key in value) {
    if (key.length > limits.maxStringLength) return { kind: 'too long', reversedPath: [key] };
    const breach = firstBreach((value as Record<string, unknown>)[key], depth + 1, limits);
    if (breach !== undefined) {
      breach.reversedPath.push(key);
      return breach;
    }
  }
  return undefined;
}

/** Whether a parsed value found at `depth` in a body keeps within the limits (see firstBreach). */
export const withinLimits = (value: unknown, depth: number, limits: RequestLimits): boolean => firstBreach(value, depth, limits) === undefined;

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
  if (withinLimitsByLength(textLength, limits)) return [];
  const breach = firstBreach(body, 0, limits);
  if (breach === undefined) return [];
  const loc = [...at, ...breach.reversedPath.reverse()];
  if (breach.kind === 'too long') return [{ loc, msg: `String should have at most ${limits.maxStringLength} characters`, type: 'string_too_long' }];
  return [{ loc, msg: `is nested more than ${limits.maxJsonDepth} levels deep`, type: 'value_error' }];
}
