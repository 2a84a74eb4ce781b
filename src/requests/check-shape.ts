import { withinLimits, type RequestLimits } from './request-limits.js';

/**
 * A hand-checked reading of checkRequestListSchema (src/schemas/check.ts) and of the request
 * limits, in one walk: true only when Ajv would accept the parsed list and no value in it breaks
 * the limits (requestLimitIssues would find nothing). It answers false whenever it is unsure; the
 * caller then validates with Ajv and the limits walk as before, so every 422 keeps their details.
 * A bulk's items are read once more after this (readCheckRequest); Ajv's generic code and the
 * separate limits walk cost more than this walk (test/requests/check-shape.test.ts compares it
 * with them on random bodies).
 */
export function isValidCheckList(list: unknown[], limits: RequestLimits): boolean {
  // The list is at depth 0, its items at depth 1.
  if (limits.maxJsonDepth <= 1) return false;
  for (let index = 0; index < list.length; index++) if (!isValidCheck(list[index], limits)) return false;
  return true;
}

type Limits = RequestLimits;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const isShortString = (value: unknown, limits: Limits) => typeof value === 'string' && value.length <= limits.maxStringLength;

const isNullableString = (value: unknown, limits: Limits) => value === null || isShortString(value, limits);

/**
 * A check request at depth 1 (a bulk's item): the fields of either form, each as the schema types
 * it. A `/check` body sits at depth 0, so this judges it one level more strictly than its limits
 * do, and answers false for a body nested to the very limit: Ajv then judges that one.
 */
export function isValidCheck(check: unknown, limits: Limits): boolean {
  if (!isObject(check)) return false;
  for (const key in check) {
    if (key.length > limits.maxStringLength) return false;
    const value = check[key];
    switch (key) {
      case 'principal':
      case 'resource':
        if (!isValidEntity(value, key, limits)) return false;
        break;
      case 'action':
        if (!isNullableString(value, limits) && !isValidAction(value, limits)) return false;
        break;
      case 'principal_uri':
      case 'resource_uri':
        if (!isNullableString(value, limits)) return false;
        break;
      case 'principal_attributes':
      case 'resource_attributes':
      case 'action_attributes':
        if (!isValidAttributes(value, 2, limits)) return false;
        break;
      case 'context':
        if (value !== null && (Array.isArray(value) || !isValidAttributes(value, 2, limits))) return false;
        break;
      default:
        // An unknown field: Ajv names it.
        return false;
    }
  }
  return true;
}

/** A nested side at depth 2: null, or an object whose uri, attributes and type are as the schema types them. */
function isValidEntity(entity: unknown, side: 'principal' | 'resource', limits: Limits): boolean {
  if (entity === null) return true;
  if (!isObject(entity) || limits.maxJsonDepth <= 2) return false;
  for (const key in entity) {
    if (key.length > limits.maxStringLength) return false;
    const value = entity[key];
    switch (key) {
      case 'uri':
        if (!isNullableString(value, limits)) return false;
        break;
      case 'attributes':
        if (!isValidAttributes(value, 3, limits)) return false;
        break;
      case 'type':
        if (value !== null && !(value === side && isShortString(value, limits))) return false;
        break;
      case 'token':
        // A token too long to verify is refused where tokens are verified: its check alone, never the body.
        if (side !== 'principal' || !isNullableString(value, limits)) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/** A nested action at depth 2: an object with a string `name` and, perhaps, attributes. */
function isValidAction(action: unknown, limits: Limits): boolean {
  if (!isObject(action) || limits.maxJsonDepth <= 2 || !isShortString(action.name, limits)) return false;
  for (const key in action) {
    if (key === 'attributes' ? !isValidAttributes(action[key], 3, limits) : key !== 'name') return false;
  }
  return true;
}

/** Supplied attributes at `depth`: null, an object of non-empty keys, or a list of `{key, value}` items. */
function isValidAttributes(attributes: unknown, depth: number, limits: Limits): boolean {
  if (attributes === null) return true;
  if (typeof attributes !== 'object' || depth >= limits.maxJsonDepth) return false;
  if (!Array.isArray(attributes)) {
    for (const key in attributes) {
      if (key.length === 0 || key.length > limits.maxStringLength) return false;
      if (!withinLimits((attributes as Record<string, unknown>)[key], depth + 1, limits)) return false;
    }
    return true;
  }
  for (let index = 0; index < attributes.length; index++) {
    const item: unknown = attributes[index];
    if (!isObject(item) || depth + 1 >= limits.maxJsonDepth) return false;
    if (typeof item.key !== 'string' || item.key.length === 0 || item.value === undefined) return false;
    for (const key in item) {
      if ((key !== 'key' && key !== 'value') || !withinLimits(item[key], depth + 2, limits)) return false;
    }
  }
  return true;
}
