import { Undecidable } from '../errors.js';
import type { Credential } from '../requests/check-request.js';

// The identity port: a check's credential (what a door read: a bearer token, with where it came from
// and any key set the door names) becomes an identity here, at the front, once. Each credential
// source (the JWT/JWKS verifier is the first) is an IdentitySource; resolving a check asks it.

/** The claims of a verified credential, as conditions read them under the principal's `claims` attribute. */
export type Claims = Readonly<Record<string, unknown>>;

/** A verified credential: its claims, and the key set that verified them (whose name space its principal belongs to). */
export interface Identity {
  claims: Claims;
  keySet: string;
}

/**
 * The identity of a credential: synchronous when it was verified lately; null when it did not
 * verify and the check is decided without one (`on_invalid: unauthenticated`); throws (or rejects
 * with) CredentialRefused when such a check is refused.
 */
export type IdentitySource = (credential: Credential) => Identity | null | Promise<Identity | null>;

/** A credential that did not verify, where such a check is refused: 401 for a check, a denied bulk item. */
export class CredentialRefused extends Undecidable {
  constructor(message: string) {
    super('credential', message);
  }
}
