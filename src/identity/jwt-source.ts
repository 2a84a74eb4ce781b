import { CredentialRefused, type Identity, type IdentitySource } from './identity.js';
import { TokenRejected, type TokenVerifier } from './verifier.js';

/**
 * The identity source of bearer JWTs verified by `verifier`'s key sets: a token that does not verify
 * refuses the check (CredentialRefused, a 401 or a denied bulk item, saying why) or, under
 * `unauthenticated`, leaves the principal with no claims. Never an allow the token did not earn.
 */
export function jwtIdentities(verifier: TokenVerifier): IdentitySource {
  const notVerified = (error: unknown): null => {
    if (!(error instanceof TokenRejected)) throw error;
    if (verifier.onInvalid === 'refuse') throw new CredentialRefused(`The principal's token was not accepted: ${error.message}`);
    return null;
  };
  return ({ token, keySet }) => {
    let identity: Identity | Promise<Identity>;
    try {
      identity = verifier.claimsOf(token, keySet);
    } catch (error) {
      return notVerified(error);
    }
    return identity instanceof Promise ? identity.catch(notVerified) : identity;
  };
}
