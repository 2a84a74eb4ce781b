import type { SuppliedAttributes } from '../schemas/check.js';
import type { ValidationIssue } from '../schemas/errors.js';

type Location = (string | number)[];

/**
 * Supplied attributes (an object, or a list of `{key, value}` items) as a Map. A key given twice in
 * a list is ambiguous and reported as an issue rather than silently resolved.
 */
export function toAttributeMap(
  supplied: SuppliedAttributes | null | undefined,
  at: Location,
): { attributes: Map<string, unknown> } | { issue: ValidationIssue } {
  const attributes = new Map<string, unknown>();
  if (supplied === null || supplied === undefined) return { attributes };
  if (!Array.isArray(supplied)) {
    for (const key of Object.keys(supplied)) attributes.set(key, (supplied as Record<string, unknown>)[key]);
    return { attributes };
  }
  for (let index = 0; index < supplied.length; index++) {
    const { key, value } = supplied[index]!;
    if (attributes.has(key)) {
      return { issue: { loc: [...at, index, 'key'], msg: `attribute '${key}' is given more than once`, type: 'value_error' } };
    }
    attributes.set(key, value);
  }
  return { attributes };
}
