import { TokenNotAccepted, type TokenClaims, type VerifiedToken } from '../registry/resolve.js';
import { TokenRejected, type TokenVerifier } from './verifier.js';

/**
 * The claims of a principal's token as checks read them: a token that does not verify refuses the
 * check (TokenNotAccepted, a 401 or a denied bulk item, saying why) or, under `unauthenticated`,
 * leaves the principal with no claims. Never an allow the token did not earn.
 */
export function tokenClaims(verifier: TokenVerifier): TokenClaims {
  const notVerified = (error: unknown): null => {
    if (!(error instanceof TokenRejected)) throw error;
    if (verifier.onInvalid === 'refuse') throw new TokenNotAccepted(`The principal's token was not accepted: ${error.message}`);
    return null;
  };
  return (token, keySet) => {
    let claims: VerifiedToken | Promise<VerifiedToken>;
    try {
      claims = verifier.claimsOf(token, keySet);
    } catch (error) {
      return notVerified(error);
    }
    return claims instanceof Promise ? claims.catch(notVerified) : claims;
  };
}
