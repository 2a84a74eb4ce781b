import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { ConfigError, type Config } from './config/config.js';

export const ROLES = ['admin', 'read'] as const;
export type Role = (typeof ROLES)[number];

/** An admin key that authenticated a request: its name (the audit trail's actor) and what it may do. */
export interface AdminKey {
  name: string;
  role: Role;
}

/** ADMIN_API_KEY's name in the audit trail. */
export const DEFAULT_KEY_NAME = 'default';

const NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;

export const keyDigest = (key: string) => createHash('sha256').update(key).digest();

/** A new random admin key, and the line that gives it `name` and `role` in a keys file. */
export function newKey(name: string, role: Role): { key: string; line: string } {
  if (!NAME.test(name)) throw new Error(`a key name is 1 to 64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit; got '${name}'`);
  const key = randomBytes(32).toString('base64url');
  return { key, line: `${name} ${role} ${keyDigest(key).toString('hex')}` };
}

interface Entry extends AdminKey {
  digest: Buffer;
}

/**
 * Reads a keys file: one key a line, `name role sha256-hex-digest`, blank lines and `#` comments
 * ignored. Names and digests are unique. Throws an Error naming the line at fault.
 */
export function parseKeysFile(text: string, reservedName?: string): Entry[] {
  const entries: Entry[] = [];
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const at = `line ${index + 1}`;
    const fields = line.split(/\s+/);
    if (fields.length !== 3) throw new Error(`${at}: expected 'name role sha256-digest', got ${fields.length} field(s)`);
    const [name, role, digest] = fields as [string, string, string];
    if (!NAME.test(name)) throw new Error(`${at}: '${name}' is not a key name (letters, digits, '.', '_', '@', '-')`);
    if (!(ROLES as readonly string[]).includes(role)) throw new Error(`${at}: role '${role}' is not one of ${ROLES.join(', ')}`);
    if (!SHA256_HEX.test(digest.toLowerCase())) throw new Error(`${at}: the digest must be 64 hexadecimal digits (a SHA-256 of the key)`);
    if (name === reservedName) throw new Error(`${at}: the name '${name}' is ADMIN_API_KEY's; choose another`);
    if (entries.some((entry) => entry.name === name)) throw new Error(`${at}: the name '${name}' appears twice`);
    if (entries.some((entry) => entry.digest.toString('hex') === digest.toLowerCase())) throw new Error(`${at}: the same key is listed twice`);
    entries.push({ name, role: role as Role, digest: Buffer.from(digest, 'hex') });
  });
  return entries;
}

export interface KeyRingOptions {
  /** ADMIN_API_KEY, an `admin` key named `default`; empty for none. */
  defaultKey: string;
  /** `--admin-keys-file`; empty for none. */
  file: string;
}

/** A keys file that changed but was not taken: since when, and why. */
export interface RejectedKeysFile {
  since: number;
  error: Error;
}

interface KeyRingEvents {
  /** The file was read again (or found removed): this many keys are in force now. */
  reloaded: [keys: number];
  /** The file changed but could not be read or parsed: the keys stay as they were. */
  rejected: [RejectedKeysFile];
}

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * The admin keys a server accepts: ADMIN_API_KEY and the keys of `--admin-keys-file`, which is
 * read again whenever its directory changes (an editor's rename, a Kubernetes secret's symlink swap).
 * A file removed takes its keys with it. A file that no longer parses, or cannot be read, leaves the
 * keys as they were, and `rejected` says since when and why until a good one replaces it: refusing
 * every key because of a typo would lock every operator out.
 */
export class KeyRing extends EventEmitter<KeyRingEvents> {
  private entries: Entry[];
  private readonly watcher: FSWatcher | undefined;
  /** The file's text last read (undefined: none, or removed), taken or not: a change of the directory that leaves it the same is no change. */
  private lastText: string | undefined;
  rejected: RejectedKeysFile | undefined;

  /** Throws an Error saying what is wrong with the file. */
  constructor(private readonly options: KeyRingOptions) {
    super();
    const text = options.file === '' ? undefined : this.readFile();
    this.entries = this.parse(text);
    this.lastText = text;
    if (options.file !== '') {
      this.watcher = watch(dirname(options.file), { persistent: false }, (_event, changed) => {
        // Only our file, or a change that may have replaced it without naming it (a symlink swap).
        if (changed === null || changed === basename(options.file) || changed.startsWith('..')) this.reload();
      });
    }
  }

  /** The key `sent` is, if any; every digest is compared, in constant time, whatever matches. */
  find(sent: string): AdminKey | undefined {
    const digest = keyDigest(sent);
    let found: Entry | undefined;
    for (const entry of this.entries) if (timingSafeEqual(entry.digest, digest) && found === undefined) found = entry;
    return found && { name: found.name, role: found.role };
  }

  get size(): number {
    return this.entries.length;
  }

  close(): void {
    this.watcher?.close();
  }

  private readFile(): string {
    try {
      return readFileSync(this.options.file, 'utf8');
    } catch (error) {
      throw new Error(`cannot read the admin keys file ${this.options.file}: ${(error as Error).message}`);
    }
  }

  /** ADMIN_API_KEY's entry and those of the file's `text` (none when undefined). */
  private parse(text: string | undefined): Entry[] {
    const entries: Entry[] = this.options.defaultKey === '' ? [] : [{ name: DEFAULT_KEY_NAME, role: 'admin', digest: keyDigest(this.options.defaultKey) }];
    if (text === undefined) return entries;
    try {
      return [...entries, ...parseKeysFile(text, this.options.defaultKey === '' ? undefined : DEFAULT_KEY_NAME)];
    } catch (error) {
      throw new Error(`the admin keys file ${this.options.file}, ${(error as Error).message}`);
    }
  }

  private reload(): void {
    let text: string | undefined;
    try {
      text = readFileSync(this.options.file, 'utf8');
    } catch (error) {
      if (!isMissing(error)) return this.reject(new Error(`cannot read the admin keys file ${this.options.file}: ${(error as Error).message}`));
    }
    if (text === this.lastText) return;
    this.lastText = text;
    try {
      this.entries = this.parse(text);
    } catch (error) {
      return this.reject(error as Error);
    }
    this.rejected = undefined;
    this.emit('reloaded', this.entries.length);
  }

  private reject(error: Error): void {
    this.rejected = { since: this.rejected?.since ?? Date.now(), error };
    this.emit('rejected', this.rejected);
  }
}

/** The admin keys (see KeyRing) when authentication is on; a ConfigError says what is wrong with the keys file. */
export function adminKeysOf(config: Config): KeyRing | undefined {
  if (!config.adminAuthRequired) return undefined;
  try {
    return new KeyRing({ defaultKey: config.adminApiKey.trim() === '' ? '' : config.adminApiKey, file: config.adminKeysFile });
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
}
