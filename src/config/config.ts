import { parseArgs } from 'node:util';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseRetention } from '../audit/retention.js';
import type { AuditRetention } from '../audit/record.js';
import { OPERATOR_STYLES, type OperatorStyle } from '../engine/operators/index.js';
import { isLoopbackHost } from '../loopback.js';
import { parseDecisionLogMask } from '../decision-log/mask.js';
import {
  adminApiKeyOf,
  adminAuthentication,
  boolean,
  ConfigError,
  decisionLogTarget,
  integer,
  notEmpty,
  oneOf,
  parseHosts,
  parseInteger,
  parseTrustProxy,
  trimmed,
  httpUrl,
  type Given,
  type ParseContext,
} from './parsers.js';

export { adminApiKeyOf, ConfigError } from './parsers.js';

export const STORES = ['embedded', 'mongodb', 'mongodb-memory'] as const;
export type StoreKind = (typeof STORES)[number];

export const EVALUATION_MODES = ['inline', 'pool', 'auto'] as const;
/** inline: every check on the front thread; pool: every bulk in a worker; auto: big bulks in a worker when a core is spare (see bulkPlacement). */
export type Evaluation = (typeof EVALUATION_MODES)[number];

export const SCHEMA_ENFORCEMENTS = ['off', 'warn', 'reject'] as const;
/** off: attribute schemas are not applied; warn: checks are decided, violations counted and explained; reject: violating checks and writes are refused. */
export type SchemaEnforcement = (typeof SCHEMA_ENFORCEMENTS)[number];

/** A plan's condition and its MongoDB filter together may be this many times --max-plan-size (see PlanService). */
export const PLAN_ANSWER_GROWTH = 3;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** An option as `--help` and docs/configuration.md state it. */
export interface StartOption {
  env: string;
  help: string;
  /** The value when neither the flag nor the variable is given, as it would be written. */
  default: string;
  /** How `--help` states the default when `default` alone would not say it. */
  defaultHelp?: string;
  /** On or off: `--name` alone turns it on, `--no-name` off; `--name true|false` works too. */
  switch?: boolean;
}

/** An option of `verdict start`: the `Config` field it sets and how its text is read into it. */
interface OptionSpec<Field extends string, Value> extends StartOption {
  field: Field;
  /** Throws a ConfigError naming `given.label` when the text is unusable. */
  parse(given: Given, context: ParseContext): Value;
}

const option = <const Field extends string, Value>(spec: OptionSpec<Field, Value>): OptionSpec<Field, Value> => spec;

/**
 * The flags of `verdict start`, one entry each: its variable, what it means, its default, and the
 * `Config` field it sets and how. The `Config` type, `DEFAULT_CONFIG`, the parsing and `--help` all
 * come from this table; docs/configuration.md's table is checked against it (test/docs/docs.test.ts).
 */
const OPTIONS = {
  host: option({ field: 'host', env: 'HOST', help: 'address to listen on', default: '127.0.0.1', parse: notEmpty('--host (HOST)') }),
  port: option({ field: 'port', env: 'PORT', help: 'TCP port (0 picks a free one)', default: '8421', parse: integer(0, 65535) }),
  store: option({
    field: 'store',
    env: 'STORE',
    help: 'embedded|mongodb|mongodb-memory',
    default: '',
    defaultHelp: 'mongodb with a URI, else embedded',
    parse: ({ label, text }, { read }): StoreKind => {
      const uri = read('mongodb-uri').text.trim();
      const store = text.trim() === '' ? (uri === '' ? 'embedded' : 'mongodb') : text.trim();
      if (!(STORES as readonly string[]).includes(store)) throw new ConfigError(`${label} must be one of ${STORES.join(', ')}, got '${text}'`);
      if (store === 'mongodb' && uri === '') throw new ConfigError('the mongodb store needs a connection string: set --mongodb-uri or MONGODB_URI');
      return store as StoreKind;
    },
  }),
  'data-dir': option({
    field: 'dataDir',
    env: 'DATA_DIR',
    help: "directory of the embedded store (with --policies, by default a folder named after the policies' in the system's temporary directory, so that a policy repository is left as it was)",
    default: './data',
    parse: dataDirectory,
  }),
  policies: option({
    field: 'policiesDir',
    env: 'POLICIES_DIR',
    help: 'serve the policies of the *.json/*.yaml/*.yml files in this directory, reloaded when they change; policy writes answer 409',
    default: '',
    parse: trimmed,
  }),
  schemas: option({
    field: 'schemasFile',
    env: 'SCHEMAS_FILE',
    help: 'JSON Schemas of the attributes of principals, resources, actions and the context (see docs/schemas.md); with --policies, a schemas.json beside the policies is read when this is not given',
    default: '',
    parse: trimmed,
  }),
  'schema-enforcement': option({
    field: 'schemaEnforcement',
    env: 'SCHEMA_ENFORCEMENT',
    help: 'off|warn|reject: what a check, a registration or a policy that breaks the attribute schemas gets (warn: decided, counted and explained; reject: refused)',
    default: 'warn',
    parse: oneOf<SchemaEnforcement>(SCHEMA_ENFORCEMENTS),
  }),
  // Never logged: it may hold credentials.
  'mongodb-uri': option({ field: 'mongodbUri', env: 'MONGODB_URI', help: 'MongoDB connection string (a replica set)', default: '', parse: trimmed }),
  'mongodb-write-retry-ms': option({
    field: 'mongodbWriteRetryMs',
    env: 'MONGODB_WRITE_RETRY_MS',
    help: 'MongoDB: a write (or a snapshot read) starts no new attempt, and sends no commit again, after this long',
    default: '10000',
    parse: integer(100, 600_000),
  }),
  'mongodb-majority-timeout-ms': option({
    field: 'mongodbMajorityTimeoutMs',
    env: 'MONGODB_MAJORITY_TIMEOUT_MS',
    help: "MongoDB: the longest a write waits for a majority of the replica set to acknowledge it (its wtimeout)",
    default: '5000',
    parse: integer(100, 600_000),
  }),
  'mongodb-answer-timeout-ms': option({
    field: 'mongodbAnswerTimeoutMs',
    env: 'MONGODB_ANSWER_TIMEOUT_MS',
    help: 'MongoDB: the longest the driver waits for one answer or a free connection; must exceed --mongodb-majority-timeout-ms',
    default: '15000',
    parse: integer(100, 600_000),
  }),
  'mongodb-selection-timeout-ms': option({
    field: 'mongodbSelectionTimeoutMs',
    env: 'MONGODB_SELECTION_TIMEOUT_MS',
    help: 'MongoDB: the longest the driver waits for a member it can use, at start and for each operation',
    default: '10000',
    parse: integer(100, 600_000),
  }),
  'store-maintenance': option({
    field: 'storeMaintenance',
    env: 'STORE_MAINTENANCE',
    help: 'on|off: whether this process maintains the MongoDB database (indexes, epoch, backfill, recount); off: it never creates or drops anything (a decision-only sidecar)',
    default: 'on',
    parse: oneOf(['on', 'off'] as const),
  }),
  'mongodb-db': option({
    field: 'mongodbDatabase',
    env: 'MONGODB_DB',
    help: 'MongoDB database name',
    default: 'verdict',
    parse: ({ text }) => {
      const name = text.trim();
      if (!/^[^/\\. "$*<>:|?]{1,63}$/.test(name)) throw new ConfigError(`--mongodb-db (MONGODB_DB) is not a valid MongoDB database name: '${name}'`);
      return name;
    },
  }),
  'admin-authn-required': option({
    field: 'adminAuthRequired',
    switch: true,
    env: 'ADMIN_AUTHN_REQUIRED',
    help: 'require the WAY-API-KEY header (ADMIN_API_KEY or a key of --admin-keys-file) on admin routes; false turns it off even with a key set',
    default: '',
    defaultHelp: 'on when a key is set',
    parse: (given, context) => adminAuthentication(given, context).required,
  }),
  'allow-open-admin': option({
    field: 'allowOpenAdmin',
    switch: true,
    env: 'ALLOW_OPEN_ADMIN',
    help: 'start with admin authentication off on an address other than loopback (otherwise refused): whoever reaches it may change every policy',
    default: 'false',
    parse: boolean,
  }),
  'admin-hosts': option({
    field: 'adminHosts',
    env: 'ADMIN_HOSTS',
    help: 'while admin authentication is off, host names admin requests may address besides loopback and --host (their Host header), comma-separated',
    default: '',
    parse: ({ label, text }) => parseHosts(label, text),
  }),
  // Only read when admin authentication is required.
  'admin-keys-file': option({
    field: 'adminKeysFile',
    env: 'ADMIN_KEYS_FILE',
    help: "named admin keys, a 'name role sha256-digest' line each (roles admin, read); reloaded when it changes",
    default: '',
    parse: trimmed,
  }),
  'admin-auth-failures-per-minute': option({
    field: 'adminAuthFailuresPerMinute',
    env: 'ADMIN_AUTH_FAILURES_PER_MINUTE',
    help: 'failed admin authentications a non-loopback client may make per minute; then 429 until the minute is over',
    default: '10',
    parse: integer(1, 1_000_000),
  }),
  // Never logged: the bearer token AuthZEN requests (/access/v1/...) must carry; empty, they are public like /check.
  'authzen-token': option({
    field: 'authzenToken',
    env: 'AUTHZEN_TOKEN',
    help: 'require `Authorization: Bearer <token>` on the AuthZEN routes (/access/v1/...); prefer the variable, since flags show in the process list',
    default: '',
    defaultHelp: 'none: public, like /check',
    parse: trimmed,
  }),
  'trust-proxy': option({
    field: 'trustProxy',
    env: 'TRUST_PROXY',
    help: 'take the client address from X-Forwarded-For sent by these proxies: addresses, CIDR ranges, loopback|linklocal|uniquelocal; true: any peer (one hop)',
    default: 'false',
    parse: ({ label, text }) => parseTrustProxy(label, text),
  }),
  'bulk-check-max-requests': option({
    field: 'bulkCheckMaxRequests',
    env: 'BULK_CHECK_MAX_REQUESTS',
    help: 'most checks accepted in one POST /check/bulk',
    default: '1000',
    parse: integer(1, 1_000_000),
  }),
  'bulk-register-max-entities': option({
    field: 'bulkRegisterMaxEntities',
    env: 'BULK_REGISTER_MAX_ENTITIES',
    help: 'most entities registered by one POST /admin/fetchers/registry/entities/$bulk (and per batch of import)',
    default: '1000',
    parse: integer(1, 100_000),
  }),
  'operator-style': option({
    field: 'operatorStyle',
    env: 'OPERATOR_STYLE',
    help: "spec|eunomia: eunomia answers 'equals', 'not_equals', 'gt'... where a policy holds '==', '!=', '>'... (for Eunomia's Python SDK)",
    default: 'spec',
    parse: oneOf<OperatorStyle>(OPERATOR_STYLES),
  }),
  'body-limit': option({
    field: 'bodyLimit',
    env: 'BODY_LIMIT',
    help: 'largest request body in bytes (413 beyond it)',
    default: '1048576',
    parse: integer(256, 1024 * 1024 * 1024),
  }),
  'max-json-depth': option({
    field: 'maxJsonDepth',
    env: 'MAX_JSON_DEPTH',
    help: 'deepest nesting of lists and objects in a request body',
    default: '100',
    // Deeper than this, recursive JSON handling (serialization, comparison) would risk the stack.
    parse: integer(4, 1000),
  }),
  'max-string-length': option({
    field: 'maxStringLength',
    env: 'MAX_STRING_LENGTH',
    help: 'longest string (keys included) in a request body, in characters',
    default: '65536',
    parse: integer(16, 1024 * 1024 * 1024),
  }),
  'max-rules-per-policy': option({
    field: 'maxRulesPerPolicy',
    env: 'MAX_RULES_PER_POLICY',
    help: 'most rules in one policy',
    default: '1000',
    parse: integer(1, 1_000_000),
  }),
  'max-conditions-per-rule': option({
    field: 'maxConditionsPerRule',
    env: 'MAX_CONDITIONS_PER_RULE',
    help: 'most conditions (principal and resource together) in one rule',
    default: '256',
    parse: integer(1, 1_000_000),
  }),
  'max-page-size': option({
    field: 'maxPageSize',
    env: 'MAX_PAGE_SIZE',
    help: 'largest limit of one registry list request',
    default: '1000',
    parse: integer(1, 1_000_000),
  }),
  'search-max-candidates': option({
    field: 'searchMaxCandidates',
    env: 'SEARCH_MAX_CANDIDATES',
    help: 'most registered entities one AuthZEN subject or resource search decides; past them its page ends early, with a next_token that goes on from there',
    default: '10000',
    parse: integer(1, 100_000_000),
  }),
  'max-plan-size': option({
    field: 'maxPlanSize',
    env: 'MAX_PLAN_SIZE',
    help: "most characters of JSON in one plan's condition (its MongoDB filter: twice as many); a larger plan is stated coarser, or refused",
    default: '262144',
    parse: integer(1024, 1024 * 1024 * 1024),
  }),
  'max-answer-size': option({
    field: 'maxAnswerSize',
    env: 'MAX_ANSWER_SIZE',
    help: 'most characters of JSON that the plans or the explanations of one request hold together (400 beyond it), and a validation report (cut beyond it)',
    default: '1048576',
    parse: integer(1024, 1024 * 1024 * 1024),
  }),
  registry: option({ field: 'registryEnabled', switch: true, env: 'REGISTRY_ENABLED', help: 'serve the entity registry', default: 'true', parse: boolean }),
  'entity-cache-size': option({
    field: 'entityCacheSize',
    env: 'ENTITY_CACHE_SIZE',
    help: 'registry entities kept in memory for checks (least recently used go first)',
    default: '100000',
    parse: integer(1, 100_000_000),
  }),
  'entity-cache-bytes': option({
    field: 'entityCacheBytes',
    env: 'ENTITY_CACHE_BYTES',
    help: 'the most the entity cache holds, in bytes of its entities as JSON (least recently used go first; a larger entity is read from the store each time)',
    default: String(64 * 1024 * 1024),
    parse: integer(1024, 2 ** 40),
  }),
  processes: option({
    field: 'processes',
    env: 'PROCESSES',
    help: 'front processes serving one port, all on the same store',
    default: '1',
    parse: integer(1, 256),
  }),
  workers: option({
    field: 'workers',
    env: 'WORKERS',
    help: "worker threads for bulk checks and plans; auto: one for each whole core beside the front thread's (by the cgroup CPU quota), within half the cgroup memory limit, none kept idle on one core",
    default: 'auto',
    parse: (given) => (given.text === 'auto' ? ('auto' as const) : integer(1, 256)(given)),
  }),
  'worker-timeout-ms': option({
    field: 'workerTimeoutMs',
    env: 'WORKER_TIMEOUT_MS',
    help: 'longest a worker may spend on one bulk; then it is replaced and the bulk answered 503',
    default: '10000',
    parse: integer(10, 3_600_000),
  }),
  'min-revision-wait-ms': option({
    field: 'minRevisionWaitMs',
    env: 'MIN_REVISION_WAIT_MS',
    help: 'longest a check with a verdict-min-revision header waits for this process to reach that revision; then 503',
    default: '2000',
    parse: integer(0, 600_000),
  }),
  evaluation: option({
    field: 'evaluation',
    env: 'EVALUATION',
    help: 'inline|pool|auto: where bulk checks are read and decided (auto: big or explained bodies in the worker pool when the cores and cgroup CPU quota leave one beside the front thread), and plans made (in the pool unless inline)',
    default: 'auto',
    parse: oneOf<Evaluation>(EVALUATION_MODES),
  }),
  'log-level': option({ field: 'logLevel', env: 'LOG_LEVEL', help: LOG_LEVELS.join('|'), default: 'info', parse: oneOf(LOG_LEVELS) }),
  socket: option({ field: 'socket', env: 'SOCKET', help: 'also listen on this Unix domain socket (path)', default: '', parse: trimmed }),
  'metrics-port': option({
    field: 'metricsPort',
    env: 'METRICS_PORT',
    help: 'serve GET /metrics on this port only, with GET /health and /ready for probes',
    default: '',
    defaultHelp: 'on the API port',
    parse: ({ label, text }) => (text.trim() === '' ? undefined : parseInteger(label, text, 0, 65535)),
  }),
  // A sidecar keeps its API on loopback and opens the metrics port to the kubelet.
  'metrics-host': option({
    field: 'metricsHost',
    env: 'METRICS_HOST',
    help: 'address of the metrics port',
    default: '',
    defaultHelp: 'the --host address',
    parse: ({ text }) => text.trim() || undefined,
  }),
  tokens: option({
    field: 'tokens',
    env: 'TOKENS',
    help: 'verify bearer tokens (signed JWTs) with the key sets this YAML or JSON file names (JWKS URLs or files): their claims become the principal\'s claims attribute',
    default: '',
    defaultHelp: 'no tokens',
    parse: trimmed,
  }),
  'ext-authz': option({
    field: 'extAuthz',
    env: 'EXT_AUTHZ',
    help: "answer Envoy's HTTP external authorization under /ext-authz, mapping each request to a check as this YAML or JSON file says",
    default: '',
    defaultHelp: 'off',
    parse: trimmed,
  }),
  'ext-authz-grpc': option({
    field: 'extAuthzGrpc',
    env: 'EXT_AUTHZ_GRPC',
    help: "also answer Envoy's gRPC external authorization (envoy.service.auth.v3.Authorization/Check, and grpc.health.v1) on this port, or on this Unix socket path, with the --ext-authz mapping",
    default: '',
    defaultHelp: 'off',
    parse: ({ label, text }) => {
      const target = text.trim();
      if (target === '' || target.startsWith('/')) return target;
      return String(parseInteger(label, target, 0, 65535));
    },
  }),
  'otlp-endpoint': option({
    field: 'otlpEndpoint',
    env: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    help: 'export a trace span for each request that decides, over OTLP/HTTP (JSON) to this collector (its base URL; /v1/traces is added)',
    default: '',
    defaultHelp: 'off',
    parse: ({ label, text }) => {
      const url = httpUrl(label, text);
      if (url === undefined) return '';
      return url.pathname.endsWith('/v1/traces') ? url.href : `${url.href.replace(/\/$/, '')}/v1/traces`;
    },
  }),
  'otlp-traces-endpoint': option({
    field: 'otlpTracesEndpoint',
    env: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    help: 'as --otlp-endpoint, but the whole URL spans are posted to, taken as it is; it wins over --otlp-endpoint',
    default: '',
    defaultHelp: 'off',
    parse: ({ label, text }) => httpUrl(label, text)?.href ?? '',
  }),
  'trace-sample-ratio': option({
    field: 'traceSampleRatio',
    env: 'OTEL_TRACES_SAMPLER_ARG',
    help: "the share of traces started here that are sampled, 0 to 1; a caller's traceparent that is sampled is followed whatever it is (parent-based)",
    default: '1',
    parse: ({ label, text }) => {
      const ratio = Number(text.trim());
      if (!(ratio >= 0 && ratio <= 1) || text.trim() === '') throw new ConfigError(`${label} must be a number from 0 to 1, got '${text}'`);
      return ratio;
    },
  }),
  'otel-service-name': option({
    field: 'otelServiceName',
    env: 'OTEL_SERVICE_NAME',
    help: "the service.name of the spans' resource",
    default: 'verdict',
    parse: trimmed,
  }),
  'decision-log': option({
    field: 'decisionLog',
    env: 'DECISION_LOG',
    help: 'log every decision as a JSON line to this file, to stdout, or to a collector at this http(s) URL (posted in batches)',
    default: '',
    defaultHelp: 'off',
    parse: decisionLogTarget,
  }),
  'decision-log-mask': option({
    field: 'decisionLogMask',
    env: 'DECISION_LOG_MASK',
    help: 'attributes whose values the decision log never writes: <part>.<attribute>[=hash], comma-separated (part: principal, resource, action, context)',
    default: '',
    defaultHelp: 'none',
    parse: ({ label, text }) => {
      try {
        return parseDecisionLogMask(text);
      } catch (error) {
        throw new ConfigError(`${label} ${(error as Error).message}`);
      }
    },
  }),
  'shutdown-delay-ms': option({
    field: 'shutdownDelayMs',
    env: 'SHUTDOWN_DELAY_MS',
    help: 'after SIGTERM, keep serving this long with /ready at 503 before closing the listeners',
    default: '0',
    parse: integer(0, 3_600_000),
  }),
  'shutdown-grace-ms': option({
    field: 'shutdownGraceMs',
    env: 'SHUTDOWN_GRACE_MS',
    help: 'after SIGTERM, exit within this long even if requests are still running',
    default: '10000',
    parse: integer(1, 3_600_000),
  }),
  'audit-values': option({
    field: 'auditValues',
    switch: true,
    env: 'AUDIT_VALUES',
    help: 'record registry attribute values in the audit trail, not only which keys changed',
    default: 'false',
    parse: boolean,
  }),
  'audit-retention': option({
    field: 'auditRetention',
    env: 'AUDIT_RETENTION',
    help: 'audit records kept: forever, an age (90d, 12h), a count (100000), or both (90d,100000)',
    default: 'forever',
    parse: ({ label, text }): AuditRetention | undefined => {
      try {
        return parseRetention(text);
      } catch (error) {
        throw new ConfigError(`${label}: ${(error as Error).message}`);
      }
    },
  }),
  'recent-checks': option({
    field: 'recentChecks',
    env: 'RECENT_CHECKS',
    help: 'checks this process keeps in memory, as it read them, for impact previews to replay (0: none; a check over 16 KB is not kept)',
    default: '1000',
    parse: integer(0, 100_000),
  }),
  'recent-checks-rate': option({
    field: 'recentChecksRate',
    env: 'RECENT_CHECKS_RATE',
    help: 'most checks kept per second for impact previews (0: every check); a kept check lives on past the young heap, so keeping all costs CPU under load',
    default: '200',
    parse: integer(0, 1_000_000),
  }),
  'shadow-sample-percent': option({
    field: 'shadowSamplePercent',
    env: 'SHADOW_SAMPLE_PERCENT',
    help: 'the share of checks that shadow policies also decide, in percent (100: every check)',
    default: '100',
    parse: integer(0, 100),
  }),
  'recent-denials': option({
    field: 'recentDenials',
    env: 'RECENT_DENIALS',
    help: 'denied checks the live view keeps in memory (0: none)',
    default: '200',
    parse: integer(0, 100_000),
  }),
  'recent-denials-rate': option({
    field: 'recentDenialsRate',
    env: 'RECENT_DENIALS_RATE',
    help: 'most denied checks the live view keeps per second (0: every one); a kept check lives on past the young heap, so keeping every denial of a flood grows the heap',
    default: '200',
    parse: integer(0, 1_000_000),
  }),
  'recent-denials-values': option({
    field: 'recentDenialsValues',
    switch: true,
    env: 'RECENT_DENIALS_VALUES',
    help: 'show the attribute values of recent denials, not only their keys',
    default: 'false',
    parse: boolean,
  }),
  'settle-memory': option({
    field: 'settleMemory',
    switch: true,
    env: 'SETTLE_MEMORY',
    help: 'give back the memory the heap grew to, once started and whenever no check came for 10 s after it grew: a pause of some tens of ms while quiet (false: never)',
    default: 'true',
    parse: boolean,
  }),
};
type Options = typeof OPTIONS;
type OptionName = keyof Options;
export const START_OPTIONS: Readonly<Record<OptionName, StartOption>> = OPTIONS;

/** The configuration of `verdict start`: a field per option, as its parse reads it, and what admin authentication derives. */
export type Config = { -readonly [Name in OptionName as Options[Name]['field']]: ReturnType<Options[Name]['parse']> } & {
  /** Whether admin authentication is on and why, in words for the start's log line (never a key). */
  adminAuthReason: string;
  /** ADMIN_API_KEY, a variable only (never a flag, so never in a process list); only read when adminAuthRequired; never logged. */
  adminApiKey: string;
  /**
   * Test-only, off unless VERDICT_TEST_PROCESS_HEADER=1: every answer names the process that gave it
   * (header `verdict-test-process`), so that tests can tell the processes of a cluster apart.
   */
  testProcessHeader: boolean;
};

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

/** Each setting as given by `args` (flags win) or `env`, else its default. Throws ConfigError for a flag not understood. */
function parseContext(args: string[], env: NodeJS.ProcessEnv): ParseContext {
  let values: Partial<Record<string, string>>;
  try {
    const options = Object.fromEntries(Object.keys(START_OPTIONS).map((name) => [name, { type: 'string' as const }]));
    values = parseArgs({ args: spellSwitches(args), options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  const read = (name: string): Given => {
    const option = START_OPTIONS[name as OptionName];
    const fromFlag = values[name];
    if (fromFlag !== undefined) return { label: `--${name}`, text: fromFlag };
    const fromEnv = env[option.env];
    if (fromEnv !== undefined) return { label: option.env, text: fromEnv };
    return { label: `--${name}`, text: option.default, defaulted: true };
  };
  return { read, env };
}

/** Whether `verdict start` with `args` and `env` requires admin authentication (see adminAuthentication). */
export function requiresAdminAuthentication(args: string[], env: NodeJS.ProcessEnv): boolean {
  const context = parseContext(args, env);
  return adminAuthentication(context.read('admin-authn-required'), context).required;
}

/**
 * Where the embedded store lives: as given, else `./data`; but a start serving a policy directory
 * keeps it out of that directory's repository, in a folder of the temporary directory named by the
 * policies' absolute path (the same one at each start).
 */
function dataDirectory(given: Given, { read }: ParseContext): string {
  const policies = read('policies').text.trim();
  if (!given.defaulted || policies === '') return notEmpty('--data-dir (DATA_DIR)')(given);
  return join(tmpdir(), `verdict-data-${createHash('sha256').update(resolve(policies)).digest('hex').slice(0, 16)}`);
}

/**
 * The configuration of `verdict start` from its flags and the environment; flags win over variables.
 * Throws ConfigError, naming the flag or variable to fix, when anything is unusable.
 */
export function loadConfig(args: string[], env: NodeJS.ProcessEnv): Config {
  const context = parseContext(args, env);
  const { read } = context;
  const parsed = Object.fromEntries(
    Object.entries(OPTIONS).map(([name, spec]) => [spec.field, (spec.parse as (given: Given, context: ParseContext) => unknown)(read(name), context)]),
  );
  const config = {
    ...parsed,
    adminAuthReason: adminAuthentication(read('admin-authn-required'), context).reason,
    adminApiKey: adminApiKeyOf(env),
    testProcessHeader: env.VERDICT_TEST_PROCESS_HEADER === '1',
  } as Config;
  if (config.shutdownDelayMs >= config.shutdownGraceMs) {
    throw new ConfigError(
      `${read('shutdown-delay-ms').label} (${config.shutdownDelayMs}) must be shorter than ${read('shutdown-grace-ms').label} (${config.shutdownGraceMs})`,
    );
  }
  if (config.mongodbAnswerTimeoutMs <= config.mongodbMajorityTimeoutMs) {
    throw new ConfigError(
      `${read('mongodb-answer-timeout-ms').label} (${config.mongodbAnswerTimeoutMs}) must be longer than ${read('mongodb-majority-timeout-ms').label} (${config.mongodbMajorityTimeoutMs}): MongoDB's own answer to a majority wait must come before the driver gives up on it`,
    );
  }
  if (PLAN_ANSWER_GROWTH * config.maxPlanSize > config.maxAnswerSize) {
    throw new ConfigError(
      `--max-plan-size (${config.maxPlanSize}) must be at most a third of --max-answer-size (${config.maxAnswerSize}): a plan's condition and its filter (twice as long) must fit in one answer`,
    );
  }
  if (config.extAuthzGrpc !== '' && config.extAuthz === '') {
    throw new ConfigError('--ext-authz-grpc (EXT_AUTHZ_GRPC) answers with the --ext-authz mapping: give --ext-authz <file> too');
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

/** The configuration of a start given no flag and no variable. */
export const DEFAULT_CONFIG: Config = loadConfig([], {});
