import type { Decision, DecisionRequest } from '../engine/index.js';
import { readCheckRequest, type CheckInput } from '../requests/check-request.js';
import type { CheckRequest } from '../schemas/check.js';
import type { ItemViolations } from '../attribute-schemas/enforcement.js';
import { maskedValue, type DecisionLogMask } from './mask.js';
import { jsonEqual } from '../engine/json-equal.js';
import type { ResolutionTally } from '../registry/resolve.js';

/** What decided one decision, as a span's attributes: names only (see decisionAttributes in src/tracing/request-trace.ts). */
export type DeciderAttributes = Record<string, string | boolean>;

/** Where a traced request's decisions (and how their checks were read) are told, for its span (see src/tracing/request-trace.ts). */
export interface DecisionTally extends ResolutionTally {
  /** Whether each decision is a span of its own (a bulk's `?trace_items=true`): a worker deciding the bulk then says what decided each. */
  readonly tracesItems: boolean;
  decided(decision: Decision): void;
  /** A bulk a worker decided: its counts and, when items are traced, what decided each, in order. */
  decidedInPool(allowed: number, denied: number, items?: readonly DeciderAttributes[]): void;
}

/** The HTTP request that asked for decisions: the id echoed to its caller (`X-Request-ID`), its own, unique id, and its trace when it is traced. */
export interface RequestOrigin {
  requestId: string;
  id: string;
  trace?: DecisionTally;
}

/** Which request a decision answered (its `X-Request-ID`), and the decision's own id: `<the request's unique id>/<the decision's index in it>`; and that request's trace. */
export interface DecisionOrigin {
  requestId: string;
  decisionId: string;
  trace?: DecisionTally;
}

/** The origin of the `index`th decision made for the request `origin`. */
export const decisionOrigin = (origin: RequestOrigin, index: number): DecisionOrigin =>
  origin.trace === undefined ? { requestId: origin.requestId, decisionId: `${origin.id}/${index}` } : { requestId: origin.requestId, decisionId: `${origin.id}/${index}`, trace: origin.trace };

/** An origin as the decision log keeps it: without the trace, which stays on this thread. */
export const loggedOrigin = <Origin extends RequestOrigin | DecisionOrigin>(origin: Origin | undefined): Origin | undefined => {
  if (origin?.trace === undefined) return origin;
  const { trace: _trace, ...logged } = origin;
  return logged as Origin;
};

/** One decision made on the front, as the decision log records it, before it is serialized. */
export interface DecisionRecord {
  /** Epoch milliseconds. */
  time: number;
  input: CheckInput;
  request: DecisionRequest;
  decision: Decision;
  revision: number;
  latencyMs: number;
  /** What the check broke of the attribute schemas (warn); none: undefined or empty. */
  violations?: readonly string[] | undefined;
  origin?: DecisionOrigin | undefined;
  /** The check was refused (400) for breaking the attribute schemas under `reject`: `decision` says why. */
  refused?: true;
}

/**
 * A bulk decided in a worker, kept as the texts the front already holds: serializing its lines is
 * left to the decision log's writer thread. Its items named no registered entity, so each was
 * decided on the attributes it was sent with.
 */
export interface BulkDecisionRecord {
  time: number;
  /** The bulk body as sent (already validated by the worker). */
  body: string;
  /** The decisions as JSON, in item order. */
  decisions: string;
  /** How many decisions (lines). */
  count: number;
  revision: number;
  /** The bulk's time shared evenly among its items. */
  latencyMs: number;
  /** What the items that broke the attribute schemas broke (warn). */
  violations: ItemViolations;
  origin?: RequestOrigin | undefined;
}

type MaskedPart = keyof DecisionLogMask;


/**
 * Writes JSON lines, masking what `mask` names; `masked` collects the paths it masked in the line
 * being written (`principal.ssn`), which the line then lists.
 */
class LineWriter {
  readonly masked = new Set<string>();

  constructor(private readonly mask: DecisionLogMask) {}

  /** Attributes of `part` as a JSON object, keys in the order given (`__proto__` and the like as ordinary keys). */
  attributes(part: MaskedPart, attributes: ReadonlyMap<string, unknown>): string {
    const masks = this.mask[part];
    let members = '';
    for (const [key, value] of attributes) {
      const method = masks !== undefined && Object.hasOwn(masks, key) ? masks[key] : undefined;
      if (method !== undefined) this.masked.add(`${part}.${key}`);
      members += `${members === '' ? '' : ','}${JSON.stringify(key)}:${method === undefined ? (JSON.stringify(value) ?? 'null') : JSON.stringify(maskedValue(value, method))}`;
    }
    return `{${members}}`;
  }

  /** The action's attributes and the context, each when the check sent some: a check without them is logged as before. */
  actionAndContext({ actionAttributes, context }: CheckInput): string {
    const attributes = actionAttributes === undefined ? '' : `,"action_attributes":${this.attributes('action', actionAttributes)}`;
    return context === undefined ? attributes : `${attributes},"context":${this.attributes('context', context)}`;
  }

  /** The masked paths, as a member followed by a comma; nothing when none was masked. */
  maskedJson(): string {
    return this.masked.size === 0 ? '' : `"masked":${JSON.stringify([...this.masked].sort())},`;
  }
}

const NO_MASK: DecisionLogMask = {};

/**
 * The supplied attributes of a side that gave way to registered ones of another value (admin
 * authentication on: see ResolveOptions.overruled), as `<side>.<key>`; none where the side was
 * decided on exactly what was sent, or named no uri.
 */
function overruledOn(side: 'principal' | 'resource', sent: CheckInput['principal'], resolved: DecisionRequest['principal'], into: string[]): void {
  if (sent.uri === undefined || sent.attributes === resolved.attributes) return;
  for (const [key, value] of sent.attributes) if (resolved.attributes.has(key) && !jsonEqual(resolved.attributes.get(key), value)) into.push(`${side}.${key}`);
}

const sideJson = (uri: string | undefined, attributes: string) =>
  uri === undefined ? `{"attributes":${attributes}}` : `{"uri":${JSON.stringify(uri)},"attributes":${attributes}}`;

/** What the check broke of the schemas, as a member followed by a comma; nothing when it broke none (its line is as before). */
const violationsJson = (violations: readonly string[] | undefined) =>
  violations === undefined || violations.length === 0 ? '' : `"schema_violations":${JSON.stringify(violations)},`;

/** Lines of one batch mostly share their millisecond: its ISO text is made once. */
let lastTime = Number.NaN;
let lastIsoTime = '';
function isoTime(time: number): string {
  if (time !== lastTime) {
    lastTime = time;
    lastIsoTime = new Date(time).toISOString();
  }
  return lastIsoTime;
}

/**
 * The JSON line for one decision: the check as sent (with the action's attributes and the context
 * when it has some), the attributes it was decided on, the outcome.
 * Written out by hand rather than through intermediate objects: this runs once per decision, and a
 * side decided on exactly the attributes it was sent with (no registry) is serialized once.
 */
export function decisionLine({ time, input, request, decision, revision, latencyMs, violations, origin, refused }: DecisionRecord, mask = NO_MASK): string {
  const write = new LineWriter(mask);
  const sent = { principal: write.attributes('principal', input.principal.attributes), resource: write.attributes('resource', input.resource.attributes) };
  const principalResolved =
    request.principal.attributes === input.principal.attributes ? sent.principal : write.attributes('principal', request.principal.attributes);
  const resourceResolved =
    request.resource.attributes === input.resource.attributes ? sent.resource : write.attributes('resource', request.resource.attributes);
  const ids = origin === undefined ? '' : `"request_id":${JSON.stringify(origin.requestId)},"decision_id":${JSON.stringify(origin.decisionId)},`;
  const overruled: string[] = [];
  overruledOn('principal', input.principal, request.principal, overruled);
  overruledOn('resource', input.resource, request.resource, overruled);
  const actionAndContext = write.actionAndContext(input);
  return (
    `{"time":"${isoTime(time)}",${ids}"revision":${revision},` +
    `"request":{"principal":${sideJson(input.principal.uri, sent.principal)},"resource":${sideJson(input.resource.uri, sent.resource)},` +
    `"action":${JSON.stringify(input.action)}${actionAndContext}},` +
    `"resolved":{"principal":${principalResolved},"resource":${resourceResolved}},${write.maskedJson()}${overruled.length === 0 ? '' : `"overruled":${JSON.stringify(overruled)},`}` +
    `${refused ? '"refused":true,' : ''}"allowed":${decision.allowed},"reason":${JSON.stringify(decision.reason)},${violationsJson(violations)}"latency_ms":${Math.round(latencyMs * 1000) / 1000}}\n`
  );
}

/** The JSON lines of a bulk decided in a worker, one per item, in order. */
export function bulkDecisionLines({ time, body, decisions, revision, latencyMs, violations, origin }: BulkDecisionRecord, mask = NO_MASK): string {
  const requests = JSON.parse(body) as CheckRequest[];
  const decided = JSON.parse(decisions) as Decision[];
  const violationsOf = new Map(violations.map(({ item, violations }) => [item, violations]));
  let lines = '';
  requests.forEach((request, index) => {
    const input = readCheckRequest(request, ['body', index]) as CheckInput;
    const itemOrigin = origin && decisionOrigin(origin, index);
    lines += decisionLine({ time, input, request: input, decision: decided[index]!, revision, latencyMs, violations: violationsOf.get(index), origin: itemOrigin }, mask);
  });
  return lines;
}
