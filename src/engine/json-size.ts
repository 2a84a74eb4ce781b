import type { DecisionRequest } from './entity.js';

/** What an estimate may still visit: values, and bytes before it gives up. */
export interface SizeBudget {
  visits: number;
  bytes: number;
}

/**
 * About how many bytes `value` holds as JSON text (strings by their length, other scalars 8), counting
 * against `budget`; Infinity once it runs out of visits or bytes: the walk stops there, so that a value
 * of any size costs at most the budget to measure.
 */
export function jsonSizeWithin(value: unknown, budget: SizeBudget): number {
  if (--budget.visits < 0) return Infinity;
  if (typeof value === 'object' && value !== null) {
    budget.bytes -= 2;
    let size = 2;
    for (const item of Array.isArray(value) ? value : Object.entries(value)) {
      const itemSize = jsonSizeWithin(item, budget);
      if (itemSize === Infinity) return Infinity;
      size += itemSize;
    }
    return budget.bytes < 0 ? Infinity : size;
  }
  const size = typeof value === 'string' ? value.length + 2 : 8;
  budget.bytes -= size;
  return budget.bytes < 0 ? Infinity : size;
}

/** About how many bytes a map of attributes holds as JSON (keys and values), within `budget`; Infinity past it. */
export function attributesSizeWithin(attributes: ReadonlyMap<string, unknown>, budget: SizeBudget): number {
  let size = 2;
  for (const [key, value] of attributes) {
    budget.bytes -= key.length + 3;
    const valueSize = jsonSizeWithin(value, budget);
    if (valueSize === Infinity) return Infinity;
    size += key.length + 3 + valueSize;
  }
  return budget.bytes < 0 ? Infinity : size;
}

/** The largest check a ring of checks keeps (the recent checks, the live view's recent denials), by the estimate of checkSize. */
export const MAX_KEPT_CHECK_BYTES = 16 * 1024;
/** Values an estimate of a kept check visits at most: a check with more is taken for too large. */
const MAX_VISITED = 256;

/** About how many bytes a check's uris and attributes hold; Infinity past MAX_VISITED values or MAX_KEPT_CHECK_BYTES. */
export const checkSize = (request: DecisionRequest): number => requestSizeWithin(request, { visits: MAX_VISITED, bytes: MAX_KEPT_CHECK_BYTES });

/** About how many bytes a check's uris, action and attributes hold as JSON, within `budget`; Infinity past it. */
export function requestSizeWithin(request: DecisionRequest, budget: SizeBudget): number {
  let size = (request.principal.uri?.length ?? 0) + (request.resource.uri?.length ?? 0) + request.action.length;
  budget.bytes -= size;
  for (const attributes of [request.principal.attributes, request.resource.attributes, request.actionAttributes, request.context]) {
    if (attributes !== undefined) size += attributesSizeWithin(attributes, budget);
  }
  return budget.bytes < 0 ? Infinity : size;
}
