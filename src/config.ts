import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { parseRetention } from './audit/retention.js';
import type { AuditRetention } from './audit/record.js';
import { OPERATOR_STYLES, type OperatorStyle } from './engine/operators.js';
import { isLoopbackHost } from './loopback.js';

export const STORES = ['embedded', 'mongodb', 'mongodb-memory'] as const;
export type StoreKind = (typeof STORES)[number];

export interface Config {
  host: string;
  port: number;
  /** Where policies and entities live; `mongodb` when a MongoDB URI is given, else `embedded`. */
  store: StoreKind;
  dataDir: string;
  /** A directory whose policy files are the whole policy set (policy writes then answer 409); empty: policies live in the store. */
  policiesDir: string;
  /** Never logged: it may hold credentials. */
  mongodbUri: string;
  mongodbDatabase: string;
  /** On when a key is set (ADMIN_API_KEY, --admin-keys-file), unless ADMIN_AUTHN_REQUIRED says false; see adminAuthReason. */
  adminAuthRequired: boolean;
  /** Whether admin authentication is on and why, in words for the start's log line (never a key). */
  adminAuthReason: string;
  /** Start with admin authentication off even on an address other than loopback (see checkAdminExposure). */
  allowOpenAdmin: boolean;
  /** While admin authentication is off, names besides loopback and `host` that admin requests may give as their Host (see open-admin.ts). */
  adminHosts: string[];
  /** Only read when adminAuthRequired; never logged. */
  adminApiKey: string;
  /** Named admin keys with roles, one `name role sha256-digest` a line; empty for none. Only read when adminAuthRequired. */
  adminKeysFile: string;
  /** Failed admin authentications one non-local client may make per minute before it is answered 429. */
  adminAuthFailuresPerMinute: number;
  /**
   * Whose X-Forwarded-For names the client's address: false (nobody's), true (whichever peer connects,
   * one hop), or the proxies' addresses, CIDR ranges and the names loopback, linklocal, uniquelocal.
   */
  trustProxy: boolean | string[];
  bulkCheckMaxRequests: number;
  /** Most entities registered by one `POST .../entities/$bulk`. */
  bulkRegisterMaxEntities: number;
  /** spec: simple policies emit `==`, operators answered as stored; eunomia: Eunomia's names (`equals`, …) in every answer. */
  operatorStyle: OperatorStyle;
  /** Largest request body in bytes; a bigger one is answered 413. */
  bodyLimit: number;
  /** Deepest nesting of lists and objects in a request body. */
  maxJsonDepth: number;
  /** Longest string in a request body, keys included, in UTF-16 code units. */
  maxStringLength: number;
  maxRulesPerPolicy: number;
  /** Principal and resource conditions of one rule together. */
  maxConditionsPerRule: number;
  /** Largest `limit` of a registry list. */
  maxPageSize: number;
  /** Most characters of JSON in one plan's condition; its MongoDB filter may have twice as many. */
  maxPlanSize: number;
  /** Most characters of JSON that the plans or the explanations of one request, or a validation report, hold together. */
  maxAnswerSize: number;
  registryEnabled: boolean;
  /** Most registry entities whose attributes the front process keeps in memory. */
  entityCacheSize: number;
  /** Front processes sharing the port (Node's cluster module); each follows the store's change feed. */
  processes: number;
  /** Worker threads for bulk checks. */
  workers: number;
  /** Longest a worker may spend on one bulk before it is replaced and the bulk answered 503. */
  workerTimeoutMs: number;
  /** Longest a check sent with `verdict-min-revision` waits for this process's snapshot to reach it; then 503. */
  minRevisionWaitMs: number;
  /** inline: every check on the front thread; pool: every bulk in a worker; auto: big bulks in a worker. */
  evaluation: Evaluation;
  logLevel: string;
  /** A Unix domain socket to listen on as well as TCP; empty for none. */
  socket: string;
  /** Serve GET /metrics on this port alone (and not on the API's), with /health and /ready for probes; undefined: on the API's port. */
  metricsPort: number | undefined;
  /** The address of the metrics port (undefined: the API's); a sidecar keeps its API on loopback and opens this one to the kubelet. */
  metricsHost: string | undefined;
  /** Where each decision is logged as one JSON line: a file path, `stdout`, or empty for no decision log. */
  decisionLog: string;
  /** After SIGTERM/SIGINT, how long the listeners keep accepting (readiness already 503) before they close. */
  shutdownDelayMs: number;
  /** After SIGTERM/SIGINT, the longest the process takes to exit, delay included. */
  shutdownGraceMs: number;
  /** Record registry attribute values in the audit trail (otherwise only which keys changed). */
  auditValues: boolean;
  /** Which audit records are kept; undefined: all of them. */
  auditRetention: AuditRetention | undefined;
  /** Denied checks kept in memory for the live view (GET /admin/live); 0 for none. */
  recentDenials: number;
  /** Keep the attribute values of recent denials (otherwise only their keys are shown). */
  recentDenialsValues: boolean;
}

/** A plan's condition and its MongoDB filter together may be this many times --max-plan-size (see PlanService). */
export const PLAN_ANSWER_GROWTH = 3;

export const EVALUATION_MODES = ['inline', 'pool', 'auto'] as const;
export type Evaluation = (typeof EVALUATION_MODES)[number];

export const DEFAULT_CONFIG: Config = {
  host: '127.0.0.1',
  port: 8421,
  store: 'embedded',
  dataDir: './data',
  policiesDir: '',
  mongodbUri: '',
  mongodbDatabase: 'verdict',
  adminAuthRequired: false,
  adminAuthReason: 'off: no admin key is set',
  allowOpenAdmin: false,
  adminHosts: [],
  adminApiKey: '',
  adminKeysFile: '',
  adminAuthFailuresPerMinute: 10,
  trustProxy: false,
  bulkCheckMaxRequests: 1000,
  bulkRegisterMaxEntities: 1000,
  operatorStyle: 'spec',
  bodyLimit: 1024 * 1024,
  maxJsonDepth: 100,
  maxStringLength: 65_536,
  maxRulesPerPolicy: 1000,
  maxConditionsPerRule: 256,
  maxPageSize: 1000,
  maxPlanSize: 256 * 1024,
  maxAnswerSize: 1024 * 1024,
  registryEnabled: true,
  entityCacheSize: 100_000,
  processes: 1,
  workers: availableParallelism(),
  workerTimeoutMs: 10_000,
  minRevisionWaitMs: 2000,
  evaluation: 'auto',
  logLevel: 'info',
  socket: '',
  metricsPort: undefined,
  metricsHost: undefined,
  decisionLog: '',
  shutdownDelayMs: 0,
  shutdownGraceMs: 10_000,
  auditValues: false,
  auditRetention: undefined,
  recentDenials: 200,
  recentDenialsValues: false,
};

/** Bad configuration: the start stops with this one line. */
export class ConfigError extends Error {}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface StartOption {
  type: 'string';
  env: string;
  help: string;
  /** The value when neither the flag nor the variable is given. */
  default: string;
  /** How `--help` states the default when `default` alone would not say it. */
  defaultHelp?: string;
  /** On or off: `--name` alone turns it on, `--no-name` off; `--name true|false` works too. */
  switch?: boolean;
}

/** Flags of `verdict start`, their variables, and what they mean: the source of `--help` too. */
const OPTIONS = {
  host: { type: 'string', env: 'HOST', help: 'address to listen on', default: DEFAULT_CONFIG.host },
  port: { type: 'string', env: 'PORT', help: 'TCP port (0 picks a free one)', default: String(DEFAULT_CONFIG.port) },
  store: {
    type: 'string',
    env: 'STORE',
    help: 'embedded|mongodb|mongodb-memory',
    default: '',
    defaultHelp: 'mongodb with a URI, else embedded',
  },
  'data-dir': { type: 'string', env: 'DATA_DIR', help: 'directory of the embedded store', default: DEFAULT_CONFIG.dataDir },
  policies: {
    type: 'string',
    env: 'POLICIES_DIR',
    help: 'serve the policies of the *.json/*.yaml/*.yml files in this directory, reloaded when they change; policy writes answer 409',
    default: '',
  },
  'mongodb-uri': { type: 'string', env: 'MONGODB_URI', help: 'MongoDB connection string (a replica set)', default: '' },
  'mongodb-db': { type: 'string', env: 'MONGODB_DB', help: 'MongoDB database name', default: DEFAULT_CONFIG.mongodbDatabase },
  'admin-authn-required': {
    type: 'string',
    switch: true,
    env: 'ADMIN_AUTHN_REQUIRED',
    help: 'require the WAY-API-KEY header (ADMIN_API_KEY or a key of --admin-keys-file) on admin routes; false turns it off even with a key set',
    default: '',
    defaultHelp: 'on when a key is set',
  },
  'allow-open-admin': {
    type: 'string',
    switch: true,
    env: 'ALLOW_OPEN_ADMIN',
    help: 'start with admin authentication off on an address other than loopback (otherwise refused): whoever reaches it may change every policy',
    default: 'false',
  },
  'admin-hosts': {
    type: 'string',
    env: 'ADMIN_HOSTS',
    help: 'while admin authentication is off, host names admin requests may address besides loopback and --host (their Host header), comma-separated',
    default: '',
  },
  'admin-keys-file': {
    type: 'string',
    env: 'ADMIN_KEYS_FILE',
    help: "named admin keys, a 'name role sha256-digest' line each (roles admin, read); reloaded when it changes",
    default: '',
  },
  'admin-auth-failures-per-minute': {
    type: 'string',
    env: 'ADMIN_AUTH_FAILURES_PER_MINUTE',
    help: 'failed admin authentications a non-loopback client may make per minute; then 429 until the minute is over',
    default: String(DEFAULT_CONFIG.adminAuthFailuresPerMinute),
  },
  'trust-proxy': {
    type: 'string',
    env: 'TRUST_PROXY',
    help: 'take the client address from X-Forwarded-For sent by these proxies: addresses, CIDR ranges, loopback|linklocal|uniquelocal; true: any peer (one hop)',
    default: 'false',
  },
  'bulk-check-max-requests': {
    type: 'string',
    env: 'BULK_CHECK_MAX_REQUESTS',
    help: 'most checks accepted in one POST /check/bulk',
    default: String(DEFAULT_CONFIG.bulkCheckMaxRequests),
  },
  'bulk-register-max-entities': {
    type: 'string',
    env: 'BULK_REGISTER_MAX_ENTITIES',
    help: 'most entities registered by one POST /admin/fetchers/registry/entities/$bulk (and per batch of import)',
    default: String(DEFAULT_CONFIG.bulkRegisterMaxEntities),
  },
  'operator-style': {
    type: 'string',
    env: 'OPERATOR_STYLE',
    help: "spec|eunomia: eunomia answers 'equals', 'not_equals', 'gt'... where a policy holds '==', '!=', '>'... (for Eunomia's Python SDK)",
    default: DEFAULT_CONFIG.operatorStyle,
  },
  'body-limit': {
    type: 'string',
    env: 'BODY_LIMIT',
    help: 'largest request body in bytes (413 beyond it)',
    default: String(DEFAULT_CONFIG.bodyLimit),
  },
  'max-json-depth': {
    type: 'string',
    env: 'MAX_JSON_DEPTH',
    help: 'deepest nesting of lists and objects in a request body',
    default: String(DEFAULT_CONFIG.maxJsonDepth),
  },
  'max-string-length': {
    type: 'string',
    env: 'MAX_STRING_LENGTH',
    help: 'longest string (keys included) in a request body, in characters',
    default: String(DEFAULT_CONFIG.maxStringLength),
  },
  'max-rules-per-policy': {
    type: 'string',
    env: 'MAX_RULES_PER_POLICY',
    help: 'most rules in one policy',
    default: String(DEFAULT_CONFIG.maxRulesPerPolicy),
  },
  'max-conditions-per-rule': {
    type: 'string',
    env: 'MAX_CONDITIONS_PER_RULE',
    help: 'most conditions (principal and resource together) in one rule',
    default: String(DEFAULT_CONFIG.maxConditionsPerRule),
  },
  'max-page-size': {
    type: 'string',
    env: 'MAX_PAGE_SIZE',
    help: 'largest limit of one registry list request',
    default: String(DEFAULT_CONFIG.maxPageSize),
  },
  'max-plan-size': {
    type: 'string',
    env: 'MAX_PLAN_SIZE',
    help: "most characters of JSON in one plan's condition (its MongoDB filter: twice as many); a larger plan is stated coarser, or refused",
    default: String(DEFAULT_CONFIG.maxPlanSize),
  },
  'max-answer-size': {
    type: 'string',
    env: 'MAX_ANSWER_SIZE',
    help: 'most characters of JSON that the plans or the explanations of one request hold together (400 beyond it), and a validation report (cut beyond it)',
    default: String(DEFAULT_CONFIG.maxAnswerSize),
  },
  registry: { type: 'string', switch: true, env: 'REGISTRY_ENABLED', help: 'serve the entity registry', default: 'true' },
  'entity-cache-size': {
    type: 'string',
    env: 'ENTITY_CACHE_SIZE',
    help: 'registry entities kept in memory for checks (least recently used go first)',
    default: String(DEFAULT_CONFIG.entityCacheSize),
  },
  processes: {
    type: 'string',
    env: 'PROCESSES',
    help: 'front processes serving one port, all on the same store',
    default: String(DEFAULT_CONFIG.processes),
  },
  workers: {
    type: 'string',
    env: 'WORKERS',
    help: 'worker threads for bulk checks',
    default: String(DEFAULT_CONFIG.workers),
    defaultHelp: 'the number of cores',
  },
  'worker-timeout-ms': {
    type: 'string',
    env: 'WORKER_TIMEOUT_MS',
    help: 'longest a worker may spend on one bulk; then it is replaced and the bulk answered 503',
    default: String(DEFAULT_CONFIG.workerTimeoutMs),
  },
  'min-revision-wait-ms': {
    type: 'string',
    env: 'MIN_REVISION_WAIT_MS',
    help: 'longest a check with a verdict-min-revision header waits for this process to reach that revision; then 503',
    default: String(DEFAULT_CONFIG.minRevisionWaitMs),
  },
  evaluation: {
    type: 'string',
    env: 'EVALUATION',
    help: 'inline|pool|auto: where bulk checks are read and decided (auto: big or explained bodies in the worker pool), and plans made (in the pool unless inline)',
    default: DEFAULT_CONFIG.evaluation,
  },
  'log-level': { type: 'string', env: 'LOG_LEVEL', help: LOG_LEVELS.join('|'), default: DEFAULT_CONFIG.logLevel },
  socket: { type: 'string', env: 'SOCKET', help: 'also listen on this Unix domain socket (path)', default: '' },
  'metrics-port': {
    type: 'string',
    env: 'METRICS_PORT',
    help: 'serve GET /metrics on this port only, with GET /health and /ready for probes',
    default: '',
    defaultHelp: 'on the API port',
  },
  'metrics-host': {
    type: 'string',
    env: 'METRICS_HOST',
    help: 'address of the metrics port',
    default: '',
    defaultHelp: 'the --host address',
  },
  'decision-log': {
    type: 'string',
    env: 'DECISION_LOG',
    help: 'log every decision as a JSON line to this file or to stdout',
    default: '',
    defaultHelp: 'off',
  },
  'shutdown-delay-ms': {
    type: 'string',
    env: 'SHUTDOWN_DELAY_MS',
    help: 'after SIGTERM, keep serving this long with /ready at 503 before closing the listeners',
    default: String(DEFAULT_CONFIG.shutdownDelayMs),
  },
  'shutdown-grace-ms': {
    type: 'string',
    env: 'SHUTDOWN_GRACE_MS',
    help: 'after SIGTERM, exit within this long even if requests are still running',
    default: String(DEFAULT_CONFIG.shutdownGraceMs),
  },
  'audit-values': {
    type: 'string',
    switch: true,
    env: 'AUDIT_VALUES',
    help: 'record registry attribute values in the audit trail, not only which keys changed',
    default: 'false',
  },
  'audit-retention': {
    type: 'string',
    env: 'AUDIT_RETENTION',
    help: 'audit records kept: forever, an age (90d, 12h), a count (100000), or both (90d,100000)',
    default: 'forever',
  },
  'recent-denials': {
    type: 'string',
    env: 'RECENT_DENIALS',
    help: 'denied checks the live view keeps in memory (0: none)',
    default: String(DEFAULT_CONFIG.recentDenials),
  },
  'recent-denials-values': {
    type: 'string',
    switch: true,
    env: 'RECENT_DENIALS_VALUES',
    help: 'show the attribute values of recent denials, not only their keys',
    default: 'false',
  },
} satisfies Record<string, StartOption>;
type OptionName = keyof typeof OPTIONS;
export const START_OPTIONS: Readonly<Record<OptionName, StartOption>> = OPTIONS;

const BOOLEAN_WORDS = ['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'];

/**
 * Writes each switch as `--name=value`, the one form parseArgs reads for a string option:
 * `--name` alone is on, `--no-name` off, and `--name true` keeps its value.
 */
function spellSwitches(args: string[]): string[] {
  const isSwitch = (name: string) => Object.hasOwn(START_OPTIONS, name) && START_OPTIONS[name as OptionName].switch === true;
  const spelled: string[] = [];
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (arg === '--') {
      spelled.push(...args.slice(index));
      break;
    }
    const name = arg.slice(2);
    if (arg.startsWith('--no-') && isSwitch(arg.slice(5))) {
      spelled.push(`--${arg.slice(5)}=false`);
    } else if (arg.startsWith('--') && isSwitch(name)) {
      const next = args[index + 1];
      const valueFollows = next !== undefined && BOOLEAN_WORDS.includes(next.trim().toLowerCase());
      spelled.push(`--${name}=${valueFollows ? next : 'true'}`);
      if (valueFollows) index++;
    } else {
      spelled.push(arg);
    }
  }
  return spelled;
}

function parseInteger(name: string, text: string, min: number, max: number): number {
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
function parseTrustProxy(name: string, text: string): Config['trustProxy'] {
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
function parseHosts(name: string, text: string): string[] {
  if (text.trim() === '') return [];
  const hosts = text.split(',').map((entry) => entry.trim().toLowerCase());
  const bad = hosts.find((host) => isIP(host) === 0 && !HOST_NAME.test(host));
  if (bad !== undefined) throw new ConfigError(`${name} takes host names and IP addresses, comma-separated, with no port or scheme; got '${bad}'`);
  return hosts;
}

/**
 * Whether admin authentication is on, and why: ADMIN_AUTHN_REQUIRED (its flag or variable) when it
 * is given, else whether a key is set. Only an explicit false keeps it off with a key set, and the
 * reason then says the key is ignored.
 */
function adminAuthentication(
  setting: { label: string; text: string },
  apiKey: string,
  keysFile: { label: string; text: string },
): { required: boolean; reason: string } {
  const keys = [...(apiKey.trim() === '' ? [] : ['ADMIN_API_KEY']), ...(keysFile.text.trim() === '' ? [] : [keysFile.label])];
  const keysAre = `${keys.join(' and ')} ${keys.length === 1 ? 'is' : 'are'}`;
  if (setting.text.trim() === '') {
    return keys.length === 0 ? { required: false, reason: 'off: no admin key is set' } : { required: true, reason: `on: ${keysAre} set` };
  }
  if (parseBoolean(setting.label, setting.text)) return { required: true, reason: `on: ${setting.label} is true` };
  return { required: false, reason: keys.length === 0 ? `off: ${setting.label} is false` : `off: ${setting.label} is false, so ${keysAre} ignored` };
}

function parseBoolean(name: string, text: string): boolean {
  const normalized = text.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(normalized)) return true;
  if (['false', '0', 'no', 'off', ''].includes(normalized)) return false;
  throw new ConfigError(`${name} must be true or false, got '${text}'`);
}

/**
 * The configuration of `verdict start` from its flags and the environment; flags win over variables.
 * Throws ConfigError, naming the flag or variable to fix, when anything is unusable.
 */
export function loadConfig(args: string[], env: NodeJS.ProcessEnv): Config {
  let values: Partial<Record<OptionName, string>>;
  try {
    const options = Object.fromEntries(
      Object.keys(START_OPTIONS).map((name) => [name, { type: 'string' as const }]),
    ) as Record<OptionName, { type: 'string' }>;
    values = parseArgs({ args: spellSwitches(args), options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  const read = (name: OptionName): { label: string; text: string } => {
    const option = START_OPTIONS[name];
    const fromFlag = values[name];
    if (fromFlag !== undefined) return { label: `--${name}`, text: fromFlag };
    const fromEnv = env[option.env];
    if (fromEnv !== undefined) return { label: option.env, text: fromEnv };
    return { label: `--${name}`, text: option.default };
  };

  const port = read('port');
  const adminKeysFile = read('admin-keys-file');
  const adminApiKey = env.ADMIN_API_KEY ?? '';
  const adminAuth = adminAuthentication(read('admin-authn-required'), adminApiKey, adminKeysFile);
  const allowOpenAdmin = read('allow-open-admin');
  const adminHosts = read('admin-hosts');
  const trustProxy = read('trust-proxy');
  const bulk = read('bulk-check-max-requests');
  const integer = (name: OptionName, min: number, max: number) => {
    const { label, text } = read(name);
    return parseInteger(label, text, min, max);
  };
  const registry = read('registry');
  const entityCacheSize = read('entity-cache-size');
  const workers = read('workers');
  const processes = read('processes');
  const evaluation = read('evaluation');
  if (!(EVALUATION_MODES as readonly string[]).includes(evaluation.text)) {
    throw new ConfigError(`${evaluation.label} must be one of ${EVALUATION_MODES.join(', ')}, got '${evaluation.text}'`);
  }
  const operatorStyle = read('operator-style');
  if (!(OPERATOR_STYLES as readonly string[]).includes(operatorStyle.text)) {
    throw new ConfigError(`${operatorStyle.label} must be one of ${OPERATOR_STYLES.join(', ')}, got '${operatorStyle.text}'`);
  }
  const logLevel = read('log-level');
  const host = read('host').text.trim();
  const dataDir = read('data-dir').text.trim();
  if (host === '') throw new ConfigError('--host (HOST) must not be empty');
  if (dataDir === '') throw new ConfigError('--data-dir (DATA_DIR) must not be empty');
  if (!LOG_LEVELS.includes(logLevel.text)) {
    throw new ConfigError(`${logLevel.label} must be one of ${LOG_LEVELS.join(', ')}, got '${logLevel.text}'`);
  }
  const mongodbUri = read('mongodb-uri').text.trim();
  const storeOption = read('store');
  const store = storeOption.text.trim() === '' ? (mongodbUri === '' ? 'embedded' : 'mongodb') : storeOption.text.trim();
  if (!(STORES as readonly string[]).includes(store)) {
    throw new ConfigError(`${storeOption.label} must be one of ${STORES.join(', ')}, got '${storeOption.text}'`);
  }
  if (store === 'mongodb' && mongodbUri === '') {
    throw new ConfigError('the mongodb store needs a connection string: set --mongodb-uri or MONGODB_URI');
  }
  const mongodbDatabase = read('mongodb-db').text.trim();
  if (!/^[^/\\. "$*<>:|?]{1,63}$/.test(mongodbDatabase)) {
    throw new ConfigError(`--mongodb-db (MONGODB_DB) is not a valid MongoDB database name: '${mongodbDatabase}'`);
  }
  const auditValues = read('audit-values');
  const auditRetention = read('audit-retention');
  let retention: AuditRetention | undefined;
  try {
    retention = parseRetention(auditRetention.text);
  } catch (error) {
    throw new ConfigError(`${auditRetention.label}: ${(error as Error).message}`);
  }
  const metricsPort = read('metrics-port');
  const recentDenialsValues = read('recent-denials-values');
  const shutdownDelay = read('shutdown-delay-ms');
  const shutdownGrace = read('shutdown-grace-ms');
  const config: Config = {
    host,
    store: store as StoreKind,
    mongodbUri,
    mongodbDatabase,
    port: parseInteger(port.label, port.text, 0, 65535),
    dataDir,
    policiesDir: read('policies').text.trim(),
    adminAuthRequired: adminAuth.required,
    adminAuthReason: adminAuth.reason,
    allowOpenAdmin: parseBoolean(allowOpenAdmin.label, allowOpenAdmin.text),
    adminHosts: parseHosts(adminHosts.label, adminHosts.text),
    adminApiKey,
    adminKeysFile: adminKeysFile.text.trim(),
    adminAuthFailuresPerMinute: integer('admin-auth-failures-per-minute', 1, 1_000_000),
    trustProxy: parseTrustProxy(trustProxy.label, trustProxy.text),
    bulkCheckMaxRequests: parseInteger(bulk.label, bulk.text, 1, 1_000_000),
    bulkRegisterMaxEntities: integer('bulk-register-max-entities', 1, 100_000),
    operatorStyle: operatorStyle.text as OperatorStyle,
    bodyLimit: integer('body-limit', 256, 1024 * 1024 * 1024),
    // Deeper than this, recursive JSON handling (serialization, comparison) would risk the stack.
    maxJsonDepth: integer('max-json-depth', 4, 1000),
    maxStringLength: integer('max-string-length', 16, 1024 * 1024 * 1024),
    maxRulesPerPolicy: integer('max-rules-per-policy', 1, 1_000_000),
    maxConditionsPerRule: integer('max-conditions-per-rule', 1, 1_000_000),
    maxPageSize: integer('max-page-size', 1, 1_000_000),
    maxPlanSize: integer('max-plan-size', 1024, 1024 * 1024 * 1024),
    maxAnswerSize: integer('max-answer-size', 1024, 1024 * 1024 * 1024),
    registryEnabled: parseBoolean(registry.label, registry.text),
    entityCacheSize: parseInteger(entityCacheSize.label, entityCacheSize.text, 1, 100_000_000),
    processes: parseInteger(processes.label, processes.text, 1, 256),
    workers: parseInteger(workers.label, workers.text, 1, 256),
    workerTimeoutMs: integer('worker-timeout-ms', 10, 3_600_000),
    minRevisionWaitMs: integer('min-revision-wait-ms', 0, 600_000),
    evaluation: evaluation.text as Evaluation,
    logLevel: logLevel.text,
    socket: read('socket').text.trim(),
    metricsPort: metricsPort.text.trim() === '' ? undefined : parseInteger(metricsPort.label, metricsPort.text, 0, 65535),
    metricsHost: read('metrics-host').text.trim() || undefined,
    decisionLog: read('decision-log').text.trim(),
    shutdownDelayMs: parseInteger(shutdownDelay.label, shutdownDelay.text, 0, 3_600_000),
    shutdownGraceMs: parseInteger(shutdownGrace.label, shutdownGrace.text, 1, 3_600_000),
    auditValues: parseBoolean(auditValues.label, auditValues.text),
    auditRetention: retention,
    recentDenials: integer('recent-denials', 0, 100_000),
    recentDenialsValues: parseBoolean(recentDenialsValues.label, recentDenialsValues.text),
  };
  if (config.shutdownDelayMs >= config.shutdownGraceMs) {
    throw new ConfigError(
      `${shutdownDelay.label} (${config.shutdownDelayMs}) must be shorter than ${shutdownGrace.label} (${config.shutdownGraceMs})`,
    );
  }
  if (PLAN_ANSWER_GROWTH * config.maxPlanSize > config.maxAnswerSize) {
    throw new ConfigError(
      `--max-plan-size (${config.maxPlanSize}) must be at most a third of --max-answer-size (${config.maxAnswerSize}): a plan's condition and its filter (twice as long) must fit in one answer`,
    );
  }
  if (config.adminAuthRequired && config.adminApiKey.trim() === '' && config.adminKeysFile === '') {
    throw new ConfigError(
      "admin authentication is required (ADMIN_AUTHN_REQUIRED) but ADMIN_API_KEY is empty and no --admin-keys-file is set; set a key ('verdict key --name NAME' makes one)",
    );
  }
  return config;
}

/**
 * Refuses (a ConfigError) to serve the admin routes without authentication on an address other than
 * loopback, where whoever reaches it could change every policy, unless --allow-open-admin says that
 * is meant. Only the API's address counts: the metrics port serves no admin route, and a Unix socket
 * is reached from this machine only.
 */
export function checkAdminExposure(config: Config): void {
  if (config.adminAuthRequired || config.allowOpenAdmin || isLoopbackHost(config.host)) return;
  throw new ConfigError(
    `admin authentication is off and --host ${config.host} is not a loopback address: whoever reaches it could change every policy. ` +
      'Set ADMIN_API_KEY (or --admin-keys-file) to require a key, listen on 127.0.0.1, or pass --allow-open-admin (ALLOW_OPEN_ADMIN=true) if the admin interface is meant to be open',
  );
}
