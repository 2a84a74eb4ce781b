import { hash } from 'node:crypto';
import { decodeJwt, errors, jwtVerify, type JWTPayload } from 'jose';
import { KeySet, type KeySetStatus, type RefreshOutcome } from './key-set.js';
import type { TokenSettings } from './settings.js';
import { MAX_TOKEN_LENGTH } from '../schemas/check.js';
import type { Clock } from '../clock.js';
import type { Claims, Identity } from './identity.js';

/** A verified token is remembered at most this long (and never past its `exp`). */
const MAX_CACHED_MS = 10 * 60 * 1000;
/** The characters of the tokens remembered together, at most: their claims take about as much. */
const MAX_CACHED_CHARACTERS = 16 * 1024 * 1024;

/** A token that does not verify: the message says why, for the reason of the answer. */
export class TokenRejected extends Error {}

export type VerificationOutcome = 'verified' | 'cached' | 'rejected';

export interface TokenObservers {
  verification(outcome: VerificationOutcome): void;
  refresh(set: string, outcome: RefreshOutcome): void;
}

/** Why jose refused a claim (its reason is a code: `missing`, `invalid`, `check_failed`), in words. */
function refusedClaim(claim: string, reason: string, set: string): string {
  if (reason === 'missing') return `the token has no '${claim}' claim, which key set '${set}' requires`;
  if (reason === 'invalid') return `the token's '${claim}' claim is not of the kind the JWT standard gives it`;
  if (claim === 'aud') return `the token's 'aud' claim names no audience key set '${set}' accepts`;
  if (claim === 'iss') return `the token's 'iss' claim is not the issuer key set '${set}' accepts`;
  if (claim === 'nbf') return "the token is not valid yet ('nbf')";
  return `the token's '${claim}' claim is not accepted by key set '${set}'`;
}

/** Why jose refused a token, in words for the caller. */
function rejection(error: unknown, set: string): TokenRejected {
  if (error instanceof TokenRejected) return error;
  if (error instanceof errors.JWTExpired) return new TokenRejected('the token has expired');
  if (error instanceof errors.JWTClaimValidationFailed) return new TokenRejected(refusedClaim(error.claim, error.reason, set));
  if (error instanceof errors.JOSEAlgNotAllowed) return new TokenRejected(`the token's algorithm is not allowed by key set '${set}'`);
  if (error instanceof errors.JWSSignatureVerificationFailed) return new TokenRejected(`the token's signature does not verify with key set '${set}'`);
  if (error instanceof errors.JWKSNoMatchingKey) return new TokenRejected(`no key of key set '${set}' matches the token's key id and algorithm`);
  if (error instanceof errors.JWKSMultipleMatchingKeys) return new TokenRejected(`several keys of key set '${set}' match the token: it must name its key id`);
  if (error instanceof errors.JOSEError) return new TokenRejected(`the token is not a signed JWT this server accepts (${error.code})`);
  throw error;
}

/**
 * Verifies bearer tokens (signed JWTs) against the configured key sets and gives their claims. A
 * token is verified by the key set its issuer chooses (or the one a request names), with that set's
 * algorithms, `iss` and `aud`, and `exp` required, `nbf` held, both with the leeway. A verified token
 * is remembered (by its SHA-256, a bounded number of them, never past `exp`), so a repeated token
 * costs no signature check.
 */
export class TokenVerifier {
  private readonly verified = new Map<string, { token: Identity; until: number; characters: number }>();
  private cachedCharacters = 0;

  private constructor(
    private readonly settings: TokenSettings,
    private readonly keySets: KeySet[],
    private readonly observers: TokenObservers,
    private readonly clock: Clock,
  ) {}

  static open(settings: TokenSettings, observers: TokenObservers, clock: Clock): TokenVerifier {
    return new TokenVerifier(settings, settings.keySets.map((set) => KeySet.open(set, observers.refresh, clock)), observers, clock);
  }

  get onInvalid(): TokenSettings['onInvalid'] {
    return this.settings.onInvalid;
  }

  status(): KeySetStatus[] {
    return this.keySets.map((set) => set.status());
  }

  close(): void {
    for (const set of this.keySets) set.close();
  }

  /** The claims of `token` and the key set that verified them, or a TokenRejected saying why not; synchronous when the token was verified lately. */
  claimsOf(token: string, keySetName?: string): Identity | Promise<Identity> {
    if (token.length > MAX_TOKEN_LENGTH) return Promise.reject(new TokenRejected(`the token is longer than ${MAX_TOKEN_LENGTH} characters`));
    // A token verified by a named key set is remembered apart from the same token verified by its issuer's.
    const digest = `${keySetName ?? ''}:${hash('sha256', token, 'base64')}`;
    const remembered = this.verified.get(digest);
    if (remembered !== undefined && remembered.until > this.clock.now()) {
      this.observers.verification('cached');
      return remembered.token;
    }
    return this.verify(token, keySetName).then(
      ({ payload, keySet }) => {
        this.observers.verification('verified');
        const verified: Identity = { claims: payload as Claims, keySet };
        this.remember(digest, verified, payload.exp, token.length);
        return verified;
      },
      (error: unknown) => {
        this.observers.verification('rejected');
        throw error;
      },
    );
  }

  private async verify(token: string, keySetName: string | undefined): Promise<{ payload: JWTPayload; keySet: string }> {
    const set = this.keySetFor(token, keySetName);
    const { algorithms, issuer, audience, name } = set.settings;
    const options = { algorithms, issuer, audience, clockTolerance: this.settings.leewaySeconds, requiredClaims: ['exp'], currentDate: new Date(this.clock.now()) };
    try {
      return { payload: (await jwtVerify(token, set.key, options)).payload, keySet: name };
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey) || !(await set.refetchForUnknownKey())) throw rejection(error, name);
    }
    try {
      return { payload: (await jwtVerify(token, set.key, options)).payload, keySet: name };
    } catch (error) {
      throw rejection(error, name);
    }
  }

  /** The key set named, or the one of the token's issuer, or the only one without an issuer. */
  private keySetFor(token: string, keySetName: string | undefined): KeySet {
    if (keySetName !== undefined) {
      const named = this.keySets.find((set) => set.settings.name === keySetName);
      if (named === undefined) throw new TokenRejected(`no key set is named '${keySetName}'`);
      return named;
    }
    let issuer: unknown;
    try {
      issuer = decodeJwt(token).iss;
    } catch {
      throw new TokenRejected('the token is not a JWT (three base64url parts, the second a JSON object)');
    }
    const byIssuer = this.keySets.find((set) => set.settings.issuer !== undefined && set.settings.issuer === issuer);
    if (byIssuer !== undefined) return byIssuer;
    const open = this.keySets.filter((set) => set.settings.issuer === undefined);
    if (open.length === 1) return open[0]!;
    throw new TokenRejected(typeof issuer === 'string' ? `no key set verifies tokens of issuer '${issuer}'` : 'the token names no issuer, and no single key set takes tokens of any issuer');
  }

  /** Remembers a verified token, the oldest forgotten first past `cache_size` tokens or MAX_CACHED_CHARACTERS. */
  private remember(digest: string, token: Identity, expiry: number | undefined, characters: number): void {
    if (this.settings.cacheSize === 0) return;
    this.forget(digest);
    while (this.verified.size > 0 && (this.verified.size >= this.settings.cacheSize || this.cachedCharacters + characters > MAX_CACHED_CHARACTERS)) {
      this.forget(this.verified.keys().next().value!);
    }
    const until = Math.min((expiry ?? 0) * 1000, this.clock.now() + MAX_CACHED_MS);
    this.verified.set(digest, { token, until, characters });
    this.cachedCharacters += characters;
  }

  private forget(digest: string): void {
    const entry = this.verified.get(digest);
    if (entry === undefined) return;
    this.verified.delete(digest);
    this.cachedCharacters -= entry.characters;
  }
}
