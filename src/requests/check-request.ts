import type { ActionAndContext, CheckRequest } from '../schemas/check.js';
import type { ValidationIssue } from '../schemas/errors.js';
import { DuplicateAttribute, toAttributeMap } from './attributes.js';
import { jsonEqual } from '../engine/json-equal.js';
import { ClientError } from '../errors.js';

/** The attribute a principal's verified claims are read under (`attributes.claims.sub`). */
export const CLAIMS_ATTRIBUTE = 'claims';

/** A credential a door read for the principal, and where it came from: the identity port (src/identity/) verifies it. */
export interface Credential {
  /** A bearer token: a signed JWT. */
  token: string;
  /** Where the door read it. */
  from: 'check' | 'authzen-subject' | 'authorization-header';
  /** The key set that must verify it (a route of external authorization names one); undefined: its issuer's. */
  keySet?: string;
}

/** One side of a check as the caller described it, before registered attributes are merged in. */
export interface EntityInput {
  uri: string | undefined;
  attributes: Map<string, unknown>;
  /** The principal's credential, whose verified claims it is decided with. */
  credential?: Credential;
  /** The principal's uri from its verified credential, where the door makes it so (external authorization's template): used when `uri` is undefined. */
  uriOf?: (claims: Readonly<Record<string, unknown>>, keySet: string) => string | undefined;
}

/** The action of a check and the check's context, as the caller described them: the maps only when sent. */
export interface ActionInput {
  action: string;
  actionAttributes?: Map<string, unknown>;
  context?: Map<string, unknown>;
}

export interface CheckInput extends ActionInput {
  principal: EntityInput;
  resource: EntityInput;
}

export const DEFAULT_ACTION = 'access';

type Side = 'principal' | 'resource';

/** A side whose two forms say different things: refused (400), since using either would ignore the other. */
export class FormsDisagree extends ClientError {
  constructor(disagreement: string, sameWhat: 'value' | 'attributes') {
    super(400, `${disagreement}; send one of them, or the same ${sameWhat} in both`);
  }
}

/** A side sent in the flat form only. */
const NOT_NESTED: { uri?: null; attributes?: null; token?: null } = Object.freeze({});

/**
 * How a side a check cannot use is told: in Eunomia's words, which its clients match, or, where
 * tokens are verified (and the operator style is not Eunomia's), naming a principal's token too.
 */
export type SideWording = 'eunomia' | 'with-token';

/** The wording of a server verifying tokens (`tokens`: its --tokens file, '' for none) in `operatorStyle`. */
export const sideWordingOf = ({ tokens, operatorStyle }: { tokens: string; operatorStyle: string }): SideWording =>
  tokens !== '' && operatorStyle !== 'eunomia' ? 'with-token' : 'eunomia';

const given = <T>(value: T | null | undefined): value is T => value !== null && value !== undefined && value !== '';

/**
 * The action and the context of a check (or of any request that reads them as a check does: a
 * plan, a policy test case), or the issue that makes them unusable. The action's attributes come
 * from `action.attributes` or `action_attributes`, which must agree when both are given.
 */
export function actionInput(request: ActionAndContext, at: (string | number)[]): ActionInput | ValidationIssue {
  const { action, action_attributes: flatSent, context } = request;
  const nested = typeof action === 'object' && action !== null;
  const nestedAttributes = toAttributeMap(nested ? action.attributes : undefined);
  if (nestedAttributes instanceof DuplicateAttribute) return nestedAttributes.issueAt([...at, 'action', 'attributes']);
  const flatAttributes = toAttributeMap(flatSent);
  if (flatAttributes instanceof DuplicateAttribute) return flatAttributes.issueAt([...at, 'action_attributes']);
  if (nestedAttributes.size > 0 && flatAttributes.size > 0) {
    const key = differingKey(nestedAttributes, flatAttributes);
    if (key !== undefined) throw new FormsDisagree(`action.attributes and action_attributes disagree on '${key}'`, 'attributes');
  }
  const attributes = nestedAttributes.size > 0 ? nestedAttributes : flatAttributes;
  const input: ActionInput = { action: (nested ? action.name : action) ?? DEFAULT_ACTION };
  if (attributes.size > 0) input.actionAttributes = attributes;
  // A context is an object of attributes: toAttributeMap reads its keys as it reads an attributes object.
  const contextAttributes = toAttributeMap(context) as Map<string, unknown>;
  if (contextAttributes.size > 0) input.context = contextAttributes;
  return input;
}

/** The first key on which two attribute maps differ, or undefined when they are equal. */
function differingKey(left: Map<string, unknown>, right: Map<string, unknown>): string | undefined {
  for (const [key, value] of left) if (!right.has(key) || !jsonEqual(value, right.get(key))) return key;
  for (const key of right.keys()) if (!left.has(key)) return key;
  return undefined;
}

/**
 * One side from its nested object and its flat fields: each field is taken from whichever form
 * gives it (null and '' give nothing); a field given in both must say the same in both.
 */
export function entityInput(request: CheckRequest, side: Side, at: (string | number)[], wording: SideWording = 'eunomia'): EntityInput | ValidationIssue {
  // Each field read by name: a key computed per side makes every read of a bulk's items a slow
  // keyed lookup (most of them of fields the item does not have).
  return side === 'principal'
    ? sideOf(side, request.principal, request.principal_uri, request.principal_attributes, at, wording)
    : sideOf(side, request.resource, request.resource_uri, request.resource_attributes, at, wording);
}

function sideOf(
  side: Side,
  nestedSent: CheckRequest[Side],
  flatUri: string | null | undefined,
  flatSent: CheckRequest['principal_attributes'],
  at: (string | number)[],
  wording: SideWording,
): EntityInput | ValidationIssue {
  // Neither form sent at all: Eunomia, which has the nested form only, says the field is required.
  if ((nestedSent === undefined || nestedSent === null) && (flatUri === undefined || flatUri === null) && (flatSent === undefined || flatSent === null)) {
    return { loc: [...at, side], msg: 'Field required', type: 'missing' };
  }
  const nested: { uri?: string | null; attributes?: CheckRequest['principal_attributes']; token?: string | null } = nestedSent ?? NOT_NESTED;
  if (given(nested.uri) && given(flatUri) && nested.uri !== flatUri) {
    throw new FormsDisagree(`${side}.uri ('${nested.uri}') and ${side}_uri ('${flatUri}') disagree`, 'value');
  }
  const uri = given(nested.uri) ? nested.uri : flatUri;
  const nestedAttributes = toAttributeMap(nested.attributes);
  if (nestedAttributes instanceof DuplicateAttribute) return nestedAttributes.issueAt([...at, side, 'attributes']);
  // The common check sends one form only: no second Map for the other.
  if (flatSent === undefined || flatSent === null) return sideInput(uri, nestedAttributes, nested.token, side, at, wording);
  const flatAttributes = toAttributeMap(flatSent);
  if (flatAttributes instanceof DuplicateAttribute) return flatAttributes.issueAt([...at, `${side}_attributes`]);
  if (nestedAttributes.size > 0 && flatAttributes.size > 0) {
    const key = differingKey(nestedAttributes, flatAttributes);
    if (key !== undefined) throw new FormsDisagree(`${side}.attributes and ${side}_attributes disagree on '${key}'`, 'attributes');
  }
  return sideInput(uri, nestedAttributes.size > 0 ? nestedAttributes : flatAttributes, nested.token, side, at, wording);
}

function sideInput(uri: string | null | undefined, attributes: Map<string, unknown>, token: string | null | undefined, side: Side, at: (string | number)[], wording: SideWording): EntityInput | ValidationIssue {
  if (given(token)) return { uri: given(uri) ? uri : undefined, attributes, credential: { token, from: 'check' } };
  if (!given(uri) && attributes.size === 0) {
    const orToken = side === 'principal' && wording === 'with-token' ? " or a 'token'" : '';
    return { loc: [...at, side], msg: `Either 'uri' or non-empty 'attributes'${orToken} must be provided`, type: 'value_error' };
  }
  return { uri: given(uri) ? uri : undefined, attributes };
}

export const isIssue = (input: EntityInput | ValidationIssue): input is ValidationIssue => 'loc' in input;

/**
 * Reads a schema-valid check request (either form) into what resolution needs, or the issues that
 * make it unusable (422). `at` locates the request in the body (`['body']`, or `['body', i]` in a
 * bulk). Throws FormsDisagree when a side's nested and flat forms contradict each other.
 */
export function readCheckRequest(request: CheckRequest, at: (string | number)[], wording: SideWording = 'eunomia'): CheckInput | ValidationIssue[] {
  const principal = entityInput(request, 'principal', at, wording);
  const resource = entityInput(request, 'resource', at, wording);
  // The common check names its action and nothing more: read without a second object.
  if (namesActionOnly(request)) {
    if (isIssue(principal) || isIssue(resource)) return [principal, resource].filter(isIssue);
    return { principal, resource, action: request.action ?? DEFAULT_ACTION };
  }
  const action = actionInput(request, at);
  if (isIssue(principal) || isIssue(resource) || 'loc' in action) return [principal, resource, action].filter((part): part is ValidationIssue => 'loc' in part);
  return { principal, resource, ...action };
}

const namesActionOnly = (request: ActionAndContext): request is ActionAndContext & { action?: string | null } =>
  (request.action === undefined || request.action === null || typeof request.action === 'string') &&
  (request.action_attributes === undefined || request.action_attributes === null) &&
  (request.context === undefined || request.context === null);
