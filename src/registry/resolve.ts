import type { DecisionRequest, ResolvedEntity } from '../engine/index.js';
import { jsonEqual } from '../engine/json-equal.js';
import type { CheckInput, EntityInput } from './check-request.js';

/** Registered attributes of a uri, or undefined when nothing is registered under it. */
export type RegisteredAttributes = (uri: string) => Promise<ReadonlyMap<string, unknown> | undefined>;

/** A supplied attribute that contradicts the registry: the check cannot be decided as asked. */
export class AttributeConflict extends Error {}

/**
 * Registered attributes of the uri, plus supplied ones. A supplied key that is registered with a
 * different value is a conflict; supplied attributes never override registered ones.
 */
async function resolveEntity(input: EntityInput, registered: RegisteredAttributes): Promise<ResolvedEntity> {
  if (input.uri === undefined) return input;
  const stored = await registered(input.uri);
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

export async function resolveCheck(input: CheckInput, registered: RegisteredAttributes): Promise<DecisionRequest> {
  const [principal, resource] = await Promise.all([
    resolveEntity(input.principal, registered),
    resolveEntity(input.resource, registered),
  ]);
  return { principal, resource, action: input.action };
}
