import type { DecisionRequest, ResolvedEntity } from '../engine/index.js';
import { jsonEqual } from '../engine/json-equal.js';
import { Undecidable } from '../errors.js';
import { ANY_ACTION } from '../engine/actions.js';
import { CLAIMS_ATTRIBUTE, type CheckInput, type EntityInput } from '../requests/check-request.js';
import { CredentialRefused, type Claims, type Identity, type IdentitySource } from '../identity/identity.js';

type Attributes = ReadonlyMap<string, unknown> | undefined;

/**
 * Registered attributes of a uri, or undefined when nothing is registered under it. Answers
 * synchronously when it can (a cache hit), so the common check never waits on a promise.
 */
export type RegisteredAttributes = (uri: string) => Attributes | Promise<Attributes>;

/** A supplied attribute that contradicts the registry: the check cannot be decided as asked. */
export class AttributeConflict extends Undecidable {
  constructor(message: string) {
    super('conflict', message);
  }
}

/** A principal's `claims` attribute written by the caller where only a verified token may give it. */
export class ReservedClaims extends Undecidable {
  constructor() {
    super('request', `The principal attribute '${CLAIMS_ATTRIBUTE}' is reserved for the verified claims of a token on this server (it verifies tokens): send the token itself, or give the attribute another name`);
  }
}

/** A check whose action is `*`, which in a rule's actions means every action: a check names one. */
export class AnyActionAsked extends Undecidable {
  constructor() {
    super('request', `The action '${ANY_ACTION}' stands for every action in a rule's actions; a check must name the one action it asks about`);
  }
}

/**
 * Told how a check's principal and entities were read, for its request's trace (never what they hold):
 * `fromMemory` when the answer was at hand (the token verifier's or the entity cache's), else it was
 * waited for (a token verified, a uri read from the store).
 */
export interface ResolutionTally {
  identified(fromMemory: boolean): void;
  registryRead(fromMemory: boolean): void;
}

/** How checks are resolved beyond the registry: tokens, and what a conflict with the registry does. */
export interface ResolveOptions {
  /** The identity of a principal's credential; undefined where none is verified (`--tokens`). */
  identities?: IdentitySource;
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
 * The decision request for a check: synchronous unless a registry lookup or the verification of a
 * credential has to wait. A principal's credential is verified first, by the identity port, once:
 * its claims become the `claims` attribute (whatever was registered under that name gives way: the
 * claims, or none when it did not verify), and, where the door says so (`uriOf`), its uri. Where
 * credentials are verified, a principal whose caller wrote `claims` itself is refused (ReservedClaims),
 * so that a policy reading `claims` only ever reads what a key set verified.
 */
export function resolveCheck(input: CheckInput, registered: RegisteredAttributes, { identities, overruled }: ResolveOptions = {}, tally?: ResolutionTally): DecisionRequest | Promise<DecisionRequest> {
  if (input.action === ANY_ACTION) throw new AnyActionAsked();
  if (identities !== undefined && input.principal.attributes.has(CLAIMS_ATTRIBUTE)) throw new ReservedClaims();
  const { credential } = input.principal;
  const read = tally === undefined ? registered : tallied(registered, tally);
  if (credential === undefined) return resolveEntities(input, input.principal, read, undefined, overruled);
  if (identities === undefined) throw new CredentialRefused('This server verifies no tokens (it runs without --tokens): name the principal by its uri or attributes');
  const identity = identities(credential);
  tally?.identified(!isPromise(identity));
  if (isPromise(identity)) return identity.then((settled) => resolveEntities(input, identifiedPrincipal(input.principal, settled), read, settled, overruled));
  return resolveEntities(input, identifiedPrincipal(input.principal, identity), read, identity, overruled);
}

/** `registered`, telling `tally` of each read whether it was answered from memory. */
function tallied(registered: RegisteredAttributes, tally: ResolutionTally): RegisteredAttributes {
  return (uri) => {
    const attributes = registered(uri);
    tally.registryRead(!isPromise(attributes));
    return attributes;
  };
}

/** The principal with the uri its identity gives it, where the door makes it so and it names none. */
function identifiedPrincipal(principal: EntityInput, identity: Identity | null): EntityInput {
  if (principal.uri !== undefined || principal.uriOf === undefined || identity === null) return principal;
  return { ...principal, uri: principal.uriOf(identity.claims, identity.keySet) };
}

/** The decision request once the principal's identity is settled (undefined: it has no credential; null: it did not verify). */
function resolveEntities(input: CheckInput, principalInput: EntityInput, registered: RegisteredAttributes, identity: Identity | null | undefined, overruled: ResolveOptions['overruled']): DecisionRequest | Promise<DecisionRequest> {
  const principal = principalInput.uri === undefined ? undefined : registered(principalInput.uri);
  const resource = input.resource.uri === undefined ? undefined : registered(input.resource.uri);
  const claims = identity === undefined ? undefined : identity && identity.claims;
  if (isPromise(principal) || isPromise(resource)) {
    return Promise.all([principal, resource]).then(([principalAttributes, resourceAttributes]) => decisionRequest(input, principalInput, principalAttributes, resourceAttributes, claims, overruled));
  }
  return decisionRequest(input, principalInput, principal, resource, claims, overruled);
}

function decisionRequest(
  input: CheckInput,
  principalInput: EntityInput,
  principalAttributes: Attributes,
  resourceAttributes: Attributes,
  claims: Claims | null | undefined,
  overruled: ResolveOptions['overruled'],
): DecisionRequest {
  const principal = withClaims(merge(principalInput, principalAttributes, overruled), claims);
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
