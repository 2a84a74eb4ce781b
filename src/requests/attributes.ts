import type { SuppliedAttributes } from '../schemas/check.js';
import type { Location, ValidationIssue } from '../schemas/errors.js';


/** A key given twice in a list of attributes: ambiguous, so reported rather than silently resolved. */
export class DuplicateAttribute {
  constructor(
    readonly index: number,
    readonly key: string,
  ) {}

  /** The issue, located under `at` (where the attributes were supplied). */
  issueAt(at: Location): ValidationIssue {
    return { loc: [...at, this.index, 'key'], msg: `attribute '${this.key}' is given more than once`, type: 'value_error' };
  }
}

/** Supplied attributes (an object, or a list of `{key, value}` items) as a Map. */
export function toAttributeMap(supplied: SuppliedAttributes | null | undefined): Map<string, unknown> | DuplicateAttribute {
  const attributes = new Map<string, unknown>();
  if (supplied === null || supplied === undefined) return attributes;
  if (!Array.isArray(supplied)) {
    // A parsed JSON object inherits no enumerable keys, so for-in visits its own keys (`__proto__` too).
    for (const key in supplied) attributes.set(key, (supplied as Record<string, unknown>)[key]);
    return attributes;
  }
  for (let index = 0; index < supplied.length; index++) {
    const { key, value } = supplied[index]!;
    if (attributes.has(key)) return new DuplicateAttribute(index, key);
    attributes.set(key, value);
  }
  return attributes;
}
