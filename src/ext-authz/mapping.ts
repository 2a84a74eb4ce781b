import type { FromSchema } from 'json-schema-to-ts';
import { ConfigError } from '../config/config.js';
import { DocumentError, readDocument } from '../document-files.js';
import { createAjv } from '../schemas/validation.js';
import { CLAIMS_ATTRIBUTE } from '../requests/check-request.js';

/** Where Envoy's authorization requests arrive: its `path_prefix` (Istio's `pathPrefix`). */
export const EXT_AUTHZ_PREFIX = '/ext-authz';

/** The header whose hops proxies append; what comes before them, the client wrote. */
const FORWARDED_FOR = 'x-forwarded-for';
/** The context attribute of the client address read from FORWARDED_FOR. */
const CLIENT_ADDRESS = 'client_address';

/** The action of a method, unless the mapping's `actions` or a route's say otherwise. */
const DEFAULT_ACTIONS: Readonly<Record<string, string>> = { GET: 'read', HEAD: 'read', OPTIONS: 'read', POST: 'create', PUT: 'update', PATCH: 'update', DELETE: 'delete' };
const MAX_ROUTES = 1000;
const NAME = '^[A-Za-z_][A-Za-z0-9_]{0,63}$';
const HEADER = '^[a-z0-9-]{1,128}$';

const actionTable = { type: 'object', propertyNames: { pattern: '^[A-Z]{1,20}$' }, additionalProperties: { type: 'string', minLength: 1, maxLength: 256 } } as const;
const headerTable = { type: 'object', propertyNames: { pattern: HEADER }, additionalProperties: { type: 'string', pattern: NAME } } as const;

export const extAuthzMappingSchema = {
  type: 'object',
  properties: {
    principal: {
      type: 'object',
      properties: {
        uri: {
          type: 'string',
          minLength: 1,
          maxLength: 1024,
          description: "A template of the principal's uri over its token's claims (`user:{sub}`); `{key_set}` is the name of the key set that verified the token. With two key sets or more, the sets' uris must differ before their first claim.",
        },
        key_sets: {
          type: 'object',
          propertyNames: { pattern: '^[A-Za-z0-9_.-]{1,64}$' },
          additionalProperties: { type: 'string', minLength: 1, maxLength: 1024 },
          description: "A key set's own template of its principals' uris, in place of `uri` (`partners: \"partner:{sub}\"`).",
        },
        headers: { ...headerTable, description: 'Forwarded request headers read as principal attributes (header: attribute). Only headers the mesh itself sets: a client can send any other.' },
      },
      additionalProperties: false,
    },
    actions: { ...actionTable, description: 'The action of each method, over the default table (GET read, POST create, PUT and PATCH update, DELETE delete).' },
    context: {
      type: 'object',
      properties: { headers: { ...headerTable, description: 'Forwarded request headers read as context attributes (header: attribute).' } },
      additionalProperties: false,
    },
    client_address: {
      type: 'object',
      description:
        "The client's address as the context attribute `client_address`: the hop of `x-forwarded-for` that Envoy appended (with `use_remote_address`), or, behind `trusted_hops` proxies that each append one, the hop the first of them appended. A request with fewer hops is denied.",
      properties: { trusted_hops: { type: 'integer', minimum: 0, maximum: 10, default: 0 } },
      additionalProperties: false,
    },
    routes: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_ROUTES,
      items: {
        type: 'object',
        properties: {
          path: { type: 'string', pattern: '^/', maxLength: 1024, description: 'A path template: literal segments and `{name}` parameters, each one whole segment.' },
          methods: { type: 'array', minItems: 1, items: { type: 'string', pattern: '^[A-Z]{1,20}$' } },
          resource_type: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,128}$', description: 'The resource uri is `<type>:<id>` (the `id` parameter, else the last one).' },
          resource_uri: { type: 'string', minLength: 1, maxLength: 1024, description: 'A template of the resource uri over the parameters: `doc:{tenant}/{id}`.' },
          actions: actionTable,
          key_set: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$', description: "The key set (of --tokens) this route's tokens are verified by, whatever their issuer." },
        },
        required: ['path'],
        oneOf: [{ required: ['resource_type'] }, { required: ['resource_uri'] }],
        additionalProperties: false,
      },
    },
    upstream_headers: {
      type: 'object',
      properties: { principal_uri: { type: 'string', pattern: HEADER, description: "A header Envoy adds to the request it lets through: the principal's uri." } },
      additionalProperties: false,
    },
    deny_reason_to_client: { type: 'boolean', default: false, description: "Whether a denied client is told the decision's reason (policy and rule names); by default only that it is denied." },
    network: {
      type: 'object',
      description:
        "Envoy's network filter (L4, gRPC only): a CheckRequest with no HTTP part is the check of a connection, its principal and resource uris templates over " +
        '`{source_principal}` (the peer certificate\'s URI SAN, as Envoy verified it), `{source_address}`, `{destination_principal}`, `{destination_address}` and `{destination_port}`. ' +
        'A connection a template reads a missing value of is denied.',
      properties: {
        principal_uri: { type: 'string', minLength: 1, maxLength: 1024, description: 'The principal uri: `workload:{source_principal}`.' },
        resource_uri: { type: 'string', minLength: 1, maxLength: 1024, description: 'The resource uri: `service:{destination_port}`.' },
        action: { type: 'string', minLength: 1, maxLength: 256, default: 'connect', description: 'The action of every connection.' },
      },
      required: ['principal_uri', 'resource_uri'],
      additionalProperties: false,
    },
  },
  anyOf: [{ required: ['routes'] }, { required: ['network'] }],
  additionalProperties: false,
} as const;

type MappingFile = FromSchema<typeof extAuthzMappingSchema>;

/** A piece of a template: literal text, or the value of a name. */
type Piece = { text: string } | { name: string };

/** A template as pieces; the names it reads are checked by the caller. */
function templateOf(template: string): Piece[] {
  const pieces: Piece[] = [];
  for (const [index, part] of template.split(/\{([^{}]*)\}/).entries()) {
    if (index % 2 === 0) {
      if (part.includes('{') || part.includes('}')) throw new Error(`'${template}' has an unmatched brace`);
      if (part !== '') pieces.push({ text: part });
    } else {
      if (!new RegExp(NAME).test(part)) throw new Error(`'{${part}}' in '${template}' is not a name`);
      pieces.push({ name: part });
    }
  }
  return pieces;
}

/**
 * Each key set's template of its principals' uris: its own under `key_sets`, else `uri`, with
 * `{key_set}` filled in by the set's name (never by a claim). A token of one key set must never become a
 * principal of another's, so where there are two key sets or more, the text of each set's template
 * before its first claim may not begin another's: their uris then differ wherever their claims agree.
 */
function principalTemplates(principal: NonNullable<MappingFile['principal']>, keySets: readonly string[] | undefined): Map<string, Piece[]> {
  const templates = new Map<string, Piece[]>();
  const named = principal.key_sets ?? {};
  if (principal.uri === undefined && Object.keys(named).length === 0) return templates;
  if (keySets === undefined) throw new Error("the principal's uri is read from token claims, and no tokens are verified (give --tokens)");
  const unknown = Object.keys(named).filter((name) => !keySets.includes(name));
  if (unknown.length > 0) throw new Error(`principal.key_sets names key sets that --tokens does not have: ${unknown.join(', ')}`);
  for (const keySet of keySets) {
    const template = Object.hasOwn(named, keySet) ? named[keySet]! : principal.uri;
    if (template === undefined) continue;
    templates.set(keySet, templateOf(template).map((piece) => ('name' in piece && piece.name === 'key_set' ? { text: keySet } : piece)));
  }
  const prefixes = [...templates].map(([keySet, pieces]) => ({ keySet, prefix: literalPrefix(pieces) }));
  for (const one of prefixes) {
    for (const other of prefixes) {
      if (one === other || !other.prefix.startsWith(one.prefix)) continue;
      throw new Error(
        `the principals of key sets '${one.keySet}' and '${other.keySet}' share a name space ('${one.prefix}…' and '${other.prefix}…'): a token of one could name a principal of the other. ` +
          `Read {key_set} in principal.uri ("user:{key_set}:{sub}"), or give each set a template of its own under principal.key_sets ("partner:{sub}")`,
      );
    }
  }
  return templates;
}

/** The text a template's uris all begin with: its pieces up to the first name. */
function literalPrefix(pieces: readonly Piece[]): string {
  let prefix = '';
  for (const piece of pieces) {
    if ('name' in piece) break;
    prefix += piece.text;
  }
  return prefix;
}

/** The template filled in from `values`; undefined when a name has no string or number value. */
function fill(pieces: readonly Piece[], values: Readonly<Record<string, unknown>>): string | undefined {
  let text = '';
  for (const piece of pieces) {
    if ('text' in piece) text += piece.text;
    else {
      const value = Object.hasOwn(values, piece.name) ? values[piece.name] : undefined;
      if (typeof value !== 'string' && typeof value !== 'number') return undefined;
      text += String(value);
    }
  }
  return text;
}

interface CompiledRoute {
  /** Literal segments, or null where a parameter (named in `parameters` at the same index) stands. */
  segments: (string | null)[];
  parameters: (string | null)[];
  methods: ReadonlySet<string> | undefined;
  resource: { type: string; idParameter: string } | { uri: Piece[] };
  actions: Readonly<Record<string, string>>;
  keySet: string | undefined;
}

/** An HTTP request as Envoy forwards it: the method, the original path (after the prefix), and the headers it was told to forward. */
export interface ForwardedRequest {
  method: string;
  path: string;
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /**
   * The client's address as Envoy reports it in a gRPC CheckRequest (`attributes.source.address`):
   * read as `client_address` in place of `x-forwarded-for`'s hops. The HTTP flavour has none.
   */
  sourceAddress?: string;
  /**
   * The route's `context_extensions`, as Envoy's configuration sets them per route or virtual host
   * (gRPC only): the check's context carries them as `extensions`, for policies to read per-route settings.
   */
  contextExtensions?: Readonly<Record<string, string>>;
}

/** A connection as Envoy's network filter reports it (a CheckRequest with no HTTP part): what it says, and nothing it did not. */
export interface Connection {
  source_principal?: string;
  source_address?: string;
  destination_principal?: string;
  destination_address?: string;
  destination_port?: number;
}

/** What a network section's templates may read. */
const CONNECTION_NAMES: readonly (keyof Connection)[] = ['source_principal', 'source_address', 'destination_principal', 'destination_address', 'destination_port'];

/** The check a connection maps to. */
export interface MappedConnection {
  kind: 'mapped';
  principalUri: string;
  resourceUri: string;
  action: string;
  context: Map<string, unknown>;
}

interface CompiledNetwork {
  principal: Piece[];
  resource: Piece[];
  action: string;
}

/** The check an HTTP request maps to, but its principal: the route's resource, the action, the context. */
export interface MappedRequest {
  kind: 'mapped';
  resource: { uri: string; attributes: Map<string, unknown> };
  action: string;
  context: Map<string, unknown>;
  /** The key set the route's tokens are verified by; undefined: the token's issuer's. */
  keySet: string | undefined;
}

const headerValue = (value: string | string[] | undefined) => (Array.isArray(value) ? value.join(', ') : value);

/**
 * The operator's mapping of HTTP requests to checks (`--ext-authz <file>`): routes of path templates
 * give the resource and the action; the token's claims (and perhaps forwarded headers) the
 * principal; forwarded headers the context. A request no route matches maps to nothing, and is denied.
 */
export class ExtAuthzMapping {
  private constructor(
    private readonly routes: CompiledRoute[],
    /** Each key set's template of its principals' uris, `{key_set}` filled in. */
    private readonly principalUris: ReadonlyMap<string, Piece[]>,
    private readonly principalHeaders: Readonly<Record<string, string>>,
    private readonly contextHeaders: Readonly<Record<string, string>>,
    /** Where the client address is read from x-forwarded-for: undefined, not read. */
    private readonly clientAddress: { trustedHops: number } | undefined,
    readonly upstreamPrincipalHeader: string | undefined,
    readonly denyReasonToClient: boolean,
    private readonly network: CompiledNetwork | undefined,
  ) {}

  /** The mapping in the file at `path`, over the key sets `--tokens` has (undefined: no `--tokens`). */
  static read(path: string, keySets: readonly string[] | undefined): ExtAuthzMapping {
    let document: unknown;
    try {
      document = readDocument(path);
    } catch (error) {
      if (error instanceof DocumentError) throw new ConfigError(`--ext-authz ${error.message}`);
      throw error;
    }
    return ExtAuthzMapping.of(document, `--ext-authz ${path}`, keySets);
  }

  /** The mapping a parsed document says, over the key sets `--tokens` has (undefined: no `--tokens`); `label` names it in a ConfigError. */
  static of(document: unknown, label: string, keySets: readonly string[] | undefined): ExtAuthzMapping {
    const validate = createAjv(false, true).compile(extAuthzMappingSchema);
    if (!validate(document)) throw new ConfigError(`${label}: ${(validate.errors ?? []).map((error) => `${error.instancePath || '(the file)'} ${error.message}`).join('; ')}`);
    const file = document as MappingFile;
    try {
      if (Object.values(file.principal?.headers ?? {}).includes(CLAIMS_ATTRIBUTE)) throw new Error(`principal.headers: the attribute '${CLAIMS_ATTRIBUTE}' is reserved for a token's verified claims; give the header another attribute name`);
      if (file.principal?.headers?.[FORWARDED_FOR] !== undefined || file.context?.headers?.[FORWARDED_FOR] !== undefined) {
        throw new Error(`${FORWARDED_FOR} is written by the client, in part: read the address Envoy vouches for with client_address ({"client_address": {"trusted_hops": 0}})`);
      }
      const defaults = { ...DEFAULT_ACTIONS, ...file.actions };
      const routes = (file.routes ?? []).map((route, index) => compileRoute(route, defaults, index));
      const unknown = [...new Set(routes.flatMap((route) => (route.keySet === undefined || keySets?.includes(route.keySet) ? [] : [route.keySet])))];
      if (unknown.length > 0) throw new Error(`routes name key sets that --tokens does not have: ${unknown.join(', ')}`);
      const principalUris = principalTemplates(file.principal ?? {}, keySets);
      return new ExtAuthzMapping(
        routes,
        principalUris,
        file.principal?.headers ?? {},
        file.context?.headers ?? {},
        file.client_address && { trustedHops: file.client_address.trusted_hops ?? 0 },
        file.upstream_headers?.principal_uri,
        file.deny_reason_to_client ?? false,
        file.network && compileNetwork(file.network),
      );
    } catch (error) {
      throw new ConfigError(`${label}: ${(error as Error).message}`);
    }
  }

  /** The principal's uri from its verified token's claims and key set (undefined without a template for its key set, or a claim the template reads). */
  readonly principalUriOf = (claims: Readonly<Record<string, unknown>>, keySet: string): string | undefined => {
    const template = this.principalUris.get(keySet);
    return template === undefined ? undefined : fill(template, claims);
  };

  /**
   * The check of a connection Envoy's network filter asks about, or why it maps to nothing (the
   * mapping has no network section, or a template reads what the connection does not carry).
   */
  mapConnection(connection: Connection): MappedConnection | Unmapped {
    const { network } = this;
    if (network === undefined) {
      return { kind: 'unmapped', why: "The CheckRequest has no HTTP request (attributes.request.http), and the ext-authz mapping has no 'network' section for Envoy's network filter" };
    }
    const values = Object.fromEntries(Object.entries(connection).filter(([, value]) => value !== undefined && value !== ''));
    const principalUri = fill(network.principal, values);
    const resourceUri = fill(network.resource, values);
    if (principalUri === undefined || resourceUri === undefined) {
      const missing = [...network.principal, ...network.resource].find((piece) => 'name' in piece && !Object.hasOwn(values, piece.name)) as { name: string };
      return { kind: 'unmapped', why: `The connection carries no ${missing.name}, which the mapping's network section reads` };
    }
    const context = new Map<string, unknown>();
    if (values.source_address !== undefined) context.set(CLIENT_ADDRESS, values.source_address);
    for (const name of ['destination_address', 'destination_port'] as const) if (values[name] !== undefined) context.set(name, values[name]);
    return { kind: 'mapped', principalUri, resourceUri, action: network.action, context };
  }

  /** The principal attributes the forwarded headers give. */
  principalAttributes(headers: ForwardedRequest['headers']): Map<string, unknown> {
    return attributesFromHeaders(this.principalHeaders, headers);
  }

  /**
   * The resource, action and context of `request`, or why it maps to nothing (no route matches it,
   * or it carries no client address the proxies vouch for): it is then denied.
   */
  map(request: ForwardedRequest): MappedRequest | Unmapped {
    const segments = pathSegments(request.path);
    if (segments === undefined) return unmatchedBy(request);
    for (const route of this.routes) {
      if (route.methods !== undefined && !route.methods.has(request.method)) continue;
      const parameters = matchSegments(route, segments);
      if (parameters === undefined) continue;
      const action = route.actions[request.method] ?? request.method.toLowerCase();
      const uri = 'type' in route.resource ? `${route.resource.type}:${parameters[route.resource.idParameter]}` : fill(route.resource.uri, parameters);
      if (uri === undefined) continue;
      const attributes = new Map<string, unknown>(Object.entries(parameters));
      if ('type' in route.resource) attributes.set('type', route.resource.type);
      const context = attributesFromHeaders(this.contextHeaders, request.headers);
      context.set('method', request.method);
      // The path as the route matched it: decoded, without the query (which no policy reads).
      context.set('path', `/${segments.join('/')}`);
      if (request.contextExtensions !== undefined) {
        const refused = extensionsRefusal(request.contextExtensions);
        if (refused !== undefined) return { kind: 'unmapped', why: refused };
        context.set(CONTEXT_EXTENSIONS, { ...request.contextExtensions });
      }
      if (this.clientAddress !== undefined) {
        const address = request.sourceAddress ?? vouchedAddress(headerValue(request.headers[FORWARDED_FOR]), this.clientAddress.trustedHops);
        if (address === undefined) return { kind: 'unmapped', why: `The request carries no client address that the proxies vouch for (${FORWARDED_FOR} has fewer than ${this.clientAddress.trustedHops + 1} hops)` };
        context.set(CLIENT_ADDRESS, address);
      }
      return { kind: 'mapped', resource: { uri, attributes }, action, context, keySet: route.keySet };
    }
    return unmatchedBy(request);
  }
}

function unmatchedBy(request: ForwardedRequest): Unmapped {
  return { kind: 'unmapped', why: `No route of the ext-authz mapping matches ${request.method} ${request.path.split('?')[0]}` };
}

/** A network section's templates, each reading only what a connection carries. */
function compileNetwork(network: NonNullable<MappingFile['network']>): CompiledNetwork {
  const compiled = (field: 'principal_uri' | 'resource_uri') => {
    const pieces = templateOf(network[field]);
    const unknown = pieces.find((piece) => 'name' in piece && !(CONNECTION_NAMES as readonly string[]).includes(piece.name));
    if (unknown !== undefined) throw new Error(`network.${field} reads '{${(unknown as { name: string }).name}}': a connection gives only ${CONNECTION_NAMES.map((name) => `{${name}}`).join(', ')}`);
    return pieces;
  };
  return { principal: compiled('principal_uri'), resource: compiled('resource_uri'), action: network.action ?? 'connect' };
}

/** The context attribute that carries a route's `context_extensions`. */
const CONTEXT_EXTENSIONS = 'extensions';
/** The most `context_extensions` a request may carry, and the longest key and value: set by the operator's Envoy configuration, never long. */
const EXTENSION_LIMITS = { entries: 32, keyLength: 128, valueLength: 1024 };

/** Why a request's `context_extensions` cannot be read (too many, or too long), or undefined when they can. */
function extensionsRefusal(extensions: Readonly<Record<string, string>>): string | undefined {
  const entries = Object.entries(extensions);
  if (entries.length > EXTENSION_LIMITS.entries) return `The request carries ${entries.length} context_extensions; at most ${EXTENSION_LIMITS.entries} are read`;
  const long = entries.find(([key, value]) => key.length > EXTENSION_LIMITS.keyLength || typeof value !== 'string' || value.length > EXTENSION_LIMITS.valueLength);
  if (long !== undefined) return `The context_extension '${long[0].slice(0, 64)}' is longer than ${EXTENSION_LIMITS.keyLength} characters for a key, or ${EXTENSION_LIMITS.valueLength} for a value`;
  return undefined;
}

/** A request that maps to no check, and why. */
export interface Unmapped {
  kind: 'unmapped';
  why: string;
}

/**
 * The hop of an `x-forwarded-for` chain that the last of `trustedHops` + 1 proxies appended (each
 * appends the address it received the connection from): the rightmost with none trusted before Envoy.
 * Undefined when the chain is shorter.
 */
function vouchedAddress(chain: string | undefined, trustedHops: number): string | undefined {
  if (chain === undefined) return undefined;
  const hops = chain.split(',').map((hop) => hop.trim());
  const hop = hops[hops.length - 1 - trustedHops];
  return hop === undefined || hop === '' ? undefined : hop;
}

function attributesFromHeaders(table: Readonly<Record<string, string>>, headers: ForwardedRequest['headers']): Map<string, unknown> {
  const attributes = new Map<string, unknown>();
  for (const [header, attribute] of Object.entries(table)) {
    const value = headerValue(headers[header]);
    if (value !== undefined) attributes.set(attribute, value);
  }
  return attributes;
}

function compileRoute(route: NonNullable<MappingFile['routes']>[number], defaults: Readonly<Record<string, string>>, index: number): CompiledRoute {
  const where = `route ${index} (${route.path})`;
  const parts = route.path.split('/').slice(1);
  const segments: (string | null)[] = [];
  const parameters: (string | null)[] = [];
  for (const part of parts) {
    const parameter = /^\{([^{}]*)\}$/.exec(part);
    if (parameter !== null) {
      if (!new RegExp(NAME).test(parameter[1]!)) throw new Error(`${where}: '{${parameter[1]}}' is not a parameter name`);
      if (parameters.includes(parameter[1]!)) throw new Error(`${where}: parameter '${parameter[1]}' appears twice`);
      segments.push(null);
      parameters.push(parameter[1]!);
    } else {
      if (part.includes('{') || part.includes('}')) throw new Error(`${where}: a parameter must be a whole segment`);
      segments.push(part);
      parameters.push(null);
    }
  }
  const names = parameters.filter((name): name is string => name !== null);
  let resource: CompiledRoute['resource'];
  if (route.resource_type !== undefined) {
    const idParameter = names.includes('id') ? 'id' : names.at(-1);
    if (idParameter === undefined) throw new Error(`${where}: resource_type needs a parameter for the id; use resource_uri for a fixed resource`);
    resource = { type: route.resource_type, idParameter };
  } else {
    const uri = templateOf(route.resource_uri!);
    const unknown = uri.flatMap((piece) => ('name' in piece && !names.includes(piece.name) ? [piece.name] : []));
    if (unknown.length > 0) throw new Error(`${where}: resource_uri reads ${unknown.map((name) => `{${name}}`).join(', ')}, which the path does not have`);
    resource = { uri };
  }
  return { segments, parameters, methods: route.methods && new Set(route.methods), resource, actions: { ...defaults, ...route.actions }, keySet: route.key_set };
}

/** The decoded segments of a path (its query left out), or undefined for one that cannot name a resource plainly (`..`, `.`, a bad escape). */
function pathSegments(path: string): string[] | undefined {
  const query = path.indexOf('?');
  const parts = (query === -1 ? path : path.slice(0, query)).split('/').slice(1);
  const segments: string[] = [];
  for (const part of parts) {
    let segment = part;
    if (part.includes('%')) {
      try {
        segment = decodeURIComponent(part);
      } catch {
        return undefined;
      }
    }
    if (segment === '.' || segment === '..' || segment.includes('/')) return undefined;
    segments.push(segment);
  }
  return segments;
}

function matchSegments(route: CompiledRoute, segments: readonly string[]): Record<string, string> | undefined {
  if (segments.length !== route.segments.length) return undefined;
  const parameters: Record<string, string> = Object.create(null) as Record<string, string>;
  for (let index = 0; index < segments.length; index++) {
    const literal = route.segments[index];
    const segment = segments[index]!;
    if (literal === null) {
      if (segment === '') return undefined;
      parameters[route.parameters[index]!] = segment;
    } else if (literal !== segment) return undefined;
  }
  return parameters;
}
