import type { DecisionRequest, ResolvedEntity } from '../engine/index.js';
import { jsonEqual } from '../engine/json-equal.js';
import type { CheckInput, EntityInput } from '../requests/check-request.js';

type Attributes = ReadonlyMap<string, unknown> | undefined;

/**
 * Registered attributes of a uri, or undefined when nothing is registered under it. Answers
 * synchronously when it can (a cache hit), so the common check never waits on a promise.
 */
export type RegisteredAttributes = (uri: string) => Attributes | Promise<Attributes>;

/** A supplied attribute that contradicts the registry: the check cannot be decided as asked. */
export class AttributeConflict extends Error {}

/**
 * Registered attributes of the uri, plus supplied ones. A supplied key that is registered with a
 * different value is a conflict; supplied attributes never override registered ones.
 */
function merge(input: EntityInput, stored: Attributes): ResolvedEntity {
  if (stored === undefined || stored.size === 0) return input;
  if (input.attributes.size === 0) return { uri: input.uri, attributes: stored };
  const merged = new Map(stored);
  for (const [key, value] of input.attributes) {
    if (merged.has(key) && !jsonEqual(merged.get(key), value)) {
      throw new AttributeConflict(`For entity '${input.uri}', attribute '${key}' has more than one value`);
    }
    merged.set(key, value);
  }
  return { uri: input.uri, attributes: merged };
}

const isPromise = <T>(value: T | Promise<T>): value is Promise<T> => value instanceof Promise;

/** The decision request for a check: synchronous unless a registry lookup has to wait on the store. */
export function resolveCheck(input: CheckInput, registered: RegisteredAttributes): DecisionRequest | Promise<DecisionRequest> {
  const principal = input.principal.uri === undefined ? undefined : registered(input.principal.uri);
  const resource = input.resource.uri === undefined ? undefined : registered(input.resource.uri);
  if (isPromise(principal) || isPromise(resource)) {
    return Promise.all([principal, resource]).then(([principalAttributes, resourceAttributes]) =>
      decisionRequest(input, principalAttributes, resourceAttributes),
    );
  }
  return decisionRequest(input, principal, resource);
}

function decisionRequest(input: CheckInput, principalAttributes: Attributes, resourceAttributes: Attributes): DecisionRequest {
  const principal = merge(input.principal, principalAttributes);
  const resource = merge(input.resource, resourceAttributes);
  // Nothing registered to add (the common check): the check as read is already the request, and no copy is made.
  if (principal === input.principal && resource === input.resource) return input;
  const request: DecisionRequest = { principal, resource, action: input.action };
  if (input.actionAttributes !== undefined) request.actionAttributes = input.actionAttributes;
  if (input.context !== undefined) request.context = input.context;
  return request;
}
