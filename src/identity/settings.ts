import { dirname, resolve } from 'node:path';
import type { FromSchema } from 'json-schema-to-ts';
import { ConfigError } from '../config/config.js';
import { DocumentError, readDocument } from '../document-files.js';
import { createAjv } from '../schemas/validation.js';
import { isLoopbackHost } from '../loopback.js';

/** Signature algorithms a key set may allow: asymmetric only (an HMAC secret would have to be shared with every app that verifies). */
export const ASYMMETRIC_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
const DEFAULT_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'];
/** Key sets one file may name. */
const MAX_KEY_SETS = 20;

const keySetSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' },
    issuer: { type: 'string', minLength: 1, maxLength: 1024, description: "Tokens whose `iss` is this are verified by this set, and only such tokens are accepted by it." },
    audience: { oneOf: [{ type: 'string', minLength: 1, maxLength: 1024 }, { type: 'array', minItems: 1, maxItems: 20, items: { type: 'string', minLength: 1, maxLength: 1024 } }] },
    algorithms: { type: 'array', minItems: 1, items: { enum: [...ASYMMETRIC_ALGORITHMS] } },
    jwks_url: { type: 'string', pattern: '^https?://', maxLength: 2048 },
    jwks_file: { type: 'string', minLength: 1, maxLength: 4096 },
    refresh_seconds: { type: 'integer', minimum: 10, maximum: 86_400, default: 300 },
    min_refetch_seconds: { type: 'integer', minimum: 1, maximum: 3600, default: 30 },
    timeout_ms: { type: 'integer', minimum: 100, maximum: 60_000, default: 2000 },
    insecure_http: { type: 'boolean', default: false, description: 'Take a jwks_url over plain http:// beyond loopback: anyone on the path could hand Verdict keys of their own.' },
  },
  required: ['name'],
  oneOf: [{ required: ['jwks_url'] }, { required: ['jwks_file'] }],
  additionalProperties: false,
} as const;

export const tokenSettingsSchema = {
  type: 'object',
  properties: {
    key_sets: { type: 'array', minItems: 1, maxItems: MAX_KEY_SETS, items: keySetSchema },
    on_invalid: { enum: ['refuse', 'unauthenticated'], default: 'refuse' },
    leeway_seconds: { type: 'integer', minimum: 0, maximum: 300, default: 30 },
    cache_size: { type: 'integer', minimum: 0, maximum: 1_000_000, default: 10_000 },
  },
  required: ['key_sets'],
  additionalProperties: false,
} as const;

type TokenFile = FromSchema<typeof tokenSettingsSchema>;

export interface KeySetSettings {
  name: string;
  issuer: string | undefined;
  audience: string | string[] | undefined;
  algorithms: string[];
  source: { url: string; refreshSeconds: number; minRefetchSeconds: number; timeoutMs: number } | { file: string };
}

/** How tokens are verified (`--tokens <file>`). */
export interface TokenSettings {
  keySets: KeySetSettings[];
  /** A token that fails verification: the check refused (401), or decided with no claims. */
  onInvalid: 'refuse' | 'unauthenticated';
  leewaySeconds: number;
  cacheSize: number;
}

/** Whether `url` is plain http to a host other than this machine's loopback. */
function plainHttpBeyondLoopback(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return true;
  }
  return parsed.protocol === 'http:' && !isLoopbackHost(parsed.hostname);
}

/** Reads and checks the token settings file at `path`; a `jwks_file` is read relative to it. Throws ConfigError saying what to fix. */
export function readTokenSettings(path: string): TokenSettings {
  let document: unknown;
  try {
    document = readDocument(path);
  } catch (error) {
    if (error instanceof DocumentError) throw new ConfigError(`--tokens ${error.message}`);
    throw error;
  }
  const validate = createAjv(false, true).compile(tokenSettingsSchema);
  if (!validate(document)) {
    const problems = (validate.errors ?? []).map((error) => `${error.instancePath || '(the file)'} ${error.message}`);
    throw new ConfigError(`--tokens ${path}: ${problems.join('; ')}`);
  }
  const file = document as TokenFile;
  const names = new Set<string>();
  const keySets = file.key_sets.map((set): KeySetSettings => {
    if (names.has(set.name)) throw new ConfigError(`--tokens ${path}: two key sets are named '${set.name}'`);
    names.add(set.name);
    if (set.jwks_url !== undefined && !set.insecure_http && plainHttpBeyondLoopback(set.jwks_url)) {
      throw new ConfigError(
        `--tokens ${path}: key set '${set.name}' fetches its keys over plain http:// from beyond this machine (${set.jwks_url}): anyone on the way could hand Verdict keys of their own. Use https://, or set insecure_http: true for a network you trust`,
      );
    }
    const source =
      set.jwks_url !== undefined
        ? { url: set.jwks_url, refreshSeconds: set.refresh_seconds ?? 300, minRefetchSeconds: set.min_refetch_seconds ?? 30, timeoutMs: set.timeout_ms ?? 2000 }
        : { file: resolve(dirname(path), set.jwks_file!) };
    return { name: set.name, issuer: set.issuer, audience: set.audience as string | string[] | undefined, algorithms: [...(set.algorithms ?? DEFAULT_ALGORITHMS)], source };
  });
  const issuers = keySets.map((set) => set.issuer).filter((issuer) => issuer !== undefined);
  if (new Set(issuers).size !== issuers.length) throw new ConfigError(`--tokens ${path}: two key sets have the same issuer; a token's issuer must choose one`);
  return { keySets, onInvalid: file.on_invalid ?? 'refuse', leewaySeconds: file.leeway_seconds ?? 30, cacheSize: file.cache_size ?? 10_000 };
}
