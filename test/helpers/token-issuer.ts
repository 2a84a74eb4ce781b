import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload, type CryptoKey } from 'jose';

export const ISSUER = 'https://idp.test';
export const AUDIENCE = 'documents-app';

interface SigningKey {
  kid: string;
  alg: 'RS256' | 'ES256';
  privateKey: CryptoKey;
  publicJwk: JWK;
}

export async function signingKey(kid: string, alg: 'RS256' | 'ES256' = 'ES256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/**
 * An identity provider for tests: a JWKS served over real HTTP (which keys it serves can change:
 * a rotation), counting its fetches, and tokens signed by its keys.
 */
export class TokenIssuer {
  /** The keys the JWKS serves. */
  served: SigningKey[];
  fetches = 0;
  /** While set, the JWKS answers this status instead. */
  failWith: number | undefined;
  /** While set, the JWKS answers this body instead (200). */
  body: string | undefined;
  /** While set, the JWKS never answers. */
  hang = false;
  /** While set, the JWKS answers at once but sends its body a byte every this many milliseconds. */
  trickleEveryMs: number | undefined;
  private readonly trickles = new Set<NodeJS.Timeout>();

  private constructor(
    private readonly server: Server,
    keys: SigningKey[],
  ) {
    this.served = keys;
  }

  static async start(keys: SigningKey[]): Promise<TokenIssuer> {
    const server = createServer((_request, response) => {
      issuer.fetches++;
      if (issuer.hang) return;
      if (issuer.failWith !== undefined) {
        response.writeHead(issuer.failWith).end();
        return;
      }
      if (issuer.trickleEveryMs !== undefined) {
        const body = Buffer.from(JSON.stringify({ keys: issuer.served.map((key) => key.publicJwk) }));
        response.writeHead(200, { 'content-type': 'application/json' });
        let sent = 0;
        const trickle = setInterval(() => {
          if (sent >= body.length || response.destroyed) {
            clearInterval(trickle);
            issuer.trickles.delete(trickle);
            response.end();
            return;
          }
          response.write(body.subarray(sent, ++sent));
        }, issuer.trickleEveryMs);
        issuer.trickles.add(trickle);
        return;
      }
      if (issuer.body !== undefined) {
        response.writeHead(200, { 'content-type': 'application/json' }).end(issuer.body);
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: issuer.served.map((key) => key.publicJwk) }));
    });
    const issuer = new TokenIssuer(server, keys);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return issuer;
  }

  get jwksUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/jwks.json`;
  }

  close(): Promise<void> {
    for (const trickle of this.trickles) clearInterval(trickle);
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** A token for `sub` signed by `key`: issued now, expiring in `expiresIn` seconds (negative: already expired), with `extra` claims. */
export function tokenFor(key: SigningKey, sub: string, { expiresIn = 600, extra = {}, issuer = ISSUER, audience = AUDIENCE }: { expiresIn?: number; extra?: JWTPayload; issuer?: string; audience?: string } = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ ...extra })
    .setProtectedHeader({ alg: key.alg, kid: key.kid })
    .setSubject(sub)
    .setIssuer(issuer)
    .setAudience(audience)
    .setIssuedAt(now)
    .setExpirationTime(now + expiresIn)
    .sign(key.privateKey);
}

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** An unsigned token (`alg: none`) claiming to be `sub`: what an attacker sends. */
export function unsignedToken(sub: string, kid: string): string {
  const now = Math.floor(Date.now() / 1000);
  return `${base64url({ alg: 'none', kid })}.${base64url({ sub, iss: ISSUER, aud: AUDIENCE, iat: now, exp: now + 600 })}.`;
}
