import type { DecisionRequest, ResolvedEntity } from '../engine/index.js';
import { jsonEqual } from '../engine/json-equal.js';
import { ANY_ACTION } from '../engine/actions.js';
import { CLAIMS_ATTRIBUTE, type CheckInput, type EntityInput } from '../requests/check-request.js';

type Attributes = ReadonlyMap<string, unknown> | undefined;

/**
 * Registered attributes of a uri, or undefined when nothing is registered under it. Answers
 * synchronously when it can (a cache hit), so the common check never waits on a promise.
 */
export type RegisteredAttributes = (uri: string) => Attributes | Promise<Attributes>;

/** A supplied attribute that contradicts the registry: the check cannot be decided as asked. */
export class AttributeConflict extends Error {}

/** A principal's token that did not verify, where such a check is refused: it cannot be decided as asked either. */
export class TokenNotAccepted extends AttributeConflict {}

/** A principal's `claims` attribute written by the caller where only a verified token may give it. */
export class ReservedClaims extends AttributeConflict {
  constructor() {
    super(`The principal attribute '${CLAIMS_ATTRIBUTE}' is reserved for the verified claims of a token on this server (it verifies tokens): send the token itself, or give the attribute another name`);
  }
}

/** A check whose action is `*`, which in a rule's actions means every action: a check names one. */
export class AnyActionAsked extends AttributeConflict {
  constructor() {
    super(`The action '${ANY_ACTION}' stands for every action in a rule's actions; a check must name the one action it asks about`);
  }
}

/** The claims of a verified token, as conditions read them under the principal's `claims` attribute. */
export type Claims = Readonly<Record<string, unknown>>;

/** A token that verified: its claims, and the key set that verified them (whose name space its principal belongs to). */
export interface VerifiedToken {
  claims: Claims;
  keySet: string;
}

/**
 * The claims of a principal's token (synchronous when it was verified lately), verified by the key
 * set named, else by its issuer's; null when it did not verify and the check is decided without
 * claims; throws (or rejects with) TokenNotAccepted when such a check is refused. Undefined where no
 * tokens are verified.
 */
export type TokenClaims = (token: string, keySet?: string) => VerifiedToken | null | Promise<VerifiedToken | null>;


/** How checks are resolved beyond the registry: tokens, and what a conflict with the registry does. */
export interface ResolveOptions {
  /** The claims of a principal's token; undefined where tokens are not verified (`--tokens`). */
  claimsOf?: TokenClaims;
  /**
   * Where a supplied attribute disagrees with the registered one: without it, the check cannot be
   * decided as asked (AttributeConflict, Eunomia's 400); with it (admin authentication on), the
   * registered value decides and this is told, so that no answer says whether a guess was right.
   */
  overruled?: (uri: string, key: string) => void;
}

/**
 * Registered attributes of the uri, plus supplied ones. A supplied key that is registered with a
 * different value is a conflict (see ResolveOptions.overruled); supplied attributes never override
 * registered ones.
 */
function merge(input: EntityInput, stored: Attributes, overruled: ResolveOptions['overruled']): ResolvedEntity {
  if (stored === undefined || stored.size === 0) return input;
  if (input.attributes.size === 0) return { uri: input.uri, attributes: stored };
  const merged = new Map(stored);
  for (const [key, value] of input.attributes) {
    if (!merged.has(key)) merged.set(key, value);
    else if (!jsonEqual(merged.get(key), value)) {
      if (overruled === undefined) throw new AttributeConflict(`For entity '${input.uri}', attribute '${key}' has more than one value`);
      overruled(input.uri!, key);
    }
  }
  return { uri: input.uri, attributes: merged };
}

const isPromise = <T>(value: T | Promise<T>): value is Promise<T> => value instanceof Promise;

/**
 * The decision request for a check: synchronous unless a registry lookup or a token's verification
 * has to wait. A principal's token gives its `claims` attribute (whatever was registered under that
 * name gives way: the claims, or none when the token did not verify); where tokens are verified, a
 * principal whose caller wrote `claims` itself is refused (ReservedClaims), so that a policy reading
 * `claims` only ever reads what a key set verified. A principal's
 * `verifiedClaims`, when a door verified its token itself, are put on it as a token's are.
 */
export function resolveCheck(input: CheckInput, registered: RegisteredAttributes, { claimsOf, overruled }: ResolveOptions = {}): DecisionRequest | Promise<DecisionRequest> {
  if (input.action === ANY_ACTION) throw new AnyActionAsked();
  if (claimsOf !== undefined && input.principal.attributes.has(CLAIMS_ATTRIBUTE)) throw new ReservedClaims();
  const principal = input.principal.uri === undefined ? undefined : registered(input.principal.uri);
  const resource = input.resource.uri === undefined ? undefined : registered(input.resource.uri);
  const { token, verifiedClaims } = input.principal;
  const claims = verifiedClaims ?? (token === undefined ? undefined : claimsOfToken(token, claimsOf));
  if (isPromise(principal) || isPromise(resource) || isPromise(claims)) {
    return Promise.all([principal, resource, claims]).then(([principalAttributes, resourceAttributes, tokenClaims]) =>
      decisionRequest(input, principalAttributes, resourceAttributes, tokenClaims, overruled),
    );
  }
  return decisionRequest(input, principal, resource, claims, overruled);
}

function claimsOfToken(token: string, claimsOf: TokenClaims | undefined): Claims | null | Promise<Claims | null> {
  if (claimsOf === undefined) throw new TokenNotAccepted('This server verifies no tokens (it runs without --tokens): name the principal by its uri or attributes');
  const verified = claimsOf(token);
  return isPromise(verified) ? verified.then((settled) => settled && settled.claims) : verified && verified.claims;
}

function decisionRequest(input: CheckInput, principalAttributes: Attributes, resourceAttributes: Attributes, claims: Claims | null | undefined, overruled: ResolveOptions['overruled']): DecisionRequest {
  const principal = withClaims(merge(input.principal, principalAttributes, overruled), claims);
  const resource = merge(input.resource, resourceAttributes, overruled);
  // Nothing registered to add (the common check): the check as read is already the request, and no copy is made.
  if (principal === input.principal && resource === input.resource) return input;
  const request: DecisionRequest = { principal, resource, action: input.action };
  if (input.actionAttributes !== undefined) request.actionAttributes = input.actionAttributes;
  if (input.context !== undefined) request.context = input.context;
  return request;
}

/** The principal with the claims of its token (undefined: it sent none; null: they did not verify). */
function withClaims(principal: ResolvedEntity, claims: Claims | null | undefined): ResolvedEntity {
  if (claims === undefined) return principal;
  const attributes = new Map(principal.attributes);
  if (claims === null) attributes.delete(CLAIMS_ATTRIBUTE);
  else attributes.set(CLAIMS_ATTRIBUTE, claims);
  return { uri: principal.uri, attributes };
}
