import type { CheckRequest, EntityReference } from '../schemas/check.js';
import type { ValidationIssue } from '../schemas/errors.js';
import { DuplicateAttribute, toAttributeMap } from './attributes.js';

/** One side of a check as the caller described it, before registered attributes are merged in. */
export interface EntityInput {
  uri: string | undefined;
  attributes: Map<string, unknown>;
}

export interface CheckInput {
  principal: EntityInput;
  resource: EntityInput;
  action: string;
}

export const DEFAULT_ACTION = 'access';

type Side = 'principal' | 'resource';

/** The nested object wins over the flat fields for its side. */
function referenceFor(request: CheckRequest, side: Side): NonNullable<EntityReference> {
  const nested = request[side];
  if (nested !== undefined && nested !== null) return nested;
  return { uri: request[`${side}_uri`], attributes: request[`${side}_attributes`] };
}

function entityInput(request: CheckRequest, side: Side, at: (string | number)[]): EntityInput | ValidationIssue {
  const reference = referenceFor(request, side);
  const attributes = toAttributeMap(reference.attributes);
  if (attributes instanceof DuplicateAttribute) return attributes.issueAt([...at, side, 'attributes']);
  const uri = reference.uri === null || reference.uri === '' ? undefined : reference.uri;
  if (uri === undefined && attributes.size === 0) {
    return { loc: [...at, side], msg: "Either 'uri' or non-empty 'attributes' must be provided", type: 'value_error' };
  }
  return { uri, attributes };
}

const isIssue = (input: EntityInput | ValidationIssue): input is ValidationIssue => 'loc' in input;

/**
 * Reads a schema-valid check request (either form) into what resolution needs, or the issues that
 * make it unusable. `at` locates the request in the body (`['body']`, or `['body', i]` in a bulk).
 */
export function readCheckRequest(request: CheckRequest, at: (string | number)[]): CheckInput | ValidationIssue[] {
  const principal = entityInput(request, 'principal', at);
  const resource = entityInput(request, 'resource', at);
  if (isIssue(principal) || isIssue(resource)) return [principal, resource].filter(isIssue);
  return { principal, resource, action: request.action ?? DEFAULT_ACTION };
}
