import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError, loadConfig, requiresAdminAuthentication, START_OPTIONS, type Config } from '../../config/config.js';
import { parseDotenv } from './parse.js';

/** Where Eunomia's users keep its settings, and where Verdict looks by default. */
export const DEFAULT_ENV_FILE = '.env';
/** A larger file is not a settings file. */
const MAX_ENV_FILE_BYTES = 1024 * 1024;

/** What a `.env` file gave, by name only: values are never reported (ADMIN_API_KEY is one). */
export interface DotenvReport {
  file: string;
  /** Settings of Verdict's that the file gave. */
  settings: string[];
  /** Settings of Verdict's in the file that a flag or the environment set instead. */
  overridden: string[];
  /** Settings in the file not taken because they would turn off admin authentication that flags or the environment turn on. */
  weakening: string[];
  /** Names in the file that are no setting of Verdict's (Eunomia's own, such as ENGINE_SQL_DATABASE_URL). */
  ignored: string[];
  /** Line numbers of statements that could not be read, and were skipped. */
  unreadableLines: number[];
}

/** Each variable Verdict reads, and its flag (undefined for ADMIN_API_KEY, which has none). */
const SETTINGS = new Map<string, string | undefined>([
  ...Object.entries(START_OPTIONS).map(([flag, option]) => [option.env, flag] as [string, string]),
  ['ADMIN_API_KEY', undefined],
]);

/**
 * Settings of authentication for which an empty value is none: one empty in the environment (a
 * manifest's `ADMIN_API_KEY=` with no secret behind it) does not hide the file's.
 */
const EMPTY_IS_NONE = new Set(['ADMIN_API_KEY', 'AUTHZEN_TOKEN', 'ADMIN_KEYS_FILE', 'ADMIN_AUTHN_REQUIRED']);

const flagGiven = (args: string[], flag: string) => args.some((arg) => arg === `--${flag}` || arg === `--no-${flag}` || arg.startsWith(`--${flag}=`));

/** `--dotenv PATH`, `--dotenv=PATH` and `--no-dotenv` taken out of `args`: the file to read (undefined: none). */
function envFileOption(args: string[]): { rest: string[]; file: string | undefined; explicit: boolean } {
  const rest: string[] = [];
  let file: string | undefined = DEFAULT_ENV_FILE;
  let explicit = false;
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (arg === '--') {
      rest.push(...args.slice(index));
      break;
    }
    if (arg === '--no-dotenv') {
      file = undefined;
      explicit = true;
    } else if (arg === '--dotenv' || arg.startsWith('--dotenv=')) {
      file = arg === '--dotenv' ? args[++index] : arg.slice('--dotenv='.length);
      if (file === undefined || file === '') throw new ConfigError('--dotenv needs a path (--no-dotenv reads none)');
      explicit = true;
    } else {
      rest.push(arg);
    }
  }
  return { rest, file, explicit };
}

/**
 * The configuration from the command line, the environment and a `.env` file, in that order of
 * precedence: the file (`--dotenv`, default `.env` in the working directory when there is one;
 * `--no-dotenv` for none) fills in only what neither a flag nor the environment sets.
 */
export function loadConfigWithDotenv(args: string[], env: NodeJS.ProcessEnv): { config: Config; dotenv: DotenvReport | undefined } {
  const { rest, file, explicit } = envFileOption(args);
  if (file === undefined) return { config: loadConfig(rest, env), dotenv: undefined };
  let text: string;
  try {
    if (statSync(file).size > MAX_ENV_FILE_BYTES) throw new ConfigError(`${file} is larger than ${MAX_ENV_FILE_BYTES} bytes: not a settings file (--dotenv)`);
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    if (!explicit && (error as NodeJS.ErrnoException).code === 'ENOENT') return { config: loadConfig(rest, env), dotenv: undefined };
    throw new ConfigError(`cannot read --dotenv ${file}: ${(error as Error).message}`);
  }
  const { values, unreadable } = parseDotenv(text, env);
  const report: DotenvReport = { file: resolve(file), settings: [], overridden: [], weakening: [], ignored: [], unreadableLines: unreadable };
  const outside: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(env).filter(([name, value]) => !(EMPTY_IS_NONE.has(name) && value?.trim() === '')));
  const merged: NodeJS.ProcessEnv = { ...env };
  for (const [name, value] of values) {
    if (!SETTINGS.has(name)) {
      report.ignored.push(name);
    } else if (outside[name] !== undefined || (SETTINGS.get(name) !== undefined && flagGiven(rest, SETTINGS.get(name)!))) {
      report.overridden.push(name);
    } else {
      report.settings.push(name);
      merged[name] = value;
    }
  }
  // Only ADMIN_AUTHN_REQUIRED can turn off what a key from a flag or the environment turns on.
  if (report.settings.includes('ADMIN_AUTHN_REQUIRED') && requiresAdminAuthentication(rest, outside) && !requiresAdminAuthentication(rest, merged)) {
    report.settings = report.settings.filter((name) => name !== 'ADMIN_AUTHN_REQUIRED');
    report.weakening.push('ADMIN_AUTHN_REQUIRED');
    merged.ADMIN_AUTHN_REQUIRED = env.ADMIN_AUTHN_REQUIRED;
  }
  try {
    return { config: loadConfig(rest, merged), dotenv: report };
  } catch (error) {
    if (!(error instanceof ConfigError) || report.settings.length === 0) throw error;
    throw new ConfigError(`${error.message} (${report.file} gave ${report.settings.join(', ')})`);
  }
}

/** The start's log line about the file, naming each setting it gave and never a value. */
export function dotenvLogLine(report: DotenvReport): [Record<string, unknown>, string] {
  return [
    { envFile: report.file, settings: report.settings, overridden: report.overridden, weakening: report.weakening, ignored: report.ignored, unreadableLines: report.unreadableLines },
    `settings read from ${report.file}: ${report.settings.length === 0 ? 'none' : report.settings.join(', ')}` +
      (report.overridden.length === 0 ? '' : `; set by a flag or the environment instead: ${report.overridden.join(', ')}`) +
      (report.weakening.length === 0 ? '' : `; not taken, as they would weaken the authentication that flags or the environment set: ${report.weakening.join(', ')}`) +
      (report.ignored.length === 0 ? '' : `; not settings of Verdict's, ignored: ${report.ignored.join(', ')}`) +
      (report.unreadableLines.length === 0 ? '' : `; unreadable, skipped: line ${report.unreadableLines.join(', ')}`),
  ];
}
