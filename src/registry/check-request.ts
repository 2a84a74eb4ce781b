import type { CheckRequest, EntityReference } from '../schemas/check.js';
import type { ValidationIssue } from '../schemas/errors.js';
import { toAttributeMap } from './attributes.js';

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
  const sideAt = [...at, side];
  const converted = toAttributeMap(reference.attributes, [...sideAt, 'attributes']);
  if ('issue' in converted) return converted.issue;
  const uri = reference.uri === null || reference.uri === '' ? undefined : reference.uri;
  if (uri === undefined && converted.attributes.size === 0) {
    return { loc: sideAt, msg: "Either 'uri' or non-empty 'attributes' must be provided", type: 'value_error' };
  }
  return { uri, attributes: converted.attributes };
}

/**
 * Reads a schema-valid check request (either form) into what resolution needs, or the issues that
 * make it unusable. `at` locates the request in the body (`['body']`, or `['body', i]` in a bulk).
 */
export function readCheckRequest(request: CheckRequest, at: (string | number)[]): CheckInput | ValidationIssue[] {
  const principal = entityInput(request, 'principal', at);
  const resource = entityInput(request, 'resource', at);
  const issues = [principal, resource].filter((input): input is ValidationIssue => 'loc' in input);
  if (issues.length > 0) return issues;
  return {
    principal: principal as EntityInput,
    resource: resource as EntityInput,
    action: request.action ?? DEFAULT_ACTION,
  };
}
