import type { ValidationIssue } from '../schemas/errors.js';

/** Deepest nesting of lists and objects that a stored value (attribute or condition value) may have. */
export const MAX_STORED_VALUE_DEPTH = 64;

/**
 * Why a value cannot be stored as sent, if it cannot: nested too deep to serialize safely, or
 * holding a number too large for a double (JSON.parse makes `1e400` Infinity, which would be
 * stored as `null` and silently change a condition's meaning). Walks without recursion.
 */
export function storableValueIssues(value: unknown, loc: (string | number)[]): ValidationIssue[] {
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length > 0) {
    const [item, depth] = pending.pop()!;
    if (typeof item === 'number' && !Number.isFinite(item)) {
      return [{ loc, msg: 'holds a number too large to represent (beyond ±1.8e308)', type: 'value_error' }];
    }
    if (item === null || typeof item !== 'object') continue;
    if (depth >= MAX_STORED_VALUE_DEPTH) {
      return [{ loc, msg: `is nested more than ${MAX_STORED_VALUE_DEPTH} levels deep`, type: 'value_error' }];
    }
    for (const child of Object.values(item)) pending.push([child, depth + 1]);
  }
  return [];
}
