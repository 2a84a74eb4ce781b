import { readFileSync } from 'node:fs';
import { createLocalJWKSet, errors, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { request } from 'undici';
import type { Clock, Timer } from '../clock.js';
import { ConfigError } from '../config/config.js';
import type { KeySetSettings } from './settings.js';

/** The largest key set document read, and the most keys kept of one. */
export const MAX_JWKS_BYTES = 1024 * 1024;
export const MAX_JWKS_KEYS = 100;

/** What `/ready` and the metrics say of a key set. */
export interface KeySetStatus {
  name: string;
  source: 'url' | 'file';
  keys: number;
  /** When the keys in use were read; null before the first success. */
  loaded_at: string | null;
  /** Why the last refresh failed, while the keys read before it are kept; null after a success. */
  last_error: string | null;
  /** How long the fetch under way has run, in milliseconds; null when none is. */
  fetching_for_ms: number | null;
}

export type RefreshOutcome = 'loaded' | 'failed';

/** The keys of a JWKS document, or why they cannot be used. Symmetric (`oct`) keys are dropped: only asymmetric algorithms are allowed. */
function keysOf(text: string): JSONWebKeySet {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw new Error('the key set is not JSON');
  }
  const keys = (document as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new Error("the key set has no 'keys' list");
  if (keys.length > MAX_JWKS_KEYS) throw new Error(`the key set holds ${keys.length} keys; at most ${MAX_JWKS_KEYS} are read`);
  return { keys: keys.filter((key) => typeof key === 'object' && key !== null && (key as { kty?: unknown }).kty !== 'oct') };
}

/** The document at `url`, read whole within `timeoutMs` (headers and body together: a body sent a byte at a time is cut too). */
async function fetchText(url: string, timeoutMs: number): Promise<string> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const response = await request(url, { method: 'GET', signal, headers: { accept: 'application/json' } });
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw new Error(`${url} answered ${response.statusCode}`);
    }
    const chunks: Buffer[] = [];
    let length = 0;
    for await (const chunk of response.body) {
      length += (chunk as Buffer).length;
      if (length > MAX_JWKS_BYTES) {
        response.body.destroy();
        throw new Error(`${url} sent more than ${MAX_JWKS_BYTES} bytes`);
      }
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks).toString('utf8');
  } catch (error) {
    if (signal.aborted) throw new Error(`${url} did not answer within ${timeoutMs} ms (its headers and whole body)`);
    throw error;
  }
}

/**
 * The public keys tokens of one issuer are verified with: read from a file once, or fetched from a
 * JWKS URL with undici (a timeout, a size bound), refreshed every `refreshSeconds`, and fetched again
 * when a token names a key it does not hold, but not more often than every `minRefetchSeconds`. A
 * failed fetch keeps the keys of the last good one.
 */
export class KeySet {
  private getKey: JWTVerifyGetKey | undefined;
  private keyCount = 0;
  private loadedAt: number | undefined;
  private lastError: string | null = null;
  private lastFetchStarted = 0;
  private fetching: Promise<void> | undefined;
  private timer: Timer | undefined;
  private retry: Timer | undefined;
  private closed = false;

  private constructor(
    readonly settings: KeySetSettings,
    private readonly onRefresh: (set: string, outcome: RefreshOutcome) => void,
    private readonly clock: Clock,
  ) {}

  /**
   * A key set with its keys read from a file (one that cannot be read is a ConfigError), or fetching
   * them from a URL: the start never waits for a URL (until it answers, `/ready` says so and tokens
   * of the set are refused); one that cannot be fetched yet is retried.
   */
  static open(settings: KeySetSettings, onRefresh: (set: string, outcome: RefreshOutcome) => void, clock: Clock): KeySet {
    const set = new KeySet(settings, onRefresh, clock);
    const { source } = settings;
    if ('file' in source) {
      try {
        set.use(keysOf(readFileSync(source.file, 'utf8')));
      } catch (error) {
        throw new ConfigError(`--tokens: key set '${settings.name}' (${source.file}): ${(error as Error).message}`);
      }
      return set;
    }
    void set.fetch();
    set.timer = clock.every(source.refreshSeconds * 1000, () => void set.fetch());
    return set;
  }

  /** For jose: the key a token's header names, from the keys in use. */
  readonly key: JWTVerifyGetKey = (header, token) => {
    if (this.getKey === undefined) throw new errors.JWKSNoMatchingKey();
    return this.getKey(header, token);
  };

  /** Fetches the keys again because a token named one not held, unless that was done less than `minRefetchSeconds` ago: whether it did. */
  async refetchForUnknownKey(): Promise<boolean> {
    const { source } = this.settings;
    if ('file' in source || this.clock.now() - this.lastFetchStarted < source.minRefetchSeconds * 1000) return false;
    await this.fetch();
    return true;
  }

  get loaded(): boolean {
    return this.getKey !== undefined;
  }

  status(): KeySetStatus {
    return {
      name: this.settings.name,
      source: 'file' in this.settings.source ? 'file' : 'url',
      keys: this.keyCount,
      loaded_at: this.loadedAt === undefined ? null : new Date(this.loadedAt).toISOString(),
      last_error: this.lastError,
      fetching_for_ms: this.fetching === undefined ? null : this.clock.now() - this.lastFetchStarted,
    };
  }

  close(): void {
    this.closed = true;
    this.timer?.cancel();
    this.retry?.cancel();
  }

  private use(keys: JSONWebKeySet): void {
    this.getKey = createLocalJWKSet(keys);
    this.keyCount = keys.keys.length;
    this.loadedAt = this.clock.now();
    this.lastError = null;
  }

  /** One fetch at a time: a caller that comes while one runs waits for it. */
  private fetch(): Promise<void> {
    const { source } = this.settings;
    if ('file' in source || this.closed) return Promise.resolve();
    this.fetching ??= (async () => {
      this.lastFetchStarted = this.clock.now();
      try {
        this.use(keysOf(await fetchText(source.url, source.timeoutMs)));
        this.onRefresh(this.settings.name, 'loaded');
      } catch (error) {
        this.lastError = (error as Error).message;
        this.onRefresh(this.settings.name, 'failed');
        // Never fetched: tried again soon, not at the next refresh.
        if (!this.loaded) this.retry = this.clock.after(source.minRefetchSeconds * 1000, () => void this.fetch());
      } finally {
        this.fetching = undefined;
      }
    })();
    return this.fetching;
  }
}
