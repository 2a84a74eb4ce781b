import type { Decision, DecisionRequest } from '../engine/index.js';
import { readCheckRequest, type CheckInput } from '../requests/check-request.js';
import type { CheckRequest } from '../schemas/check.js';
import type { ItemViolations } from '../attribute-schemas/enforcement.js';

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
}

/** Attributes as a JSON object, keys in the order given (`__proto__` and the like as ordinary keys). */
function attributesJson(attributes: ReadonlyMap<string, unknown>): string {
  let members = '';
  for (const [key, value] of attributes) {
    members += `${members === '' ? '' : ','}${JSON.stringify(key)}:${JSON.stringify(value) ?? 'null'}`;
  }
  return `{${members}}`;
}

/** The action's attributes and the context, each when the check sent some: a check without them is logged as before. */
function actionAndContextJson({ actionAttributes, context }: CheckInput): string {
  const attributes = actionAttributes === undefined ? '' : `,"action_attributes":${attributesJson(actionAttributes)}`;
  return context === undefined ? attributes : `${attributes},"context":${attributesJson(context)}`;
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
export function decisionLine({ time, input, request, decision, revision, latencyMs, violations }: DecisionRecord): string {
  const sent = { principal: attributesJson(input.principal.attributes), resource: attributesJson(input.resource.attributes) };
  const principalResolved =
    request.principal.attributes === input.principal.attributes ? sent.principal : attributesJson(request.principal.attributes);
  const resourceResolved =
    request.resource.attributes === input.resource.attributes ? sent.resource : attributesJson(request.resource.attributes);
  return (
    `{"time":"${isoTime(time)}","revision":${revision},` +
    `"request":{"principal":${sideJson(input.principal.uri, sent.principal)},"resource":${sideJson(input.resource.uri, sent.resource)},` +
    `"action":${JSON.stringify(input.action)}${actionAndContextJson(input)}},` +
    `"resolved":{"principal":${principalResolved},"resource":${resourceResolved}},` +
    `"allowed":${decision.allowed},"reason":${JSON.stringify(decision.reason)},${violationsJson(violations)}"latency_ms":${Math.round(latencyMs * 1000) / 1000}}\n`
  );
}

/** The JSON lines of a bulk decided in a worker, one per item, in order. */
export function bulkDecisionLines({ time, body, decisions, revision, latencyMs, violations }: BulkDecisionRecord): string {
  const requests = JSON.parse(body) as CheckRequest[];
  const decided = JSON.parse(decisions) as Decision[];
  const violationsOf = new Map(violations.map(({ item, violations }) => [item, violations]));
  let lines = '';
  requests.forEach((request, index) => {
    const input = readCheckRequest(request, ['body', index]) as CheckInput;
    lines += decisionLine({ time, input, request: input, decision: decided[index]!, revision, latencyMs, violations: violationsOf.get(index) });
  });
  return lines;
}
