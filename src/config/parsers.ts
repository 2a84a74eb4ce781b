import { isIP } from 'node:net';

/** Bad configuration: the start stops with this one line. */
export class ConfigError extends Error {}

/** What was given for an option (its flag, else its variable, else its default) and the name to quote in an error. */
export interface Given {
  label: string;
  text: string;
  /** Neither its flag nor its variable was given: `text` is the option's default. */
  defaulted?: true;
}

/** What an option's parse may read besides its own value: another option's, and the environment. */
export interface ParseContext {
  read(name: string): Given;
  env: NodeJS.ProcessEnv;
}

// How an option's text is read: each throws a ConfigError naming what was given when it is unusable.

export const trimmed = ({ text }: Given): string => text.trim();
export const boolean = ({ label, text }: Given): boolean => parseBoolean(label, text);
export const integer =
  (min: number, max: number) =>
  ({ label, text }: Given): number =>
    parseInteger(label, text, min, max);
export const oneOf =
  <Value extends string>(values: readonly Value[]) =>
  ({ label, text }: Given): Value => {
    if (!(values as readonly string[]).includes(text)) throw new ConfigError(`${label} must be one of ${values.join(', ')}, got '${text}'`);
    return text as Value;
  };
export const notEmpty =
  (name: string) =>
  ({ text }: Given): string => {
    if (text.trim() === '') throw new ConfigError(`${name} must not be empty`);
    return text.trim();
  };

export function parseInteger(name: string, text: string, min: number, max: number): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < min || Number(text) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got '${text}'`);
  }
  return Number(text);
}

const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function isAddressOrRange(entry: string): boolean {
  if (PROXY_RANGE_NAMES.includes(entry)) return true;
  const [address, prefix, ...rest] = entry.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || rest.length > 0) return false;
  return prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
}

/** `false`, `true`, or a comma-separated list of proxy addresses and ranges. */
export function parseTrustProxy(name: string, text: string): boolean | string[] {
  const normalized = text.trim().toLowerCase();
  if (normalized === 'false' || normalized === '') return false;
  if (normalized === 'true') return true;
  const entries = normalized.split(',').map((entry) => entry.trim());
  const bad = entries.find((entry) => !isAddressOrRange(entry));
  if (bad !== undefined) {
    throw new ConfigError(
      `${name} takes true, false, or proxy addresses, CIDR ranges and ${PROXY_RANGE_NAMES.join('|')}; got '${bad}'`,
    );
  }
  return entries;
}

const HOST_NAME = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$/;

/** Host names and IP addresses, comma-separated; empty for none. */
export function parseHosts(name: string, text: string): string[] {
  if (text.trim() === '') return [];
  const hosts = text.split(',').map((entry) => entry.trim().toLowerCase());
  const bad = hosts.find((host) => isIP(host) === 0 && !HOST_NAME.test(host));
  if (bad !== undefined) throw new ConfigError(`${name} takes host names and IP addresses, comma-separated, with no port or scheme; got '${bad}'`);
  return hosts;
}

/** --decision-log: `stdout`, a file path, or an http(s) URL (a collector), checked to be one. */
export function decisionLogTarget({ label, text }: Given): string {
  const target = text.trim();
  if (!/^https?:/i.test(target)) return target;
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new ConfigError(`${label} '${target}' is not a URL`);
  }
  if (url.username !== '' || url.password !== '') throw new ConfigError(`${label}: credentials in the URL would be logged with it; the collector must not need any in it`);
  return url.href;
}

/** ADMIN_API_KEY, read from the environment only: never a flag, so never in a process list. */
export const adminApiKeyOf = (env: NodeJS.ProcessEnv): string => env.ADMIN_API_KEY ?? '';

/**
 * Whether admin authentication is on, and why: ADMIN_AUTHN_REQUIRED (its flag or variable) when it
 * is given, else whether a key is set. Only an explicit false keeps it off with a key set, and the
 * reason then says the key is ignored.
 */
export function adminAuthentication(setting: Given, { read, env }: ParseContext): { required: boolean; reason: string } {
  const apiKey = adminApiKeyOf(env);
  const keysFile = read('admin-keys-file');
  const keys = [...(apiKey.trim() === '' ? [] : ['ADMIN_API_KEY']), ...(keysFile.text.trim() === '' ? [] : [keysFile.label])];
  const keysAre = `${keys.join(' and ')} ${keys.length === 1 ? 'is' : 'are'}`;
  if (setting.text.trim() === '') {
    return keys.length === 0 ? { required: false, reason: 'off: no admin key is set' } : { required: true, reason: `on: ${keysAre} set` };
  }
  if (parseBoolean(setting.label, setting.text)) return { required: true, reason: `on: ${setting.label} is true` };
  return { required: false, reason: keys.length === 0 ? `off: ${setting.label} is false` : `off: ${setting.label} is false, so ${keysAre} ignored` };
}

export function parseBoolean(name: string, text: string): boolean {
  const normalized = text.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(normalized)) return true;
  if (['false', '0', 'no', 'off', ''].includes(normalized)) return false;
  throw new ConfigError(`${name} must be true or false, got '${text}'`);
}

/** An http(s) URL from `text`, or undefined when it is empty. */
export function httpUrl(label: string, text: string): URL | undefined {
  const endpoint = text.trim();
  if (endpoint === '') return undefined;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new ConfigError(`${label} is not a URL: '${endpoint}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${label} must be an http(s) URL, got '${endpoint}'`);
  return url;
}
